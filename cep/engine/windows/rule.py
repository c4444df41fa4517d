"""A one-stream rule with a data window: aggregates per key, per arriving event.

Sliding windows (``#length``, ``#time``, ``#keepall``) evaluate the rule for every
arriving event that passes the stream filter and WHERE, over its key's window including
that event. Batch windows evaluate once when a batch closes: ``#length_batch(n)`` on its
n-th event, ``#time_batch(T)`` when the watermark reaches the bucket's end (a timer, for
every key, also one that gets no more events: the bucket's last event gives the row's
fields, the bucket's end its time). In every case WHERE also decides which window rows
feed the aggregates. ``#firstlength``, ``#firsttime``, ``#time_length_batch`` and
``#unique`` are described in ``cep.engine.windows.kinds``.
"""

from __future__ import annotations

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.emit import emit, timestamp_col
from cep.engine.expr import (
    Col,
    Env,
    collect_aggregates,
    collect_nodes,
    collect_window_functions,
    truth,
)
from cep.engine.output import Stamps, empty_output, event_stamps, timer_stamps
from cep.engine.table import KEY, NULL_SUFFIX, SEQ, TIME, Table, nrows, take
from cep.engine.windows.aggregates import compute_aggregates
from cep.engine.windows.keyed_window import (
    KeyedWindow,
    Merged,
    WindowState,
    batch_runs,
    bucket_ends,
)
from cep.engine.windows.kinds import (
    first_time_kept,
    first_window,
    gather_unique,
    time_length_batches,
    unique_next,
)
from cep.engine.windows.window_functions import PriorBuffer, window_values
from grammar import ir
from grammar.field_reads import window_fields


class WindowOperator(WindowState):
    """Runs one :class:`ir.WindowRule` for all keys of an engine."""

    def __init__(self, rule: ir.WindowRule, stream: ir.StreamDef) -> None:
        self.rule = rule
        self.stream = stream
        self.window = KeyedWindow(rule.window)
        outputs = [rule.having, *(c.expr for c in rule.columns)]
        self.aggs = collect_aggregates(outputs)
        # the fields a trigger's row is read for (its SELECT and HAVING, and its event
        # time): a batch's triggers are gathered with these and the internal columns
        # only, not every field of the stream (the flights per-event job: a string
        # column's gather costs ~12x an int64's, and most rules read one or two fields)
        self.trigger_fields = frozenset(
            {ref.name for ref in collect_nodes(outputs, ir.FieldRef)}
            | ({stream.timestamp} if stream.timestamp else set()))
        # the fields its window keeps: those the rule reads (grammar.field_reads)
        self.kept_fields = window_fields(rule, stream)
        self.window_functions = collect_window_functions(outputs)
        self.prior = (PriorBuffer(self.window_functions)
                      if any(fn.kind == "prior" for fn in self.window_functions) else None)

    def state_windows(self) -> list[KeyedWindow]:
        return [self.window] if self.prior is None else [self.window, self.prior.window]

    def process(self, rows: Table, clock: Watermark) -> Table:
        """The batch's released rows (every key's), and the timers the watermark fires
        for the keys this window holds."""
        if nrows(rows) == 0 and not (self.window.rows and nrows(self.window.rows)):
            return empty_output()
        env = Env(nrows(rows))
        env.bind_table("", rows)
        passed = truth(self.rule.filter, env)
        if not passed.all():  # most rules filter nothing: no copy of every column then
            rows = take(rows, passed)
        rows = self._kept(rows)
        for window in self.state_windows():  # state written when it kept more fields
            if window.rows:
                window.rows = self._kept(window.rows)
        merged = self.window.merge(rows)
        out, keep = self._evaluate(merged, rows, clock)
        self.window.retain(merged, clock.end, keep)
        return out

    def _kept(self, rows: Table) -> Table:
        """``rows`` without the fields the rule does not read (no copy of the others):
        every gather and merge of the window pays per column it holds."""
        kept = self.kept_fields
        return {name: column for name, column in rows.items()
                if name.startswith("__") or name.removesuffix(NULL_SUFFIX) in kept}

    def due_keys(self, until: int) -> list:
        return self.window.due_keys(until)

    def _evaluate(self, merged: Merged, rows: Table, clock: Watermark
                  ) -> tuple[Table, np.ndarray | None]:
        """Output rows of the batch ``rows`` (filtered), merged into the window, and the
        merged rows to retain when this window kind decides that here (else None)."""
        rule, spec = self.rule, self.rule.window
        env = Env(len(merged.codes))
        env.bind_table("", merged.table)
        where = truth(rule.where, env)
        idx = np.arange(len(merged.codes))
        keep = None
        deadline = None  # per trigger: the deadline that closed its window (-1: an event)
        if spec.kind == "time_length_batch":
            batches = time_length_batches(spec, merged, clock.end)
            trig, lo, hi, keep = batches.trig, batches.lo, batches.hi, batches.open_rows
            deadline = batches.deadline
        elif spec.kind in ("firstlength", "firsttime"):
            window = first_window(spec, merged)
            trig = np.flatnonzero(merged.is_new & window & where)
            hi = trig + 1
            lo = merged.gstart[trig]
            keep = (first_time_kept(spec, merged, window, clock.end)
                    if spec.kind == "firsttime" else window)
        elif spec.kind == "unique":
            following = unique_next(spec, merged)
            keep = following == len(idx)
            trig = np.flatnonzero(merged.is_new & where)
            gathered = gather_unique(merged, following, trig)
            seqs = merged.table.get(SEQ)
            env = Env(len(gathered.rows),
                      seq=seqs[gathered.rows] if seqs is not None else None)
            fields = {c: v for c, v in merged.table.items() if not c.startswith("__")}
            env.bind_table("", take(fields, gathered.rows))  # an env reads fields only
            where, lo, hi = where[gathered.rows], gathered.lo, gathered.hi
        elif spec.kind == "length_batch":
            trig = np.flatnonzero(merged.is_new & ((idx - merged.gstart + 1) % spec.size == 0))
            hi = trig + 1
            lo = hi - spec.size
        elif spec.kind == "time_batch":  # every bucket whose end the watermark reaches
            runs = batch_runs(merged, spec.size)
            lo = np.flatnonzero(runs == idx)
            hi = np.append(lo[1:], len(idx))
            ends = bucket_ends(merged.time[lo], spec.size)
            closed = ends <= clock.end
            lo, hi, deadline = lo[closed], hi[closed], ends[closed]
            trig = hi - 1
        else:
            trig = np.flatnonzero(merged.is_new & where)
            hi = trig + 1
            lo = self.window.sliding_segments(merged, merged.codes[trig], hi,
                                              merged.gstart[trig], merged.time[trig])
        aggs = compute_aggregates(self.aggs, env, where, lo, hi)
        aggs.update(window_values(self.window_functions, env, lo, hi))
        triggers = take(self._trigger_columns(merged.table), trig)
        if self.prior is not None:
            aggs.update(self.prior.values(rows, triggers, clock.end))
        trig_env = Env(len(trig))
        trig_env.bind_table("", triggers)
        stamps, ts = self._stamps(triggers, merged.release[trig], deadline, clock)
        return emit(rule.name, rule.columns, rule.having, triggers[KEY], trig_env, aggs,
                    ts, stamps), keep

    def _trigger_columns(self, table: Table) -> Table:
        """The columns of ``table`` a trigger's row is read for: the internal ones, the
        fields in :attr:`trigger_fields` and their NULL masks."""
        return {name: values for name, values in table.items()
                if name.startswith("__") or name.removesuffix(NULL_SUFFIX)
                in self.trigger_fields}

    def _stamps(self, triggers: Table, release: np.ndarray, deadline: np.ndarray | None,
                clock: Watermark) -> tuple[Stamps, Col | None]:
        """Where each trigger's row goes and its time: an event's own, or for a window
        a timer closed, the deadline, at the first event whose watermark reaches it."""
        own = event_stamps(release, triggers[TIME], triggers[SEQ])
        ts = timestamp_col(triggers, self.stream.timestamp)
        if deadline is None or not (deadline >= 0).any():
            return own, ts
        timed = deadline >= 0
        fired = timer_stamps(clock.reach(deadline)[0], deadline)
        stamps = Stamps(*(np.where(timed, a, b) for a, b in (
            (fired.seq, own.seq), (fired.at, own.at), (fired.origin, own.origin))))
        if ts is not None:
            ts = Col(np.where(timed, deadline, ts.values))
        return stamps, ts
