"""Pattern rules of the chain shapes (:mod:`cep.engine.patterns.chain`), batch at a time.

The same rule semantics as the interpreter
(:class:`cep.engine.patterns.rule.InterpretedPatternOperator`, which runs every other
shape and is the oracle of ``tests/engine/test_pattern_chain.py``), computed column-wise:
the atoms' own filters for the whole batch, the candidate rows sorted once
(:mod:`cep.engine.patterns.columns`), every partial match advanced with ``searchsorted``,
and the output's tag columns gathered from the bound rows. A partial match's slots are
the chain's atoms, the atoms of an ``or`` or ``and`` step each its own (the absent atom of a
timer is never held); an alternative not taken leaves its slot empty and its tag
unbound: NULL in the output, and a filter that reads it is false, as in the interpreter.
"""

from __future__ import annotations

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.expr import Col, Env, collect_nodes, truth
from cep.engine.output import TIMER, Stamps, empty_output
from cep.engine.patterns.chain import NEVER, ChainShape, Check, Instances, Outcome, advance
from cep.engine.patterns.columns import (
    FIRST,
    HELD,
    LAST,
    STEP,
    Batch,
    ColumnPatternOperator,
    first_bound,
)
from cep.engine.table import SEQ, Table, nrows
from grammar import ir


class ChainPatternOperator(ColumnPatternOperator):
    """Runs one :class:`ir.PatternRule` of a chain shape for all keys of an engine."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef],
                 shape: ChainShape) -> None:
        # the fingerprint of a plain chain stays what it was: states written before load
        keyed = shape if shape.step_of is None else (shape, shape.step_of, shape.and_steps,
                                                      shape.iteration)
        super().__init__(rule, streams, shape.checked, shape.atoms, keyed,
                         held=shape.step_of is not None)
        self.shape = shape
        self.n_atoms = len(shape.atoms)
        self.n_steps = shape.n_steps

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
        new instance per row the first step takes (bound to its leftmost alternative
        that takes the row)."""
        pending = self.pending
        starts = np.searchsorted(batch.rows.codes, batch.pending_codes, side="left") - 1
        heads = self.shape.alternatives(0)
        head_masks = batch.masks[heads] if len(heads) > 1 else None
        new = np.flatnonzero(batch.masks[0] if head_masks is None else head_masks.any(axis=0))
        bound = np.full((self.n_atoms, n_pending + len(new)), -1, dtype=np.int64)
        steps = pending[STEP]
        for j in range(self.n_atoms):
            if self.held:
                held = np.flatnonzero(pending[HELD] >> j & 1)
            else:
                held = np.flatnonzero(steps > j)
            bound[j, held] = held
        if head_masks is None:
            bound[0, n_pending:] = n_pending + new
        else:
            taken = head_masks[:, new].argmax(axis=0)  # the leftmost that takes the row
            for k, j in enumerate(heads):
                mine = taken == k
                bound[j, n_pending + np.flatnonzero(mine)] = n_pending + new[mine]
        t = batch.rows.times[new]
        return Instances(np.concatenate([batch.pending_codes, batch.rows.codes[new]]),
                         np.concatenate([steps, np.ones(len(new), dtype=np.int64)]),
                         np.concatenate([starts, new]),
                         np.concatenate([pending[FIRST], t]),
                         np.concatenate([pending[LAST], t]), bound)

    def _check(self, j: int, batch: Batch, inst: Instances, n_pending: int) -> Check:
        """Atom j's filter that reads earlier tags, over (instance, candidate row) pairs,
        with the tags the earlier steps bound (as the interpreter's predicate sees them:
        an alternative not taken, or a tag of this step or later, is not bound at all)."""
        condition = self.atoms[j].bound_filter
        wanted: dict[str, set[str]] = {}
        for ref in collect_nodes([condition], ir.FieldRef):
            wanted.setdefault(ref.qualifier, set()).add(ref.name)
        atom = self.atoms[j]
        own = wanted.get(atom.tag, set())
        step = self.shape.slot_step(j) if j < self.n_atoms else self.n_steps
        # the tags of earlier steps (not earlier iterations of this atom's own repeat)
        earlier = [i for i in range(self.n_atoms) if self.shape.slot_step(i) < step
                   and self.atoms[i].tag in wanted and self.atoms[i].tag != atom.tag]

        def check(which: np.ndarray, cand: np.ndarray) -> np.ndarray:
            candidates = batch.tables[self.order.index(atom.stream)]
            env = Env(len(which), seq=candidates[SEQ][batch.local[cand]])  # their records
            for name in own:
                env.columns[(atom.tag, name)] = self.gather(atom.stream, None, name,
                                                            n_pending + cand, batch, n_pending)
            index = inst.bound[earlier][:, which]
            unbound = (index < 0).any(axis=0) if earlier else np.zeros(len(which), bool)
            for k, i in enumerate(earlier):
                self.bind_slot(env, self.atoms[i].tag, self.shape.item(i), i, index[k], batch,
                               n_pending, wanted[self.atoms[i].tag])
            if not unbound.any():
                return _truth_or_false(condition, env)
            # some pairs lack a tag: evaluated apart, per set of tags they have
            pattern = ((index >= 0).astype(np.int64)
                       << np.arange(len(earlier), dtype=np.int64)[:, None]).sum(axis=0)
            out = np.zeros(len(which), dtype=bool)
            for bits in np.unique(pattern).tolist():
                rows = np.flatnonzero(pattern == bits)
                part = env.where(pattern == bits)
                for k, i in enumerate(earlier):
                    if not bits >> k & 1:
                        item = self.shape.item(i)
                        for name in wanted[self.atoms[i].tag]:
                            part.columns.pop((self.atoms[i].tag, name) if item is None
                                             else (self.atoms[i].tag, name, item), None)
                out[rows] = _truth_or_false(condition, part)
            return out

        return check

    def _output(self, outcome: Outcome, batch: Batch, n_pending: int,
                clock: Watermark) -> Table:
        done, fired = outcome.done, outcome.fired
        n = len(done) + len(fired)
        if n == 0:
            return empty_output()
        bound = np.concatenate([done.bound, fired.bound], axis=1)
        codes = np.concatenate([done.code, fired.code])
        seq, at, origin, ts = self.event_stamps(done.cursor, batch)  # the last step's row
        if len(fired):
            reached, _ = clock.reach(outcome.deadline)
            seq = np.concatenate([seq, reached])
            at = np.concatenate([at, 2 * outcome.deadline])
            origin = np.concatenate([origin, np.full(len(fired), TIMER, np.int64)])
            ts = np.concatenate([ts, outcome.deadline])
        first_seq = self.first_seqs(first_bound(bound), batch, n_pending)
        # a key's rows made at one moment: by the seq of their first event (the
        # interpreter's order; the output's sort keeps it within a key)
        order = np.lexsort((first_seq, origin, at, seq, codes))
        bound = bound[:, order]
        env = Env(n)
        self.bind_matches(env, bound, self.shape.iteration, batch, n_pending)
        return self.emit_rows(env, batch.key_values[codes[order]],
                              Stamps(seq[order], at[order], origin[order]), ts[order])

    def deadlines(self) -> np.ndarray:
        pending = self.pending
        out = np.full(nrows(pending), NEVER, dtype=np.int64)
        if self.within is not None:
            out = pending[FIRST] + self.within
        if self.shape.timer_us is not None:
            timed = pending[STEP] == self.n_steps
            out = np.where(timed, np.minimum(out, pending[LAST] + self.shape.timer_us), out)
        return out


def _truth_or_false(condition: ir.TExpr, env: Env) -> np.ndarray:
    """Where ``condition`` holds; where it reads a tag ``env`` lacks, false, as the
    interpreter's predicate is for its one event. Only ``coalesce`` reads an argument
    for some rows and not others: with one, a failed read is retried row by row."""
    try:
        return truth(condition, env)
    except KeyError:
        if env.n <= 1 or not collect_nodes([condition], ir.Coalesce):
            return np.zeros(env.n, dtype=bool)
    out = np.zeros(env.n, dtype=bool)
    for r in range(env.n):
        row = Env(1, {k: Col(c.values[r:r + 1], None if c.nulls is None else c.nulls[r:r + 1])
                      for k, c in env.columns.items()},
                  env.seq[r:r + 1] if env.seq is not None else None)
        out[r] = _truth_or_false(condition, row)[0]
    return out
