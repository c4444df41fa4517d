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
event. What is pending is per-key state that moves with the key, as a dict of plain
values (ints, strings, lists) per key; a key with no open interval and nothing pending
holds nothing, except that SNAPSHOT keeps the key's latest row for the key's next
interval.

Every clause but SNAPSHOT EVERY T works on all keys of a batch at once with array
operations (FIRST/LAST/SNAPSHOT EVERY n EVENTS here, the others in
``cep.engine.rate.intervals``), its keys' state held as columns between batches
(``cep.engine.rate.state``: no Python step per key or per pending row in a batch).
SNAPSHOT EVERY T, whose closes repeat a row across intervals, walks each key's items
and keeps a dict per key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from cep.engine.clock import Watermark
from cep.engine.output import TIMER, empty_output, key_text_ranks
from cep.engine.rate.intervals import ROW_FIELDS, Rows, every_n_events, every_time
from cep.engine.rate.state import EMPTY, RateState
from cep.engine.table import (
    KEY,
    RELEASE,
    TIME,
    Table,
    code_order,
    factorize,
    first_rows,
    lexsorted,
    object_array,
    repeated,
    take,
)
from cep.engine.timers import TimerIndex
from grammar import ir

# a result row in state: [seq, ts, ts is null, values (JSON text), at, origin] (seq, at
# and origin: where it sits in the reference order, see ``output.Stamps``)
Row = list
ROW_COLUMNS = ROW_FIELDS


class RateLimited:
    """Wraps a rule's operator (same interface) and limits its output per key."""

    def __init__(self, inner: object, rule_name: str, limit: ir.OutputLimit,
                 clock_tables: Callable[[tuple], Iterable[Table]]) -> None:
        self.inner = inner
        self.rule_name = rule_name
        self.limit = limit
        self.clock_tables = clock_tables
        # SNAPSHOT EVERY T: a dict per key, and the end of each key's open interval
        self.states: dict[object, dict] = {}
        self.timers = TimerIndex()
        # every other clause: all keys' state as columns
        self.columns = self._columns()

    def _columns(self) -> RateState | None:
        if self.limit.events is None and self.limit.kind == "snapshot":
            return None
        return RateState(self.limit.period_us, self.limit.events)

    # ---- processing

    def process(self, *args: object) -> Table:
        """The inner operator's batch (its arguments, the watermark last), limited."""
        clock: Watermark = args[-1]  # type: ignore[assignment]
        out = self.inner.process(*args)  # type: ignore[attr-defined]
        if self.limit.events is not None:
            return self._every_nth(out) if self.limit.kind != "all" else self._all_every_n(out)
        if self.limit.kind != "snapshot":
            return self._every_period(out, args[:-1], clock)
        rows = _rows_by_key(out)
        events_keys, release, times = self._clock_events(args[:-1])
        opening = self._opening(factorize(events_keys), release, times)
        tick_keys, tick_times = events_keys[opening], times[opening]
        ticks: dict[object, list[int]] = {}
        for key, time in zip(tick_keys.tolist(), tick_times.tolist(), strict=True):
            ticks.setdefault(key, []).append(time)
        due = self.timers.due(clock.end)
        released = [r for key in dict.fromkeys([*rows, *ticks, *due])
                    for r in self._snapshots(key, rows.get(key, []), ticks.get(key, []),
                                             clock)]
        return self._table(released)

    def due_keys(self, until: int) -> list:
        inner = self.inner.due_keys(until)  # type: ignore[attr-defined]
        mine = (self.timers.due(until) if self.columns is None
                else self.columns.due(until).tolist())
        return list(dict.fromkeys([*inner, *mine]))

    def _state(self, key: object) -> dict:
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = {**EMPTY, "pending": []}
        return state

    def _every_nth(self, out: Table) -> Table:
        """FIRST/LAST/SNAPSHOT EVERY n EVENTS with array operations: the rows whose
        position among their key's results (counted on from the key's state) is 1 (FIRST)
        or 0 (LAST, SNAPSHOT) modulo n."""
        m = len(out["seq"]) if out else 0
        if m == 0:
            return empty_output()
        n = self.limit.events
        codes = batch_keys([out["key"]])[1]
        order = lexsorted((out["origin"], out["at"], out["seq"], codes))  # stable
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        sizes = np.diff(np.append(starts, m))
        keys = out["key"][order[starts]]
        found = self.columns.find(keys)  # type: ignore[union-attr]
        position = np.repeat(found.count, sizes) + np.arange(m) - np.repeat(starts, sizes) + 1
        hit = position % n == (1 % n if self.limit.kind == "first" else 0)  # type: ignore[operator]
        self.columns.store(  # type: ignore[union-attr]
            keys, (found.count + sizes) % n, found.open, found.bucket,  # type: ignore[operator]
            found.has_first, found.first_bucket, found.held)
        return take(out, np.sort(order[hit]))

    def _all_every_n(self, out: Table) -> Table:
        """ALL EVERY n EVENTS: each block of n rows of a key leaves at its n-th row."""
        if not out or not len(out["seq"]):
            return empty_output()
        keys, codes = batch_keys([out["key"]])
        found = self.columns.find(keys)  # type: ignore[union-attr]
        released, pending, count = every_n_events(
            self.limit.events, found.count, found.held,  # type: ignore[arg-type]
            _made_order(_rows(out, codes)))
        self.columns.store(keys, count, found.open, found.bucket,  # type: ignore[union-attr]
                           found.has_first, found.first_bucket, pending)
        return self._released_table(keys, released)

    def _every_period(self, out: Table, args: tuple, clock: Watermark) -> Table:
        """ALL, LAST and FIRST EVERY T, every key of the batch at once (see
        ``cep.engine.rate.intervals``)."""
        events_keys, release, time = self._clock_events(args)
        due = self.columns.due(clock.end)  # type: ignore[union-attr]
        n, m = (len(out["seq"]) if out else 0), len(events_keys)
        # one numbering of the keys of the rows, the events and the keys due
        keys, codes = batch_keys(
            [out["key"] if n else object_array([]), events_keys, due])
        if not len(keys):
            return empty_output()
        opening = self._opening(codes[n: n + m], release, time)
        found = self.columns.find(keys)  # type: ignore[union-attr]
        result = every_time(
            self.limit.kind, self.limit.period_us, len(keys),  # type: ignore[arg-type]
            found.open, found.bucket, found.has_first, found.first_bucket, found.held,
            _made_order(_rows(out, codes[:n])), codes[n: n + m][opening], time[opening],
            clock.end,
            lambda deadlines: clock.reach(deadlines)[0], key_text_ranks(keys))
        self.columns.store(keys, found.count, result.open,  # type: ignore[union-attr]
                           result.bucket, result.has_first, result.first_bucket,
                           result.pending)
        return self._released_table(keys, result.rows)

    def _released_table(self, keys: np.ndarray, rows: Rows) -> Table:
        if not len(rows):
            return empty_output()
        return {"rule": repeated(self.rule_name, len(rows)),
                "key": keys[rows.key], "seq": np.asarray(rows.seq, np.int64),
                "ts": np.asarray(rows.ts, np.int64), "ts__null": np.asarray(rows.ts__null, bool),
                "values": rows.values, "at": np.asarray(rows.at, np.int64),
                "origin": np.asarray(rows.origin, np.int64)}

    def _snapshots(self, key: object, rows: list[Row], ticks: list[int], clock: Watermark
                   ) -> list[tuple[object, Row]]:
        """SNAPSHOT EVERY T for one key: its interval-opening ticks (effective times of
        its events) and result rows in processing order (a tick before the rows its own
        event made), the open interval closing at its end; then the key's next deadline."""
        state = self._state(key)
        items = sorted([(2 * t + 1, 0, i) for i, t in enumerate(ticks)]
                       + [(r[4], 1, i) for i, r in enumerate(rows)])
        out: list[tuple[object, Row]] = []
        for at, is_row, i in items:
            self._close(state, at // 2, clock, out, key)
            if state["bucket"] is None:
                state["bucket"] = (at // 2) // self.limit.period_us
            if is_row:
                state["latest"] = rows[i]
        self._close(state, clock.end, clock, out, key)
        self._settle(key, state)
        return out

    def _close(self, state: dict, now: int, clock: Watermark,
               out: list[tuple[object, Row]], key: object) -> None:
        """SNAPSHOT: close the key's open interval if event time ``now`` has reached its
        end, releasing the key's latest row at the first input event whose watermark
        reaches the end."""
        if state["bucket"] is None:
            return
        end = (state["bucket"] + 1) * self.limit.period_us
        if end > now:
            return
        if state["latest"] is not None:
            out.append((key, [clock.reach_one(end), end, False, state["latest"][3], 2 * end,
                              TIMER]))
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

    def _clock_events(self, args: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The keys (as their tables hold them, or an object array), release seqs and
        effective times of the batch's events of all of the rule's streams: the events
        that may open an interval."""
        parts = [(t[KEY], t[RELEASE], t[TIME]) for t in self.clock_tables(args)
                 if t and len(t[KEY])]
        if not parts:
            return object_array([]), np.empty(0, np.int64), np.empty(0, np.int64)
        keys = (np.concatenate([p[0] for p in parts]) if len({p[0].dtype for p in parts}) == 1
                else np.concatenate([object_array(p[0].tolist()) for p in parts]))
        release = np.concatenate([p[1] for p in parts])
        time = np.concatenate([p[2] for p in parts]).astype(np.int64, copy=False)
        return keys, release, time

    def _opening(self, codes: np.ndarray, release: np.ndarray, time: np.ndarray
                 ) -> np.ndarray:
        """Which of the events (their keys' codes, release seqs and times) open an
        interval, as indices in processing order per key: each key's first event of
        the batch and each that moves it into a later interval, found with array
        operations over all of the batch's events (an interval closes before a later
        one opens, so no other event can open one)."""
        if not len(codes):
            return np.empty(0, np.int64)
        # the events come in time order mostly: by key, stably, is then the order
        order = lexsorted((release, time, codes), code_order(codes))
        codes, bucket = codes[order], time[order] // self.limit.period_us
        first = np.r_[True, codes[1:] != codes[:-1]]
        later = np.r_[False, bucket[1:] > bucket[:-1]] & ~first
        return order[first | later]

    def _table(self, released: list[tuple[object, Row]]) -> Table:
        if not released:
            return empty_output()
        return {
            "rule": repeated(self.rule_name, len(released)),
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
        mine = set(self.states) if self.columns is None else self.columns.held_keys()
        return self.inner.keys() | mine  # type: ignore[attr-defined]

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
        if self.columns is not None:
            return self.columns.take_out(keys)
        for key in keys:
            self.timers.set(key, None)
        return {k: self.states.pop(k) for k in keys if k in self.states}

    def _put_output(self, states: dict[object, dict | None]) -> None:
        """Adopt keys' output state (None: a key without), with their timers."""
        if self.columns is not None:
            self.columns.put({k: s for k, s in states.items() if s is not None})
            return
        for key, state in states.items():
            if state is not None:
                self.states[key] = state
                self._settle(key, state)

    def snapshot(self) -> object:
        return {"operator": self.inner.snapshot(),  # type: ignore[attr-defined]
                "output": [[k, s] for k, s in (
                    self.states if self.columns is None else self.columns.as_dicts()).items()]}

    def restore(self, state: object) -> None:
        self.inner.restore(state["operator"])  # type: ignore[attr-defined,index]
        self.states = {}
        self.timers = TimerIndex()
        self.columns = self._columns()
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


def clock_tables(rule: ir.StatefulRule) -> Callable[[tuple], list[Table]]:
    """How to find, in the arguments the rule's operator is called with (the watermark
    aside), each input table: the events that open the key's intervals."""
    if isinstance(rule, ir.WindowRule):
        return lambda args: [args[0]]
    if isinstance(rule, ir.JoinRule):
        return lambda args: [args[0], args[1]]
    return lambda args: list(args[0].values())


def batch_keys(parts: list[np.ndarray], grouped: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The keys in ``parts`` (key columns) in order of first appearance, as an object
    array, and each value's key index, as ``table.factorize`` numbers them. The first
    ``grouped`` parts come with equal keys mostly together (an operator's result rows,
    grouped by key): their runs of equal keys are found by comparing neighbours, and
    only each run's first key is hashed (100k result rows of 4,096 keys: 0.6 ms against
    3.4 ms of hashing them all). Keys that are all ints are numbered as int64."""
    if not sum(map(len, parts)):
        return object_array([]), np.empty(0, dtype=np.int64)
    runs = [_runs(p) if i < grouped else None for i, p in enumerate(parts)]
    heads = [p if r is None else p[r[0]] for p, r in zip(parts, runs, strict=True)]
    ints = _as_ints(heads)
    every = (np.concatenate(ints) if ints is not None else np.concatenate(
        [h if h.dtype == object else object_array(h.tolist()) for h in heads]))
    codes = factorize(every)  # numbered in order of first appearance
    first = first_rows(codes)
    keys = every[first] if every.dtype == object else object_array(every[first].tolist())
    bounds = np.cumsum([0, *map(len, heads)])
    return keys, np.concatenate([
        codes[lo:hi] if r is None else codes[lo:hi][r[1]]
        for lo, hi, r in zip(bounds[:-1], bounds[1:], runs, strict=True)])


def _as_ints(parts: list[np.ndarray]) -> list[np.ndarray] | None:
    """The key columns as int64 when every key is an int that fits one (equal ints,
    equal int64s: 100k keys hashed in 1.7 ms against 3.4 ms as objects, with the
    check and conversion), else None (a bool, float, str or bigger int among them)."""
    out = []
    for part in parts:
        if part.dtype.kind == "i" or (part.dtype.kind == "u" and part.dtype.itemsize < 8):
            out.append(part.astype(np.int64, copy=False))
        elif part.dtype == object and (
                not len(part) or pd.api.types.infer_dtype(part, skipna=False) == "integer"):
            try:
                out.append(np.asarray(part, dtype=np.int64))
            except OverflowError:
                return None
        else:
            return None
    return out


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each run of equal neighbouring keys and each row's run."""
    change = np.empty(len(keys), dtype=bool)
    change[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=change[1:])
    return np.flatnonzero(change), np.cumsum(change) - 1


def _rows(out: Table, codes: np.ndarray) -> Rows:
    """The output rows ``out`` (none: an empty table) with their keys' indices."""
    if not out or not len(out["seq"]):
        dtypes = {"values": object, "ts__null": bool}
        return Rows(np.empty(0, np.int64),
                    *(np.empty(0, dtype=dtypes.get(c, np.int64)) for c in ROW_COLUMNS))
    return Rows(codes, *(out[c] for c in ROW_COLUMNS))


def _made_order(rows: Rows) -> Rows:
    """The rows by key index, each key's in the order they were made (seq, at, origin):
    the intervals' arithmetic reads only the order within a key. Operators give their
    rows grouped by key (first seen, first numbered) in that order, so this is mostly
    a check, not a sort and a gather of every column (100k rows: about 10 ms)."""
    order = lexsorted((rows.origin, rows.at, rows.seq, rows.key))
    if len(order) < 2 or (order[1:] > order[:-1]).all():
        return rows
    return rows.take(order)


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

