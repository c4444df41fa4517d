"""Esper's output rate limiting (``OUTPUT [ALL|FIRST|LAST|SNAPSHOT] EVERY ...``), per key.

A rule's result rows (what it would output without the clause) are cut into intervals
per key, and only some rows leave, when the interval allows:

* ``EVERY n EVENTS`` counts the key's result rows: an interval is n rows. ALL releases
  the n rows together at the n-th; FIRST releases the 1st, (n+1)-th, ... at once; LAST
  and SNAPSHOT release the n-th.
* ``EVERY T`` counts event time: the key's clock is the largest timestamp among its
  events reaching the rule (any of the rule's streams, with or without a result), and the
  intervals are multiples of T since the epoch. An interval closes when an event of the
  key moves the clock into a later one. ALL releases the interval's rows then, LAST its
  last row; FIRST releases each interval's first row at once and drops the rest;
  SNAPSHOT releases, at each close, the key's latest result row so far (even if the
  interval had none), stamped with the closing event's seq and ts.

A released row carries the seq of the event at which it is released (the n-th row, or
the event that closes the interval), so outputs stay in seq order in every runtime, and
keeps its own ts and values (SNAPSHOT's take the closing event's ts as well). A limited
rule thus outputs (re-stamped) rows of the unlimited rule; ALL may output several rows at
one event. An interval no later event closes stays
pending (as a ``#time_batch`` bucket does): its rows are per-key state that moves with
the key, made of plain values (ints, strings, lists).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from cep.engine.output import OUTPUT_COLUMNS, empty_output
from cep.engine.table import KEY, SEQ, Table, factorize, object_array, take
from cep.lang import ir

# a result row in state: [seq, ts, ts is null, values (JSON text)]
Row = list


class RateLimited:
    """Wraps a rule's operator (same interface) and limits its output per key."""

    def __init__(self, inner: object, rule_name: str, limit: ir.OutputLimit,
                 clock_tables: Callable[[tuple], Iterable[tuple[Table, str | None]]]) -> None:
        self.inner = inner
        self.rule_name = rule_name
        self.limit = limit
        self.clock_tables = clock_tables
        self.states: dict[object, dict] = {}

    # ---- processing

    def process(self, *args: object) -> Table:
        out = self.inner.process(*args)  # type: ignore[attr-defined]
        if self.limit.events is not None and self.limit.kind != "all":
            return self._every_nth(out)
        rows = _rows_by_key(out)
        if self.limit.events is not None:
            released = [r for key, krows in rows.items() for r in self._count(key, krows)]
        else:
            ticks = self._closing_ticks(args)
            released = [r for key in rows.keys() | ticks.keys()
                        for r in self._time(key, rows.get(key, []), ticks.get(key, []))]
        return self._table(released)

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
        order = np.lexsort((np.arange(m), out["seq"], codes))
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        sizes = np.diff(np.append(starts, m))
        keys = out["key"][order][starts].tolist()
        counted = np.array([self._state(k)["count"] for k in keys], dtype=np.int64)
        position = np.repeat(counted, sizes) + np.arange(m) - np.repeat(starts, sizes) + 1
        hit = position % n == (1 % n if self.limit.kind == "first" else 0)  # type: ignore[operator]
        for key, total in zip(keys, ((counted + sizes) % n).tolist(), strict=True):  # type: ignore[operator]
            self.states[key]["count"] = total
        return take(out, np.sort(order[hit]))

    def _count(self, key: object, rows: list[Row]) -> list[tuple[object, Row]]:
        """ALL EVERY n EVENTS: each block of n rows leaves at its n-th row."""
        state, n = self._state(key), self.limit.events
        out = []
        for row in rows:
            state["count"] = state["count"] % n + 1  # type: ignore[operator]
            state["pending"].append(row)
            if state["count"] == n:
                out.extend((key, _at(r, row[0])) for r in state["pending"])
                state["pending"] = []
        return out

    def _time(self, key: object, rows: list[Row], ticks: list[Row]) -> list[tuple[object, Row]]:
        """Merge the key's interval-closing ticks ([seq, ts, bucket]) and result rows in
        seq order (a tick before the rows its own event produced) and run the intervals."""
        state, kind = self._state(key), self.limit.kind
        events = sorted([(t[0], 0, i) for i, t in enumerate(ticks)]
                        + [(r[0], 1, i) for i, r in enumerate(rows)])
        out = []
        for _, is_row, i in events:
            if is_row:
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
                continue
            seq, ts, bucket = ticks[i]
            if state["bucket"] is not None and bucket > state["bucket"]:
                if kind == "snapshot":
                    if state["latest"] is not None:
                        out.append((key, [seq, ts, False, state["latest"][3]]))
                else:
                    out.extend((key, _at(r, seq)) for r in state["pending"])
                state["pending"] = []
            if state["bucket"] is None or bucket > state["bucket"]:
                state["bucket"] = bucket
        return out

    def _closing_ticks(self, args: tuple) -> dict[object, list[Row]]:
        """Per key, the events that move its clock into a later interval, and its first
        event of the batch ([seq, ts, bucket] each): the only events the intervals need,
        found with array operations over all of the batch's events."""
        parts = [(t[KEY], t[SEQ], t[ts]) for t, ts in self.clock_tables(args)
                 if ts is not None and len(t[SEQ])]
        if not parts:
            return {}
        keys = object_array([k for p in parts for k in p[0].tolist()])
        seq = np.concatenate([p[1] for p in parts])
        time = np.concatenate([p[2] for p in parts])
        codes = factorize(keys)
        order = np.lexsort((seq, codes))
        codes, seq, time, keys = codes[order], seq[order], time[order], keys[order]
        bucket = pd.Series(time).groupby(codes).cummax().to_numpy() // self.limit.period_us
        first = np.r_[True, codes[1:] != codes[:-1]]
        later = np.r_[False, bucket[1:] > bucket[:-1]] & ~first
        out: dict[object, list[Row]] = {}
        for i in np.flatnonzero(first | later).tolist():
            out.setdefault(keys[i], []).append([int(seq[i]), int(time[i]), int(bucket[i])])
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
        }

    # ---- per-key state: the inner operator's and the pending output

    def keys(self) -> set:
        return self.inner.keys() | set(self.states)  # type: ignore[attr-defined]

    def export(self, keys: list) -> dict[object, object]:
        inner = self.inner.export(keys)  # type: ignore[attr-defined]
        mine = {k: self.states.pop(k) for k in keys if k in self.states}
        return {k: {"operator": inner.get(k), "output": mine.get(k)}
                for k in keys if k in inner or k in mine}

    def import_states(self, states: dict[object, object]) -> None:
        inner = {k: s["operator"] for k, s in states.items()  # type: ignore[index]
                 if s["operator"] is not None}  # type: ignore[index]
        if inner:
            self.inner.import_states(inner)  # type: ignore[attr-defined]
        for k, s in states.items():
            if s["output"] is not None:  # type: ignore[index]
                self.states[k] = s["output"]  # type: ignore[index]

    def snapshot(self) -> object:
        return {"operator": self.inner.snapshot(),  # type: ignore[attr-defined]
                "output": [[k, s] for k, s in self.states.items()]}

    def restore(self, state: object) -> None:
        self.inner.restore(state["operator"])  # type: ignore[attr-defined,index]
        self.states = {k: s for k, s in state["output"]}  # type: ignore[index]

    # ---- bulk key moves (``Engine.split_off``): the inner operator's windows, and
    # per key the inner operator's other state and the pending output

    def state_windows(self) -> list:
        return self.inner.state_windows()  # type: ignore[attr-defined]

    def export_keyed(self, keys: list) -> dict[object, object]:
        inner = self.inner.export_keyed(keys)  # type: ignore[attr-defined]
        mine = {k: self.states.pop(k) for k in keys if k in self.states}
        return {k: [inner.get(k), mine.get(k)] for k in keys if k in inner or k in mine}

    def import_keyed(self, states: dict[object, object]) -> None:
        inner = {k: s[0] for k, s in states.items() if s[0] is not None}  # type: ignore[index]
        if inner:
            self.inner.import_keyed(inner)  # type: ignore[attr-defined]
        for k, s in states.items():
            if s[1] is not None:  # type: ignore[index]
                self.states[k] = s[1]  # type: ignore[index]


def _at(row: Row, seq: int) -> Row:
    """A pending row released at the event ``seq``: output rows are in seq order in
    every runtime only if each carries the seq of the moment it leaves."""
    return [seq, *row[1:]]


def clock_tables(rule: ir.StatefulRule, module: ir.CompiledModule) -> Callable[
        [tuple], list[tuple[Table, str | None]]]:
    """How to find, in the arguments the rule's operator is called with, each input table
    and its TIMESTAMP field (the events that advance the key's clock)."""
    def ts(stream: str) -> str | None:
        return module.streams[stream].timestamp

    if isinstance(rule, ir.WindowRule):
        return lambda args: [(args[0], ts(rule.stream))]
    if isinstance(rule, ir.JoinRule):
        return lambda args: [(args[0], ts(rule.trigger_stream)),
                             (args[1], ts(rule.window_stream))]
    return lambda args: [(table, ts(name)) for name, table in args[0].items()]


def _rows_by_key(out: Table) -> dict[object, list[Row]]:
    """An operator's output rows per key, in (seq, output) order, as state rows."""
    if not out or not len(out["seq"]):
        return {}
    order = np.argsort(out["seq"], kind="stable")
    columns = [out[c][order].tolist() for c in OUTPUT_COLUMNS if c not in ("rule", "key")]
    rows: dict[object, list[Row]] = {}
    for key, *row in zip(out["key"][order].tolist(), *columns, strict=True):
        rows.setdefault(key, []).append(list(row))
    return rows

