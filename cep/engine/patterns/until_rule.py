"""Pattern rules ``every ([n:m] b until c) [WITHIN T]`` (and ``every ([n] b [until c])``)
with filters on the event alone, batch at a time.

Under :mod:`cep.engine.patterns.interpreter`' semantics one instance of the repeat runs per key: it
collects b's; a c (offered first) completes it when it holds at least n of them (else
ends it), the m-th b completes it, WITHIN discards it once event time reaches its first
b's time + T (a fresh one then sees the event); whichever way it ends, the next starts
after the event. So the filters are evaluated column-wise for the batch and each key's
rows walked by one compiled loop (:mod:`cep.engine.patterns.until_kernel`); the b's are slots of
the state table (:mod:`cep.engine.patterns.columns`), ``b[i]`` in the output is slot i.
The interpreter (:class:`cep.engine.patterns.rule.InterpretedPatternOperator`) is the
oracle of ``tests/engine/test_pattern_chain.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.expr import Env, collect_nodes
from cep.engine.output import Stamps, empty_output
from cep.engine.patterns.chain import NEVER
from cep.engine.patterns.columns import FIRST, STEP, ColumnPatternOperator
from cep.engine.table import Table, nrows
from grammar import ir

#: The most b's a kernel partial match holds (each is a group of state columns); a
#: larger bound, or none, runs on the interpreter.
MOST_SLOTS = 16


@dataclass(frozen=True)
class UntilShape:
    """``every ([least:most] repeated [until until])``."""

    repeated: ir.PAtom
    until: ir.PAtom | None
    least: int
    most: int


def until_shape(pattern: ir.PNode) -> UntilShape | None:
    """The pattern as a bounded match-until of atoms under ``every``, or None."""
    if not isinstance(pattern, ir.PEvery) or not isinstance(pattern.operand, ir.PRepeat):
        return None
    repeat = pattern.operand
    until = repeat.until
    if (not isinstance(repeat.operand, ir.PAtom) or repeat.high is None
            or (until is not None and not isinstance(until, ir.PAtom))):
        return None
    if repeat.operand.bound_filter is not None or (until is not None
                                                   and until.bound_filter is not None):
        return None
    most = repeat.count if repeat.high == -1 else repeat.high
    if not 1 <= most <= MOST_SLOTS:
        return None
    return UntilShape(repeat.operand, until, repeat.count, most)


class UntilPatternOperator(ColumnPatternOperator):
    """Runs one :class:`ir.PatternRule` of a match-until shape for all keys of an engine."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef],
                 shape: UntilShape) -> None:
        checked = (shape.repeated,) + ((shape.until,) if shape.until is not None else ())
        super().__init__(rule, streams, checked, (shape.repeated,) * shape.most, shape)
        self.shape = shape
        tag = shape.repeated.tag
        self.width = max([ref.index + 1 for ref in collect_nodes(
            [rule.where, *(c.expr for c in rule.columns)], ir.FieldRef)
            if ref.qualifier == tag and ref.index is not None], default=0)

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's events, key by key, and WITHIN's expiries by the watermark."""
        from cep.engine.patterns.until_kernel import scan_until  # numba: only rules that need it

        batch = self.batch(tables)
        pending, shape = self.pending, self.shape
        n_pending = nrows(pending)
        starts, ends, group_code, held = self.key_runs(batch, n_pending)
        count0 = pending[STEP]
        slots0 = np.where(np.arange(shape.most)[None, :] < count0[:, None],
                          np.arange(n_pending)[:, None], -1).astype(np.int64)
        is_c = batch.masks[1] if shape.until is not None else np.zeros(len(batch.rows.codes),
                                                                         bool)
        m_key, m_count, m_c, m_trigger, m_slots, count, first, slots = scan_until(
            starts, ends, held, batch.masks[0], is_c, batch.rows.times,
            count0, pending[FIRST], slots0, n_pending, shape.least, shape.most,
            -1 if self.within is None else self.within, shape.until is not None)
        out = self._output(group_code[m_key], m_count, m_c, m_trigger, m_slots, batch,
                           n_pending)
        live = count > 0
        if self.within is not None:
            live &= first + self.within > clock.end
        keep = np.flatnonzero(live)
        walked = self.state_rows(group_code[keep], count[keep], first[keep], first[keep],
                                 slots[keep].T, batch, n_pending)
        self.replace_walked(walked, held, clock.end)
        return out

    def _output(self, codes: np.ndarray, count: np.ndarray, c_rows: np.ndarray,
                trigger: np.ndarray, b_rows: np.ndarray, batch, n_pending: int) -> Table:
        n = len(codes)
        if n == 0:
            return empty_output()
        seq, at, origin, ts = self.event_stamps(trigger, batch)
        env = Env(n, seq=seq)
        tag = self.shape.repeated.tag
        for i in range(self.width):
            index = b_rows[:, i] if i < self.shape.most else np.full(n, -1, np.int64)
            self.bind_slot(env, tag, i, min(i, self.shape.most - 1), index, batch,
                           n_pending)
        bound = {tag}
        until = self.shape.until
        if until is not None:
            self.bind_events(env, until.tag, None, until.stream, None, c_rows, batch,
                             n_pending)
            bound.add(until.tag)
        self.null_tags(env, n, bound)
        return self.emit_rows(env, batch.key_values[codes], Stamps(seq, at, origin), ts)

    def deadlines(self) -> np.ndarray:
        if self.within is None:
            return np.full(nrows(self.pending), NEVER, dtype=np.int64)
        return self.pending[FIRST] + self.within
