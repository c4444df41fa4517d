"""An independent reading of data windows, event time and output rate limiting, in plain
Python over lists of dicts: the oracle of ``tests/semantics/test_window_oracle.py``.

Written from docs/language.md (Windows, Event time, Output rows), docs/esper.md (Windows,
Output rate limiting) and docs/semantics-event-time.md (the watermark, timers, late and
waiting events), and from nothing in ``cep``: it imports no cep module, keeps no arrays,
and computes every window anew from the key's whole history at each trigger, so a bug in
cep's incremental windows, timer index, columnar rate state or watermark clock cannot be
shared with it.

An event is a dict with ``seq``, ``ts`` (microseconds), ``k`` and the fields a rule
reads; a rule is a :class:`Rule`. Output rows are dicts with ``key``, ``seq``, ``ts`` and
the rule's columns, as ``cep.engine.output.output_records`` gives them (``ts`` as
microseconds here; the test converts)."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: the seq of what happens at the end of a bounded input whose events are all in the
#: first segment: ``1 << 36``, the start of the next segment
END = 1 << 36


@dataclass(frozen=True)
class Rule:
    """``SELECT v, <aggregates> FROM S(<filter>)#groupwin(k)#<window> [WHERE <where>]
    [HAVING count(*) >= having] [OUTPUT ...]``.

    ``window``: (``"length"``, n), (``"time"``, T), (``"length_batch"``, n),
    (``"time_batch"``, T) or (``"unique"``, field). ``stream_filter`` and ``where``:
    ``kind`` is not this value (None: no filter). ``output``: None, or (mode, n, unit)
    with mode ALL/FIRST/LAST/SNAPSHOT and unit ``"events"`` or ``"us"``."""

    window: tuple
    keyed: bool = True
    stream_filter: int | None = None
    where: int | None = None
    having: int | None = None
    output: tuple | None = None

    def text(self) -> str:
        kind, arg = self.window
        if kind in ("time", "time_batch"):
            arg = f"{arg // 1000} msec"
        window = f"#{kind}({arg})"
        stream = "S" if self.stream_filter is None else f"S(kind != {self.stream_filter})"
        group = "#groupwin(k)" if self.keyed else ""
        text = (f"SELECT v, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi, "
                f"avg(v) AS mean FROM {stream}{group}{window}")
        if self.where is not None:
            text += f" WHERE kind != {self.where}"
        if self.having is not None:
            text += f" HAVING count(*) >= {self.having}"
        if self.output is not None:
            mode, every, unit = self.output
            text += (f" OUTPUT {mode} EVERY {every} EVENTS" if unit == "events"
                     else f" OUTPUT {mode} EVERY {every // 1000} msec")
        return text


def watermarks(events: list[dict], lateness: int) -> list[float]:
    """The watermark after each input event (in seq order): the largest timestamp so
    far minus the lateness."""
    out, high = [], -math.inf
    for e in events:
        high = max(high, e["ts"])
        out.append(high - lateness)
    return out


def first_reaching(events: list[dict], marks: list[float], deadline: float,
                   start: int = 0) -> int:
    """The seq of the first input event (from index ``start``) whose watermark reaches
    ``deadline``; ``END`` when none does (the end of the input lets all time pass)."""
    for i in range(start, len(events)):
        if marks[i] >= deadline:
            return events[i]["seq"]
    return END


def processed(events: list[dict], lateness: int) -> list[dict]:
    """The input events in the order rules see them, each with ``at`` (the seq of the
    input event at which it is processed) and ``eff`` (its effective time): a late
    event (below the watermark just before it) at once, at the watermark; any other
    once the watermark reaches its timestamp, with the others released then in
    (timestamp, seq) order."""
    marks = watermarks(events, lateness)
    out = []
    for i, e in enumerate(events):
        before = marks[i - 1] if i else -math.inf
        if e["ts"] < before:
            out.append((i, before, e["seq"], {**e, "at": e["seq"], "eff": before}))
            continue
        j = next((j for j in range(i, len(events)) if marks[j] >= e["ts"]), len(events))
        at = events[j]["seq"] if j < len(events) else END
        out.append((j, e["ts"], e["seq"], {**e, "at": at, "eff": e["ts"]}))
    return [row for *_, row in sorted(out, key=lambda x: x[:3])]


def _aggregates(rows: list[dict], last: dict) -> dict:
    values = [r["v"] for r in rows]
    n = len(values)
    return {"v": last["v"], "n": n, "s": sum(values) if n else None,
            "lo": min(values) if n else None, "hi": max(values) if n else None,
            "mean": sum(values) / n if n else None}


def window_rows(rule: Rule, events: list[dict], lateness: int) -> tuple[list[dict], dict]:
    """The rule's result rows before any OUTPUT clause, and per key the events that
    reached the rule, in processing order: every event of the key on the rule's
    stream, whether or not the stream filter passes it (docs/esper.md: "its first event
    reaching the rule in it (with or without a result)"; cep's reading, which Esper's
    time-driven OUTPUT, firing at every interval whatever arrived, is closer to than the
    reading that a filtered event never reaches the rule). A row an
    event triggers has that event's own timestamp as ``ts`` (a late event's too: its
    effective time places it in windows, "the event's time" names the row), a
    ``#time_batch`` row its bucket's end. WHERE picks the triggers of a sliding window
    and the rows every window aggregates; a batch window's row is the batch's, made
    whether or not its last event (which gives the row's fields) passes WHERE."""
    order = processed(events, lateness)
    marks = watermarks(events, lateness)
    kind, arg = rule.window
    by_key: dict = {}
    reached: dict = {}
    for e in order:
        reached.setdefault(e["k"] if rule.keyed else None, []).append(e)
        if rule.stream_filter is not None and e["kind"] == rule.stream_filter:
            continue
        by_key.setdefault(e["k"] if rule.keyed else None, []).append(e)

    def passes(r: dict) -> bool:
        return rule.where is None or r["kind"] != rule.where

    def having(row: dict) -> bool:
        return rule.having is None or row["n"] >= rule.having

    out = []
    for key, seen in by_key.items():
        if kind in ("length", "time", "unique"):
            for i, trigger in enumerate(seen):
                if not passes(trigger):
                    continue
                upto = seen[:i + 1]
                if kind == "length":
                    window = upto[-arg:]
                elif kind == "time":
                    window = [r for r in upto if trigger["eff"] - arg < r["eff"]]
                else:  # the newest event of each distinct value (NULL is a value)
                    newest = {}
                    for r in upto:
                        newest.pop(r[arg], None)
                        newest[r[arg]] = r
                    window = list(newest.values())
                row = _aggregates([r for r in window if passes(r)], trigger)
                if having(row):
                    out.append({"key": key, "seq": trigger["at"], "ts": trigger["ts"],
                                "_eff": trigger["eff"], **row})
        elif kind == "length_batch":
            for i in range(arg - 1, len(seen), arg):
                batch, trigger = seen[i - arg + 1:i + 1], seen[i]
                row = _aggregates([r for r in batch if passes(r)], trigger)
                if having(row):  # a batch's row, whether or not its last event passes
                    out.append({"key": key, "seq": trigger["at"], "ts": trigger["ts"],
                                "_eff": trigger["eff"], **row})
        else:  # time_batch: buckets aligned to multiples of T, emitted at their end
            buckets: dict = {}
            for r in seen:
                buckets.setdefault(r["eff"] // arg, []).append(r)
            for b, rows in buckets.items():
                end = (b + 1) * arg
                row = _aggregates([r for r in rows if passes(r)], rows[-1])
                if having(row):
                    out.append({"key": key, "seq": first_reaching(events, marks, end),
                                "ts": end, "_eff": end, **row})
    return out, reached


def rate_limited(rule: Rule, rows: list[dict], reached: dict, events: list[dict],
                 lateness: int) -> list[dict]:
    """The rows an OUTPUT clause lets out of ``rows`` (per key, in their order), from
    docs/esper.md: EVERY n EVENTS counts the key's result rows (ALL: each n together at
    the n-th; FIRST: the 1st, (n+1)-th, ... at once; LAST and SNAPSHOT: the n-th);
    EVERY T opens an interval [bT, (b+1)T) with the key's first event reaching the rule
    in it and closes it when the watermark reaches its end (ALL: its rows, LAST: its
    last row, SNAPSHOT: the key's latest row with the interval's end as ts, all with the
    closing event's seq; FIRST: each interval's first row at once). A released row
    keeps its own ts and values and takes the seq of the event it is released at."""
    mode, every, unit = rule.output
    per_key: dict = {}
    for r in rows:
        per_key.setdefault(r["key"], []).append(r)
    out = []
    if unit == "events":
        for mine in per_key.values():
            for i, r in enumerate(mine):
                if mode == "FIRST" and i % every == 0:
                    out.append(r)
                elif i % every == every - 1:
                    if mode == "ALL":
                        out += [{**p, "seq": r["seq"]} for p in mine[i - every + 1:i + 1]]
                    elif mode in ("LAST", "SNAPSHOT"):
                        out.append(r)
        return out
    marks = watermarks(events, lateness)
    for key, seen in reached.items():
        mine = per_key.get(key, [])
        opened = sorted({e["eff"] // every for e in seen})
        latest = None
        for b in opened:
            end = (b + 1) * every
            inside = [r for r in mine if r["_eff"] // every == b]
            if mode == "FIRST":
                out += inside[:1]
                continue
            if inside:
                latest = inside[-1]
            at = first_reaching(events, marks, end)
            if mode == "ALL":
                out += [{**r, "seq": at} for r in inside]
            elif mode == "LAST":
                out += [{**r, "seq": at} for r in inside[-1:]]
            elif latest is not None:  # SNAPSHOT
                out.append({**latest, "seq": at, "ts": end})
    return out


def output(rule: Rule, events: list[dict], lateness: int = 0) -> list[dict]:
    """Every output row of ``rule`` over ``events`` (in seq order), without ``_eff``."""
    rows, reached = window_rows(rule, events, lateness)
    if rule.output is not None:
        rows = rate_limited(rule, rows, reached, events, lateness)
    return [{k: v for k, v in r.items() if k != "_eff"} for r in rows]
