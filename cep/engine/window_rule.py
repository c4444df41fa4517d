"""A one-stream rule with a data window: aggregates per key, per arriving event.

Sliding windows (``#length``, ``#time``, ``#keepall``) evaluate the rule for every
arriving event that passes the stream filter and WHERE, over its key's window including
that event. Batch windows evaluate once when a batch closes: ``#length_batch(n)`` on its
n-th event, ``#time_batch(T)`` on the first event of a later bucket (the closing event is
the trigger, the closed bucket is the window; a bucket is only closed by a later event of
the same key). In every case WHERE also decides which window rows feed the aggregates.
``#firstlength``, ``#firsttime``, ``#time_length_batch`` and ``#unique`` are described in
``cep.engine.window_kinds``.
"""

from __future__ import annotations

import numpy as np

from cep.engine.aggregates import compute_aggregates
from cep.engine.emit import emit, timestamp_col
from cep.engine.expr import Env, collect_aggregates, collect_window_functions, truth
from cep.engine.output import empty_output
from cep.engine.table import Table, nrows, take
from cep.engine.window_functions import PriorBuffer, window_values
from cep.engine.window_kinds import (
    first_window,
    gather_unique,
    time_length_batches,
    unique_next,
)
from cep.engine.windows import KeyedWindow, Merged, WindowState, batch_runs
from cep.lang import ir


class WindowOperator(WindowState):
    """Runs one :class:`ir.WindowRule` for all keys of an engine."""

    def __init__(self, rule: ir.WindowRule, stream: ir.StreamDef) -> None:
        self.rule = rule
        self.stream = stream
        self.window = KeyedWindow(rule.window, stream.timestamp)
        outputs = [rule.having, *(c.expr for c in rule.columns)]
        self.aggs = collect_aggregates(outputs)
        self.window_functions = collect_window_functions(outputs)
        self.prior = (PriorBuffer(self.window_functions, stream.timestamp)
                      if any(fn.kind == "prior" for fn in self.window_functions) else None)

    def state_windows(self) -> list[KeyedWindow]:
        return [self.window] if self.prior is None else [self.window, self.prior.window]

    def process(self, rows: Table) -> Table:
        if nrows(rows) == 0:
            return empty_output()
        env = Env(nrows(rows))
        env.bind_table("", rows)
        rows = take(rows, truth(self.rule.filter, env))
        merged = self.window.merge(rows)
        out, keep = self._evaluate(merged, rows)
        self.window.retain(merged, keep)
        return out

    def _evaluate(self, merged: Merged, rows: Table) -> tuple[Table, np.ndarray | None]:
        """Output rows of the batch ``rows`` (filtered), merged into the window, and the
        merged rows to retain when this window kind decides that here (else None)."""
        rule, spec = self.rule, self.rule.window
        env = Env(len(merged.codes))
        env.bind_table("", merged.table)
        where = truth(rule.where, env)
        idx = np.arange(len(merged.codes))
        keep = None
        if spec.kind == "time_length_batch":
            batches = time_length_batches(spec, merged)
            trig, lo, hi, keep = batches.trig, batches.lo, batches.hi, batches.open_rows
        elif spec.kind in ("firstlength", "firsttime"):
            keep = first_window(spec, merged)
            trig = np.flatnonzero(merged.is_new & keep & where)
            hi = trig + 1
            lo = merged.gstart[trig]
        elif spec.kind == "unique":
            following = unique_next(spec, merged)
            keep = following == len(idx)
            trig = np.flatnonzero(merged.is_new & where)
            gathered = gather_unique(merged, following, trig)
            env = Env(len(gathered.rows))
            env.bind_table("", take(merged.table, gathered.rows))
            where, lo, hi = where[gathered.rows], gathered.lo, gathered.hi
        elif spec.kind == "length_batch":
            trig = np.flatnonzero(merged.is_new & ((idx - merged.gstart + 1) % spec.size == 0))
            hi = trig + 1
            lo = hi - spec.size
        elif spec.kind == "time_batch":
            runs = batch_runs(merged, spec.size)
            closes = np.zeros(len(idx), dtype=bool)
            closes[1:] = (runs[1:] == idx[1:]) & (merged.gstart[1:] < idx[1:])
            trig = np.flatnonzero(merged.is_new & closes)
            hi = trig
            lo = runs[trig - 1] if len(trig) else trig
        else:
            trig = np.flatnonzero(merged.is_new & where)
            hi = trig + 1
            lo = self.window.sliding_segments(merged, merged.codes[trig], hi,
                                              merged.gstart[trig], merged.time[trig])
        aggs = compute_aggregates(self.aggs, env, where, lo, hi)
        aggs.update(window_values(self.window_functions, env, lo, hi))
        triggers = take(merged.table, trig)
        if self.prior is not None:
            aggs.update(self.prior.values(rows, triggers))
        trig_env = Env(len(trig))
        trig_env.bind_table("", triggers)
        return emit(rule.name, rule.columns, rule.having, triggers, trig_env, aggs,
                    timestamp_col(triggers, self.stream.timestamp)), keep
