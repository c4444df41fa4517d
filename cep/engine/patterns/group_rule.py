"""Pattern rules ``every (a -> b [-> c ...]) [WITHIN T]`` (``every`` over a followed-by of
atoms, any step an ``or`` or an ``and`` of atoms or ``[n] b``; or over one ``and``) and
the same without ``every`` (``a -> b [-> c ...] [WITHIN T]``, ``a``, ``a or b``,
``a and b``) with filters on the event alone, batch at a time.

Under :mod:`cep.engine.patterns.interpreter`' semantics ``every`` starts a fresh instance of its
operand only when the running one ends, after the event that ended it: completing (its
last step bound), or WITHIN discarding it (then the fresh instance sees the event that
found it expired, or starts at the watermark that did). So one instance runs per key:
it binds its steps in turn, each to the next event one of the step's atoms takes (the
leftmost such atom of an ``or``; the others' tags stay NULL; an ``and`` step binds each
of its atoms to the first such event that no atom left of it binds, and ends at the last;
WITHIN's clock starts at the first event the instance holds). The filters are evaluated
column-wise for the batch and each key's rows walked by one compiled loop
(:mod:`cep.engine.patterns.group_kernel`); the atoms are slots of the state table
(:mod:`cep.engine.patterns.columns`). Without ``every`` the first instance is the only
one: once it completes or WITHIN discards it the key is done for good (its state row
says so, step -1, and stays, as the interpreter keeps a finished pattern's state). The
interpreter
(:class:`cep.engine.patterns.rule.InterpretedPatternOperator`) is the oracle of
``tests/engine/test_pattern_chain.py``; filters that read earlier tags stay there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.expr import Env
from cep.engine.output import Stamps, empty_output
from cep.engine.patterns.chain import MOST_OR_SLOTS, NEVER, add_step, followed_by_steps
from cep.engine.patterns.columns import FIRST, HELD, STEP, ColumnPatternOperator
from cep.engine.table import Table, nrows, take
from grammar import ir


@dataclass(frozen=True)
class GroupShape:
    """``every (atoms of step 0 -> atoms of step 1 -> ...)``, or without ``every``
    (``once``); ``step_of[j]`` is slot j's step (an ``or`` or ``and`` step has
    several)."""

    atoms: tuple[ir.PAtom, ...]
    step_of: tuple[int, ...]
    once: bool = False
    and_steps: tuple[int, ...] = ()  # steps that are ``and``s of atoms
    iteration: tuple[int, ...] = ()  # per slot, its iteration of a ``[n] b`` (-1: none)

    @property
    def n_steps(self) -> int:
        return self.step_of[-1] + 1


def group_shape(pattern: ir.PNode) -> GroupShape | None:
    """The pattern as ``every`` over a followed-by of atoms (or ``or``s of atoms) whose
    filters read the event alone, or as such a followed-by (or one step) without
    ``every``; None otherwise."""
    once = not isinstance(pattern, ir.PEvery)
    body = pattern if once else pattern.operand  # type: ignore[union-attr]
    if not once and not isinstance(body, ir.PFollowedBy | ir.PAnd):
        return None  # every over one atom or or: a chain's (cep.engine.patterns.chain_rule)
    steps: list[list[ir.PAtom]] = []
    and_steps: list[int] = []
    iteration: list[int] = []
    for node in followed_by_steps(body):
        if not add_step(node, steps, and_steps, iteration):
            return None
    atoms = tuple(a for step in steps for a in step)
    if len(atoms) > MOST_OR_SLOTS or any(a.bound_filter is not None for a in atoms):
        return None
    step_of = tuple(i for i, step in enumerate(steps) for _ in step)
    return GroupShape(atoms, step_of, once, tuple(and_steps), tuple(iteration))


class GroupPatternOperator(ColumnPatternOperator):
    """Runs one :class:`ir.PatternRule` of a group shape for all keys of an engine."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef],
                 shape: GroupShape) -> None:
        super().__init__(rule, streams, shape.atoms, shape.atoms, shape, held=True)
        self.shape = shape

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's events, key by key, and WITHIN's expiries by the watermark."""
        from cep.engine.patterns.group_kernel import scan_group  # numba: only rules that need it

        batch = self.batch(tables)
        pending, shape = self.pending, self.shape
        n_pending = nrows(pending)
        n_slots = len(shape.atoms)
        starts, ends, group_code, held = self.key_runs(batch, n_pending)
        bits = pending[HELD][:, None] >> np.arange(n_slots, dtype=np.int64)[None, :] & 1
        bound0 = np.where(bits == 1, np.arange(n_pending)[:, None], -1).astype(np.int64)
        m_key, m_trigger, m_bound, step, first, bound = scan_group(
            starts, ends, held, np.ascontiguousarray(batch.masks),
            np.array(shape.step_of, dtype=np.int64),
            np.isin(np.arange(shape.n_steps), shape.and_steps), shape.n_steps,
            batch.rows.times,
            pending[STEP], pending[FIRST], bound0, n_pending,
            -1 if self.within is None else self.within, shape.once)
        out = self._output(group_code[m_key], m_trigger, m_bound, batch, n_pending)
        keep = np.flatnonzero((step != 0) | (bound >= 0).any(axis=1))
        walked = self.state_rows(group_code[keep], step[keep], first[keep], first[keep],
                                 bound[keep].T, batch, n_pending)
        self.replace_walked(walked, held, None)
        self._expire(clock.end)
        return out

    def _expire(self, end: int) -> None:
        """The instances whose WITHIN ran out by ``end``: gone (a fresh one waits, which
        holds nothing), or without ``every`` their keys done for good."""
        if self.within is None:
            return
        pending = self.pending
        expired = (pending[HELD] != 0) & (pending[FIRST] + self.within <= end)
        if not expired.any():
            return
        if not self.shape.once:
            self.pending = take(pending, ~expired)
            return
        self.pending = {**pending, STEP: np.where(expired, -1, pending[STEP]),
                        HELD: np.where(expired, 0, pending[HELD])}

    def _output(self, codes: np.ndarray, trigger: np.ndarray, bound: np.ndarray, batch,
                n_pending: int) -> Table:
        n = len(codes)
        if n == 0:
            return empty_output()
        seq, at, origin, ts = self.event_stamps(trigger, batch)
        env = Env(n, seq=seq)
        self.bind_matches(env, bound.T, self.shape.iteration, batch, n_pending)
        return self.emit_rows(env, batch.key_values[codes], Stamps(seq, at, origin), ts)

    def deadlines(self) -> np.ndarray:
        pending = self.pending
        if self.within is None:
            return np.full(nrows(pending), NEVER, dtype=np.int64)
        return np.where(pending[HELD] != 0, pending[FIRST] + self.within, NEVER)
