"""Pattern rules of the chain shapes (:mod:`cep.engine.pattern_chain`), batch at a time.

The same rule semantics as the interpreter
(:class:`cep.engine.pattern_rule.InterpretedPatternOperator`, which runs every other
shape and is the oracle of ``tests/engine/test_pattern_chain.py``), computed column-wise:
the atoms' own filters for the whole batch, the candidate rows sorted once
(:mod:`cep.engine.column_pattern`), every partial match advanced with ``searchsorted``,
and the output's tag columns gathered from the bound rows. A partial match's slots are
the chain's atoms (the absent atom of a timer is never held).
"""

from __future__ import annotations

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.column_pattern import (
    FIRST,
    LAST,
    STEP,
    Batch,
    ColumnPatternOperator,
)
from cep.engine.expr import Env, collect_nodes, truth
from cep.engine.output import TIMER, Stamps, empty_output
from cep.engine.pattern_chain import NEVER, ChainShape, Check, Instances, Outcome, advance
from cep.engine.table import SEQ, Table, nrows
from grammar import ir


class ChainPatternOperator(ColumnPatternOperator):
    """Runs one :class:`ir.PatternRule` of a chain shape for all keys of an engine."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef],
                 shape: ChainShape) -> None:
        super().__init__(rule, streams, shape.checked, shape.atoms, shape)
        self.shape = shape
        self.n_atoms = len(shape.atoms)

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's events and the timers and expiries the watermark reaches, for
        every key (those without events too: it costs their partial matches, no more)."""
        batch = self.batch(tables)
        n_pending = nrows(self.pending)
        inst = self._instances(batch, n_pending)
        positions = [np.flatnonzero(m) for m in batch.masks]
        absent = positions[self.n_atoms] if self.shape.absent is not None else None
        checks = [self._check(j, batch, inst, n_pending) if self.atoms[j].bound_filter
                  is not None else None for j in range(len(self.atoms))]
        outcome = advance(self.shape, self.within, inst, positions, absent, batch.rows,
                          n_pending, clock.end, checks)
        out = self._output(outcome, batch, n_pending, clock)
        left = outcome.pending
        self.pending = self.state_rows(left.code, left.step, left.first, left.last,
                                       left.bound, batch, n_pending)
        return out

    def _instances(self, batch: Batch, n_pending: int) -> Instances:
        """The partial matches from state (searching from their key's first row) and one
        new instance per row the first atom takes."""
        pending = self.pending
        starts = np.searchsorted(batch.rows.codes, batch.pending_codes, side="left") - 1
        new = np.flatnonzero(batch.masks[0])
        bound = np.full((self.n_atoms, n_pending + len(new)), -1, dtype=np.int64)
        steps = pending[STEP]
        for j in range(self.n_atoms):
            held = np.flatnonzero(steps > j)
            bound[j, held] = held
        bound[0, n_pending:] = n_pending + new
        t = batch.rows.times[new]
        return Instances(np.concatenate([batch.pending_codes, batch.rows.codes[new]]),
                         np.concatenate([steps, np.ones(len(new), dtype=np.int64)]),
                         np.concatenate([starts, new]),
                         np.concatenate([pending[FIRST], t]),
                         np.concatenate([pending[LAST], t]), bound)

    def _check(self, j: int, batch: Batch, inst: Instances, n_pending: int) -> Check:
        """Atom j's filter that reads earlier tags, over (instance, candidate row) pairs,
        with the tags bound before it (as the interpreter's predicate sees them)."""
        condition = self.atoms[j].bound_filter
        wanted: dict[str, set[str]] = {}
        for ref in collect_nodes([condition], ir.FieldRef):
            wanted.setdefault(ref.qualifier, set()).add(ref.name)
        atom = self.atoms[j]
        own = wanted.get(atom.tag, set())

        def check(which: np.ndarray, cand: np.ndarray) -> np.ndarray:
            candidates = batch.tables[self.order.index(atom.stream)]
            env = Env(len(which), seq=candidates[SEQ][batch.local[cand]])  # their records
            for name in own:
                env.columns[(atom.tag, name)] = self.gather(atom.stream, None, name,
                                                            n_pending + cand, batch, n_pending)
            for i in range(min(j, self.n_atoms)):
                tag = self.atoms[i].tag
                if tag in wanted:
                    self.bind_slot(env, tag, None, i, inst.bound[i, which], batch,
                                   n_pending, wanted[tag])
            try:
                return truth(condition, env)
            except KeyError:  # a tag not bound yet: never true, as in the interpreter
                return np.zeros(len(which), dtype=bool)

        return check

    def _output(self, outcome: Outcome, batch: Batch, n_pending: int,
                clock: Watermark) -> Table:
        done, fired = outcome.done, outcome.fired
        n = len(done) + len(fired)
        if n == 0:
            return empty_output()
        bound = np.concatenate([done.bound, fired.bound], axis=1)
        codes = np.concatenate([done.code, fired.code])
        seq, at, origin, ts = self.event_stamps(done.bound[self.n_atoms - 1] - n_pending,
                                                batch)
        if len(fired):
            reached, _ = clock.reach(outcome.deadline)
            seq = np.concatenate([seq, reached])
            at = np.concatenate([at, 2 * outcome.deadline])
            origin = np.concatenate([origin, np.full(len(fired), TIMER, np.int64)])
            ts = np.concatenate([ts, outcome.deadline])
        first_seq = self.first_seqs(bound[0], batch, n_pending)
        # a key's rows made at one moment: by the seq of their first event (the
        # interpreter's order; the output's sort keeps it within a key)
        order = np.lexsort((first_seq, origin, at, seq, codes))
        bound = bound[:, order]
        env = Env(n)
        for j, atom in enumerate(self.shape.atoms):
            self.bind_slot(env, atom.tag, None, j, bound[j], batch, n_pending)
        self.null_tags(env, n, {a.tag for a in self.shape.atoms})
        return self.emit_rows(env, batch.key_values[codes[order]],
                              Stamps(seq[order], at[order], origin[order]), ts[order])

    def deadlines(self) -> np.ndarray:
        pending = self.pending
        out = np.full(nrows(pending), NEVER, dtype=np.int64)
        if self.within is not None:
            out = pending[FIRST] + self.within
        if self.shape.timer_us is not None:
            timed = pending[STEP] == self.n_atoms
            out = np.where(timed, np.minimum(out, pending[LAST] + self.shape.timer_us), out)
        return out
