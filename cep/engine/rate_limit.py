"""Esper's output rate limiting (``OUTPUT [ALL|FIRST|LAST|SNAPSHOT] EVERY ...``), per key.

A rule's result rows (what it would output without the clause) are cut into intervals
per key, and only some rows leave, when the interval allows:

* ``EVERY n EVENTS`` counts the key's result rows: an interval is n rows. ALL releases
  the n rows together at the n-th; FIRST releases the 1st, (n+1)-th, ... at once; LAST
  and SNAPSHOT release the n-th.
* ``EVERY T`` counts event time: intervals are multiples of T since the epoch, and a
  key's interval opens with its first event reaching the rule in it (any of the rule's
  streams, with or without a result). It closes when the watermark reaches its end (a
  timer, also for a key that gets no more events). ALL releases the interval's rows
  then, LAST its last row; FIRST releases each interval's first row at once and drops
  the rest; SNAPSHOT releases, at each close, the key's latest result row so far (even
  if the interval had none), stamped with the interval's end as its time. An interval
  in which the key had no event neither opens nor closes.

A released row carries the seq of the input event at which it is released (the n-th
row's, or the first whose watermark reaches the interval's end), so outputs stay in the
reference order in every runtime, and keeps its own ts and values. A limited rule thus
outputs (re-stamped) rows of the unlimited rule; ALL may output several rows at one
event. What is pending is per-key state made of plain values (ints, strings, lists)
that moves with the key; a key with no open interval and nothing pending holds nothing,
except that SNAPSHOT keeps the key's latest row for the key's next interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.output import TIMER, empty_output
from cep.engine.table import KEY, RELEASE, TIME, Table, factorize, object_array, take
from cep.engine.timers import TimerIndex
from grammar import ir

# a result row in state: [seq, ts, ts is null, values (JSON text), at, origin] (seq, at
# and origin: where it sits in the reference order, see ``output.Stamps``)
Row = list
ROW_COLUMNS = ("seq", "ts", "ts__null", "values", "at", "origin")


class RateLimited:
    """Wraps a rule's operator (same interface) and limits its output per key."""

    def __init__(self, inner: object, rule_name: str, limit: ir.OutputLimit,
                 clock_tables: Callable[[tuple], Iterable[Table]]) -> None:
        self.inner = inner
        self.rule_name = rule_name
        self.limit = limit
        self.clock_tables = clock_tables
        self.states: dict[object, dict] = {}
        self.timers = TimerIndex()  # the end of each key's open interval (EVERY T)

    # ---- processing

    def process(self, *args: object) -> Table:
        """The inner operator's batch (its arguments, the watermark last), limited."""
        clock: Watermark = args[-1]  # type: ignore[assignment]
        out = self.inner.process(*args)  # type: ignore[attr-defined]
        if self.limit.events is not None and self.limit.kind != "all":
            return self._every_nth(out)
        rows = _rows_by_key(out)
        if self.limit.events is not None:
            released = [r for key, krows in rows.items() for r in self._count(key, krows)]
        else:
            ticks = self._opening_ticks(args[:-1])
            due = self.timers.due(clock.end)
            released = [r for key in dict.fromkeys([*rows, *ticks, *due])
                        for r in self._time(key, rows.get(key, []), ticks.get(key, []),
                                            clock)]
        return self._table(released)

    def due_keys(self, until: int) -> list:
        inner = self.inner.due_keys(until)  # type: ignore[attr-defined]
        return list(dict.fromkeys([*inner, *self.timers.due(until)]))

    def _state(self, key: object) -> dict:
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = {"count": 0, "bucket": None, "first_bucket": None,
                                        "pending": [], "latest": None}
        return state

    def _every_nth(self, out: Table) -> Table:
        """FIRST/LAST/SNAPSHOT EVERY n EVENTS with array operations: the rows whose
        position among their key's results (counted on from the key's state) is 1 (FIRST)
        or 0 (LAST, SNAPSHOT) modulo n."""
        m = len(out["seq"]) if out else 0
        if m == 0:
            return empty_output()
        n = self.limit.events
        codes = factorize(out["key"])
        order = np.lexsort((np.arange(m), out["origin"], out["at"], out["seq"], codes))
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        sizes = np.diff(np.append(starts, m))
        keys = out["key"][order][starts].tolist()
        counted = np.array([self._state(k)["count"] for k in keys], dtype=np.int64)
        position = np.repeat(counted, sizes) + np.arange(m) - np.repeat(starts, sizes) + 1
        hit = position % n == (1 % n if self.limit.kind == "first" else 0)  # type: ignore[operator]
        for key, total in zip(keys, ((counted + sizes) % n).tolist(), strict=True):  # type: ignore[operator]
            self.states[key]["count"] = total
            self._settle(key, self.states[key])
        return take(out, np.sort(order[hit]))

    def _count(self, key: object, rows: list[Row]) -> list[tuple[object, Row]]:
        """ALL EVERY n EVENTS: each block of n rows leaves at its n-th row."""
        state, n = self._state(key), self.limit.events
        out = []
        for row in rows:
            state["count"] = state["count"] % n + 1  # type: ignore[operator]
            state["pending"].append(row)
            if state["count"] == n:
                out.extend((key, _at(r, row[0], row[4], row[5])) for r in state["pending"])
                state["pending"] = []
        self._settle(key, state)
        return out

    def _time(self, key: object, rows: list[Row], ticks: list[int], clock: Watermark
              ) -> list[tuple[object, Row]]:
        """EVERY T for one key: its interval-opening ticks (effective times of its events)
        and result rows in processing order (a tick before the rows its own event made),
        the open interval closing at its end; then the key's next deadline."""
        state, kind = self._state(key), self.limit.kind
        items = sorted([(2 * t + 1, 0, i) for i, t in enumerate(ticks)]
                       + [(r[4], 1, i) for i, r in enumerate(rows)])
        out: list[tuple[object, Row]] = []
        for at, is_row, i in items:
            self._close(key, state, at // 2, clock, out)
            if state["bucket"] is None:
                state["bucket"] = (at // 2) // self.limit.period_us
            if not is_row:
                continue
            row = rows[i]
            if kind == "all":
                state["pending"].append(row)
            elif kind == "first":
                if state["first_bucket"] != state["bucket"]:
                    state["first_bucket"] = state["bucket"]
                    out.append((key, row))
            elif kind == "last":
                state["pending"] = [row]
            else:
                state["latest"] = row
        self._close(key, state, clock.end, clock, out)
        self._settle(key, state)
        return out

    def _close(self, key: object, state: dict, now: int, clock: Watermark,
               out: list[tuple[object, Row]]) -> None:
        """Close the key's open interval if event time ``now`` has reached its end:
        release what the kind releases, at the first input event whose watermark
        reaches the end."""
        if state["bucket"] is None:
            return
        end = (state["bucket"] + 1) * self.limit.period_us
        if end > now:
            return
        seq = clock.reach_one(end)
        if self.limit.kind == "snapshot":
            if state["latest"] is not None:
                out.append((key, [seq, end, False, state["latest"][3], 2 * end, TIMER]))
        else:
            out.extend((key, _at(r, seq, 2 * end, TIMER)) for r in state["pending"])
        state["pending"] = []
        state["bucket"] = None

    def _settle(self, key: object, state: dict) -> None:
        """Keep the key's output state and the end of its open interval, or let the key
        go when it has nothing open, pending, counted or to repeat."""
        bucket, n = state["bucket"], self.limit.events
        counting = n is not None and state["count"] % n
        if (bucket is None and not state["pending"] and state["latest"] is None
                and not counting):
            self.states.pop(key, None)
            self.timers.set(key, None)
        else:
            self.timers.set(key, None if bucket is None
                            else (bucket + 1) * self.limit.period_us)

    def _opening_ticks(self, args: tuple) -> dict[object, list[int]]:
        """Per key, the effective times of its events that may open an interval: its
        first event of the batch and each that moves it into a later interval, found
        with array operations over all of the batch's events (an interval closes before
        a later one opens, so no other event can open one)."""
        parts = [(t[KEY], t[RELEASE], t[TIME]) for t in self.clock_tables(args)
                 if t and len(t[KEY])]
        if not parts:
            return {}
        keys = object_array([k for p in parts for k in p[0].tolist()])
        release = np.concatenate([p[1] for p in parts])
        time = np.concatenate([p[2] for p in parts])
        codes = factorize(keys)
        order = np.lexsort((release, time, codes))
        codes, time, keys = codes[order], time[order], keys[order]
        bucket = time // self.limit.period_us
        first = np.r_[True, codes[1:] != codes[:-1]]
        later = np.r_[False, bucket[1:] > bucket[:-1]] & ~first
        out: dict[object, list[int]] = {}
        for i in np.flatnonzero(first | later).tolist():
            out.setdefault(keys[i], []).append(int(time[i]))
        return out

    def _table(self, released: list[tuple[object, Row]]) -> Table:
        if not released:
            return empty_output()
        return {
            "rule": object_array([self.rule_name] * len(released)),
            "key": object_array([k for k, _ in released]),
            "seq": np.array([r[0] for _, r in released], dtype=np.int64),
            "ts": np.array([r[1] for _, r in released], dtype=np.int64),
            "ts__null": np.array([r[2] for _, r in released], dtype=bool),
            "values": object_array([r[3] for _, r in released]),
            "at": np.array([r[4] for _, r in released], dtype=np.int64),
            "origin": np.array([r[5] for _, r in released], dtype=np.int64),
        }

    # ---- per-key state: the inner operator's and the pending output

    def keys(self) -> set:
        return self.inner.keys() | set(self.states)  # type: ignore[attr-defined]

    def export(self, keys: list) -> dict[object, object]:
        inner = self.inner.export(keys)  # type: ignore[attr-defined]
        mine = self._take_output(keys)
        return {k: {"operator": inner.get(k), "output": mine.get(k)}
                for k in keys if k in inner or k in mine}

    def import_states(self, states: dict[object, object]) -> None:
        inner = {k: s["operator"] for k, s in states.items()  # type: ignore[index]
                 if s["operator"] is not None}  # type: ignore[index]
        if inner:
            self.inner.import_states(inner)  # type: ignore[attr-defined]
        self._put_output({k: s["output"] for k, s in states.items()})  # type: ignore[index]

    def _take_output(self, keys: list) -> dict[object, dict]:
        """The keys' output state, removed with their interval timers."""
        for key in keys:
            self.timers.set(key, None)
        return {k: self.states.pop(k) for k in keys if k in self.states}

    def _put_output(self, states: dict[object, dict | None]) -> None:
        """Adopt keys' output state (None: a key without), with their timers."""
        for key, state in states.items():
            if state is not None:
                self.states[key] = state
                self._settle(key, state)

    def snapshot(self) -> object:
        return {"operator": self.inner.snapshot(),  # type: ignore[attr-defined]
                "output": [[k, s] for k, s in self.states.items()]}

    def restore(self, state: object) -> None:
        self.inner.restore(state["operator"])  # type: ignore[attr-defined,index]
        self.states = {}
        self.timers = TimerIndex()
        self.import_states({k: {"operator": None, "output": s}
                            for k, s in state["output"]})  # type: ignore[index]

    # ---- bulk key moves (``Engine.split_off``): the inner operator's windows, and
    # per key the inner operator's other state and the pending output

    def state_windows(self) -> list:
        return self.inner.state_windows()  # type: ignore[attr-defined]

    def export_keyed(self, keys: list) -> dict[object, object]:
        inner = self.inner.export_keyed(keys)  # type: ignore[attr-defined]
        mine = self._take_output(keys)
        return {k: [inner.get(k), mine.get(k)] for k in keys if k in inner or k in mine}

    def import_keyed(self, states: dict[object, object]) -> None:
        inner = {k: s[0] for k, s in states.items() if s[0] is not None}  # type: ignore[index]
        if inner:
            self.inner.import_keyed(inner)  # type: ignore[attr-defined]
        self._put_output({k: s[1] for k, s in states.items()})  # type: ignore[index]


def _at(row: Row, seq: int, at: int, origin: int) -> Row:
    """A pending row released at the input event ``seq`` (at time ``at`` // 2, by the
    event ``origin`` or a timer): output rows are in the reference order in every
    runtime only if each carries the place of the moment it leaves."""
    return [seq, row[1], row[2], row[3], at, origin]


def clock_tables(rule: ir.StatefulRule) -> Callable[[tuple], list[Table]]:
    """How to find, in the arguments the rule's operator is called with (the watermark
    aside), each input table: the events that open the key's intervals."""
    if isinstance(rule, ir.WindowRule):
        return lambda args: [args[0]]
    if isinstance(rule, ir.JoinRule):
        return lambda args: [args[0], args[1]]
    return lambda args: list(args[0].values())


def _rows_by_key(out: Table) -> dict[object, list[Row]]:
    """An operator's output rows per key, in the order they were made, as state rows."""
    if not out or not len(out["seq"]):
        return {}
    order = np.lexsort((out["origin"], out["at"], out["seq"]))
    columns = [out[c][order].tolist() for c in ROW_COLUMNS]
    rows: dict[object, list[Row]] = {}
    for key, *row in zip(out["key"][order].tolist(), *columns, strict=True):
        rows.setdefault(key, []).append(list(row))
    return rows

