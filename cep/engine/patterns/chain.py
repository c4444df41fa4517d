"""Followed-by chains as "next occurrence" searches over a batch's sorted columns.

The pattern shapes people write most, ``every a -> b [-> c ...] [WITHIN t]`` and the
absence or follow-up timer ``every a -> (timer:interval(t) and not b)`` /
``every a -> timer:interval(t)``, need no automaton: under :mod:`cep.engine.patterns.interpreter`'
semantics each ``a`` starts its own instance, whose ``b`` is the first event after the
``a`` (in the key's processing order) that satisfies b's filter, whose ``c`` is the first
after that ``b``, and so on; the instance dies when event time reaches ``a.ts + t``
(WITHIN), and a ``not b`` kills a timer's instance when the first such ``b`` comes before
the deadline. A step may be an ``or`` of atoms (``every a -> (b or c) -> d``, and
``every (a or b) -> c`` at the head): its event is the first after the previous step's
that any alternative's filter takes, bound to the leftmost alternative that takes it
(the interpreter offers an event to an ``or``'s operands left to right and the first
that completes ends the ``or``); the other alternatives' tags stay unbound. A step
after the first may be an ``and`` of atoms (``every a -> (b and c) -> d``): each atom's
event is the first after the previous step's that its filter takes and that no atom
left of it in the ``and`` binds (the interpreter offers an event to the ``and``'s
operands left to right, not past the first that binds it), and the step is done at the
last of them.

With a batch's candidate rows sorted by (key, time, seq), "the first row of atom j after
row r" is one ``np.searchsorted`` in the sorted positions of atom j's filter, for every
instance at once (ZStream's join view of a sequence; see ``docs/architecture.md``).

A filter that reads earlier tags (``b=S(v > a.v)``) is a residual check: candidates are
tried in order, a doubling number of them per instance and round, the check evaluated
column-wise over all (instance, candidate) pairs of the round, so the rounds are
logarithmic in the longest run of failing candidates (the pairs of a round are capped, so
memory stays bounded when many instances keep failing).

This module is arrays only: :mod:`cep.engine.patterns.chain_rule` turns batches and key
state into them and the instances back into matches and state. The interpreter
(:mod:`cep.engine.patterns.interpreter`) stays the definition of these semantics and the
path of every other shape; ``tests/engine/test_pattern_chain.py`` compares the two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from grammar import ir

#: "No WITHIN": a limit no event time reaches.
NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class ChainShape:
    """``every atoms[0] -> atoms[1] -> ... [-> timer:interval(timer_us) [and not absent]]``.

    ``atoms`` are the slots of a partial match in pattern order; ``step_of`` (None: one
    atom per step) gives each slot its step where steps are ``or``s of atoms, which
    :class:`cep.engine.patterns.chain_rule.ChainPatternOperator` adds to the state fingerprint
    (a plain chain's fingerprint stays what it was)."""

    atoms: tuple[ir.PAtom, ...]
    timer_us: int | None = None
    absent: ir.PAtom | None = None
    step_of: tuple[int, ...] | None = field(default=None, repr=False)
    and_steps: tuple[int, ...] = field(default=(), repr=False)  # steps that are ``and``s
    #: per slot, its iteration of a ``[n] b`` (-1: not repeated); its tag reads ``b[i]``
    iteration: tuple[int, ...] = field(default=(), repr=False)

    def item(self, slot: int) -> int | None:
        """The index ``i`` of ``b[i]`` that slot ``slot`` binds (None: a plain tag)."""
        if not self.iteration or self.iteration[slot] < 0:
            return None
        return self.iteration[slot]

    @property
    def checked(self) -> tuple[ir.PAtom, ...]:
        """Every atom whose filter decides a search: the chain's and the absent one."""
        return self.atoms + ((self.absent,) if self.absent is not None else ())

    @property
    def n_steps(self) -> int:
        return len(self.atoms) if self.step_of is None else self.step_of[-1] + 1

    def slot_step(self, slot: int) -> int:
        """The step slot ``slot`` belongs to."""
        return slot if self.step_of is None else self.step_of[slot]

    def alternatives(self, step: int) -> list[int]:
        """The slots of step ``step``, left to right (the leftmost wins a tie)."""
        if self.step_of is None:
            return [step]
        return [j for j, s in enumerate(self.step_of) if s == step]


#: The most slots a chain holds with ``or`` steps (their bits in one int64 state column).
MOST_OR_SLOTS = 62


def chain_shape(pattern: ir.PNode) -> ChainShape | None:
    """The pattern as a chain, or None when it has another shape (the interpreter's)."""
    steps = followed_by_steps(pattern)
    head = steps[0]
    if not isinstance(head, ir.PEvery):
        return None
    head_atoms = alternatives_of(head.operand)
    if head_atoms is None:
        return None
    body: list[list[ir.PAtom]] = [head_atoms]
    and_steps: list[int] = []
    iteration: list[int] = [-1] * len(head_atoms)
    for step in steps[1:-1]:
        if not add_step(step, body, and_steps, iteration):
            return None
    last = steps[-1] if len(steps) > 1 else None
    timer_us = absent = None
    if last is not None:
        if add_step(last, body, and_steps, iteration):
            pass
        elif isinstance(last, ir.PTimer):
            timer_us = last.us
        elif isinstance(last, ir.PAnd):
            pair = (last.left, last.right)
            timer = next((p for p in pair if isinstance(p, ir.PTimer)), None)
            not_ = next((p for p in pair if isinstance(p, ir.PNot)
                         and isinstance(p.operand, ir.PAtom)), None)
            if timer is None or not_ is None:
                return None
            timer_us, absent = timer.us, not_.operand  # type: ignore[union-attr]
        else:
            return None
    atoms = tuple(a for step in body for a in step)
    if all(len(step) == 1 for step in body) and max(iteration) < 0:
        return ChainShape(atoms, timer_us, absent)
    if len(atoms) > MOST_OR_SLOTS:
        return None
    step_of = tuple(i for i, step in enumerate(body) for _ in step)
    return ChainShape(atoms, timer_us, absent, step_of,  # type: ignore[arg-type]
                      tuple(and_steps), tuple(iteration))


#: The most iterations of a ``[n] b`` inside a chain the kernel holds (a slot each).
MOST_ITERATIONS = 16


def add_step(node: ir.PNode, body: list[list[ir.PAtom]], and_steps: list[int],
              iteration: list[int]) -> bool:
    """Append a step (an atom, an ``or`` or an ``and`` of atoms) to ``body``, or the n
    steps of ``[n] b`` (an atom; the interpreter's repeat runs one
    iteration at a time, each from the event after the previous one's, and its filter
    sees the tags before the repeat only); False when ``node`` is none of these."""
    if (isinstance(node, ir.PRepeat) and node.until is None
            and isinstance(node.operand, ir.PAtom)):
        most = node.count if node.high == -1 else node.high
        if most is None or not 1 <= most <= MOST_ITERATIONS:
            return False
        for i in range(most):
            body.append([node.operand])
            iteration.append(i)
        return True
    atoms = alternatives_of(node)
    if atoms is None:
        atoms = conjuncts_of(node)
        if atoms is None:
            return False
        and_steps.append(len(body))
    body.append(atoms)
    iteration.extend([-1] * len(atoms))
    return True


def conjuncts_of(node: ir.PNode) -> list[ir.PAtom] | None:
    """An ``and`` of atoms as its atoms left to right; None otherwise."""
    if not isinstance(node, ir.PAnd):
        return None
    parts = []
    for side in (node.left, node.right):
        atoms = [side] if isinstance(side, ir.PAtom) else conjuncts_of(side)
        if atoms is None:
            return None
        parts.extend(atoms)
    return parts


def alternatives_of(node: ir.PNode) -> list[ir.PAtom] | None:
    """An atom, or an ``or`` of atoms, as its atoms left to right; None otherwise."""
    if isinstance(node, ir.PAtom):
        return [node]
    if isinstance(node, ir.POr):
        left, right = alternatives_of(node.left), alternatives_of(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def followed_by_steps(node: ir.PNode) -> list[ir.PNode]:
    """``x -> y -> z`` however it nests, as [x, y, z] (followed-by is associative)."""
    if isinstance(node, ir.PFollowedBy):
        return followed_by_steps(node.left) + followed_by_steps(node.right)
    return [node]


#: check(instances, rows) -> where the residual filter holds for each pair
Check = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Rows:
    """A batch's candidate rows sorted by (key code, effective time, processing order)."""

    codes: np.ndarray  # int64 key code per row
    times: np.ndarray  # int64 effective time per row


def first_hits(positions: np.ndarray, rows: Rows, cursor: np.ndarray, code: np.ndarray,
               limit: np.ndarray, check: Check | None) -> np.ndarray:
    """For each instance, the first row in ``positions`` (sorted row numbers where an
    atom's own filter holds) after row ``cursor``, of key ``code``, with time below
    ``limit`` and, given ``check``, passing it; -1 where there is none in the batch.

    Rows are sorted by key then time, so an instance's candidates are a prefix of the
    positions after its cursor that ends at the first one of another key or too late."""
    n = len(cursor)
    out = np.full(n, -1, dtype=np.int64)
    m = len(positions)
    if n == 0 or m == 0:
        return out
    at = np.searchsorted(positions, cursor, side="right")
    active = np.arange(n)
    width = 1
    while len(active):
        base = at[active]
        slots = base[:, None] + np.arange(width)[None, :]
        inside = slots < m
        cand = positions[np.minimum(slots, m - 1)]
        valid = (inside & (rows.codes[cand] == code[active][:, None])
                 & (rows.times[cand] < limit[active][:, None]))
        if check is None:
            ok = valid
        else:
            ok = np.zeros_like(valid)
            ii, jj = np.nonzero(valid)
            if len(ii):
                ok[ii, jj] = check(active[ii], cand[ii, jj])
        hit = ok.any(axis=1)
        out[active[hit]] = cand[hit, ok[hit].argmax(axis=1)]
        again = ~hit & valid[:, -1]  # every candidate of the round failed the check
        at[active[again]] = base[again] + width
        active = active[again]
        width = max(1, min(2 * width, _ROUND_CELLS // max(len(active), 1)))
    return out


#: At most this many (instance, candidate) pairs per round of :func:`first_hits`: many
#: instances whose check keeps failing widen their rounds no further than this.
_ROUND_CELLS = 1 << 22


@dataclass
class Instances:
    """Partial matches as columns: key code, atoms bound so far, the row after which the
    next atom is searched, first and last bound event's time, and per atom the bound
    row (an index the caller resolves; -1 while unbound)."""

    code: np.ndarray
    step: np.ndarray
    cursor: np.ndarray
    first: np.ndarray
    last: np.ndarray
    bound: np.ndarray  # int64 [atoms, instances]

    def take(self, index: np.ndarray) -> Instances:
        return Instances(self.code[index], self.step[index], self.cursor[index],
                         self.first[index], self.last[index], self.bound[:, index])

    def __len__(self) -> int:
        return len(self.code)


@dataclass(frozen=True)
class Outcome:
    """What a batch made of the instances: those complete (event-triggered: the last
    atom's row; timers: the deadline), and those still pending after the batch."""

    done: Instances
    fired: Instances
    deadline: np.ndarray  # per fired instance
    pending: Instances


def advance(shape: ChainShape, within: int | None, inst: Instances,
            positions: list[np.ndarray], absent_positions: np.ndarray | None, rows: Rows,
            row_base: int, end: int, checks: list[Check | None]) -> Outcome:
    """Walk every instance as far as the batch takes it (atoms after the first: each the
    first hit after the previous; then the timer and its absent atom), given the batch
    watermark ``end``. Bound rows found here are recorded as ``row_base + row``.

    ``positions[j]``: the sorted rows where atom j's own filter holds (j >= 1);
    ``checks[j]``: atom j's residual (index ``len(atoms)``: the absent atom's)."""
    n_atoms, n_steps = len(shape.atoms), shape.n_steps
    limit = inst.first + within if within is not None else np.full(len(inst), NEVER)
    for step in range(1, n_steps):
        sel = np.flatnonzero(inst.step == step)
        if len(sel) == 0:
            continue
        slots = shape.alternatives(step)
        if step in shape.and_steps:
            sel, r = _all_of(slots, sel, inst, positions, rows, limit, row_base, checks)
            if len(sel) == 0:
                continue
        else:
            hits = [first_hits(positions[j], rows, inst.cursor[sel], inst.code[sel],
                               limit[sel], _restricted(checks[j], sel)) for j in slots]
            hit, taken = _earliest(hits)
            sel, r = sel[hit >= 0], hit[hit >= 0]
            if len(slots) == 1:
                inst.bound[slots[0], sel] = row_base + r
            else:
                taken = taken[hit >= 0]
                for k, j in enumerate(slots):
                    inst.bound[j, sel[taken == k]] = row_base + r[taken == k]
        found = sel
        inst.cursor[found] = r
        inst.last[found] = rows.times[r]
        inst.step[found] = step + 1
    complete = inst.step == n_steps
    alive = ~complete & (limit > end)  # WITHIN not run out by the watermark
    if shape.timer_us is None:
        return Outcome(inst.take(np.flatnonzero(complete)), inst.take(_NONE), _NONE,
                       inst.take(np.flatnonzero(alive)))
    sel = np.flatnonzero(complete)
    deadline = inst.last[sel] + shape.timer_us
    live = deadline < limit[sel]  # else WITHIN discards it first
    sel, deadline = sel[live], deadline[live]
    if shape.absent is not None and absent_positions is not None:
        hit = first_hits(absent_positions, rows, inst.cursor[sel], inst.code[sel], deadline,
                         _restricted(checks[n_atoms], sel))
        sel, deadline = sel[hit < 0], deadline[hit < 0]
    due = deadline <= end
    waiting = np.sort(np.concatenate([np.flatnonzero(alive), sel[~due]]))
    return Outcome(inst.take(_NONE), inst.take(sel[due]), deadline[due], inst.take(waiting))


_NONE = np.empty(0, dtype=np.int64)


def _all_of(slots: list[int], sel: np.ndarray, inst: Instances,
            positions: list[np.ndarray], rows: Rows, limit: np.ndarray, row_base: int,
            checks: list[Check | None]) -> tuple[np.ndarray, np.ndarray]:
    """An ``and`` step of the instances ``sel``: bind each atom not bound yet to its
    first hit after the step's start that no atom left of it binds (an atom that binds
    an event keeps it from the atoms right of it). Returns the instances whose every
    atom is bound now and, for each, the row of the last: the step's end."""
    cursor, code = inst.cursor[sel], inst.code[sel]
    for k, j in enumerate(slots):
        todo = np.flatnonzero(inst.bound[j, sel] < 0)
        if len(todo) == 0:
            continue
        check = _restricted(checks[j], sel)
        taken = inst.bound[slots[:k]][:, sel[todo]] - row_base  # rows the left ones bind
        hit = first_hits(positions[j], rows, cursor[todo], code[todo], limit[sel[todo]],
                         _restricted(check, todo) if check is not None else None)
        for _ in range(k):  # at most one retry per atom on the left
            clash = np.flatnonzero((hit >= 0) & (taken == hit[None, :]).any(axis=0))
            if len(clash) == 0:
                break
            hit[clash] = first_hits(positions[j], rows, hit[clash], code[todo[clash]],
                                    limit[sel[todo[clash]]],
                                    _restricted(check, todo[clash])
                                    if check is not None else None)
        got = hit >= 0
        inst.bound[j, sel[todo[got]]] = row_base + hit[got]
    held = inst.bound[slots][:, sel]
    done = (held >= 0).all(axis=0)
    last = np.where(held >= row_base, held - row_base, -1).max(axis=0, initial=-1)
    return sel[done], last[done]


def _earliest(hits: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per instance, the earliest of the alternatives' hits (-1: none) and which
    alternative made it: the leftmost of those that hit that row."""
    if len(hits) == 1:
        return hits[0], _NONE  # one alternative: nothing to choose
    stacked = np.stack(hits)
    rank = np.where(stacked >= 0, stacked, NEVER)
    taken = rank.argmin(axis=0)  # argmin's first minimum: the leftmost alternative
    best = rank[taken, np.arange(stacked.shape[1])]
    return np.where(best == NEVER, -1, best), taken


def _restricted(check: Check | None, sel: np.ndarray) -> Check | None:
    """``check`` over the instances ``sel`` (whose local numbers :func:`first_hits` uses)."""
    if check is None:
        return None
    return lambda which, cand: check(sel[which], cand)
