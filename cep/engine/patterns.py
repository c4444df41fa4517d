"""Per-key event-pattern matcher (``every``, ``->``, ``and``, ``or``, ``not``, ``[n]``, WITHIN).

The front end compiles a rule's ``PATTERN [...]`` into the node classes below; this module
knows nothing about the language. ``compile_pattern`` numbers the nodes and builds a small
interpreter (`Pattern`); the per-key state it works on (`PatternState`) is plain data: lists,
dicts, ints and `Event` tuples, never callables and never a reference to the `Pattern`, so a
key's state can be written mid-stream as data (`cep.engine.codec`) and handed to another
engine (``dumps_state`` / ``loads_state``). A state instance belongs to the pattern it was
made by; `Pattern.feed` checks a structural fingerprint so a state is never silently run
by another pattern.

Semantics follow Esper's pattern state machine, driven by events only (no wall clock):

* Events of one key are fed one at a time in sequence order. An instance created while an
  event is being processed never sees that event, so in ``a -> b`` the b is strictly after
  the a, and one event is never bound by two atoms of one match. The same event may play
  different roles in different instances (``every a=A -> b=A``: event 2 is the b of the
  instance started by event 1 and the a of a new instance).
* ``a`` (an atom) matches one event of its stream whose predicate is true, then is done.
  Its predicate sees the bindings made before it (``b=B(x > a.x)``).
* ``a -> b`` starts ``b`` once for every completion of ``a``; it is done when no part of it
  can complete again. ``A -> B`` on A1 A2 B1 B2 gives only (A1, B1).
* ``every x`` starts a fresh ``x`` for each completion of an instance of ``x`` and each
  time one becomes permanently false (Esper: "when the sub-expression turns true or false,
  restart it"); the fresh instance starts after the event that caused the restart. An
  instance of ``x`` that can still complete again (it contains an ``every``) is kept as
  well, exactly as in Esper, so ``every (a -> every b)`` accumulates instances and repeats
  matches (``every every a`` doubles at each a: it is not ``every a``). Their number never
  falls (WITHIN restarts an expired instance rather than dropping it), so the rule checker
  refuses such an ``every`` outside ``[n]`` and ``not``, which end their operand.
  ``every`` never finishes. ``every a -> b`` means ``(every a) -> b``.
* ``a and b``: Esper's rule. Each operand's completions are remembered; when an operand
  completes and every other non-``not`` operand has completed at least once, one match is
  produced per combination with the remembered completions. It is done when all its
  non-``not`` operands are done (an operand that emits several completions on one event is
  done after the last of them), so ``a and b`` completes once. An event is offered to the
  operands of one ``and`` instance left to right and not to the operands after the first one
  that binds it (so ``a=A and b=A`` needs two A events).
* ``a or b``: every completion of either operand is passed on; the ``or`` is done as soon as
  an operand that completes is itself done (for plain atoms: on the first of either), and
  permanently false when all operands are. A non-finishing operand (one containing
  ``every``) therefore keeps emitting until the other operand completes.
* ``not x`` must be a direct operand of ``and`` (with at least one operand that is not a
  ``not``). It is true from the start and turns the ``and`` permanently false when ``x``
  completes for good; ``not`` operands are looked at first, so if one event satisfies both
  the ``not`` and another operand, the ``not`` wins and the instance dies. Tags under a
  ``not`` never appear in matches.
* ``[n] x``: Esper's tightly bounded repeat. One instance of ``x`` runs at a time (a new one
  starts, after the event, when the previous one is done); the repeat completes once, on
  the n-th completion of ``x``, and every tag bound inside ``x`` is then a list of events in
  match order (empty if no iteration bound it). Inside ``x`` a tag is a single event of the
  current iteration; earlier iterations are not visible to predicates.
* Match-until ``[n:m] x until u`` (``[n:] x until u``, ``[:m] x``, ``x until u``,
  ``[n] x until u``): x repeats as in ``[n]``; the repeat completes on x's m-th completion,
  or when u completes if x completed at least n times by then (the match has u's tags as
  well); u completing earlier makes it permanently false. An event is offered to u first
  and, if u completes on it, not to x. Without an upper bound only u completes it.
* WITHIN T (whole pattern, microseconds): the clock of a partial instance starts at its
  earliest bound event by sequence number (``first``); when an event arrives with
  ``ts - first.ts >= T`` the instance is discarded before the event is considered for it,
  as if time had advanced first: an enclosing ``every`` restarts its operand and the fresh
  operand does see the event. So a match always has ``last.ts - first.ts < T`` (exclusive).
  ``every a -> b -> c WITHIN 24h`` gives each a its own clock. Events with an older
  timestamp than earlier ones are processed normally; only WITHIN looks at timestamps.
* ``timer:interval(T)`` is an atom that no event matches: it completes once event time
  passes ``start + T``, where start is the timestamp of the event during which the
  instance started (the key's first event for an instance that exists before any).
  Event time is per key and only events move it: before each event of the key, every
  timer whose deadline is at or before the event's timestamp fires, in passes (what a
  firing starts, starts at the deadline and may fire in the next pass), and only then is
  the event processed, so ``a -> (timer:interval(T) and not b)`` fires when the key's
  next event comes at a.ts + T or later, unless a b came strictly before. A timer
  never fires at the end of a bounded input (no event moves the clock). Matches a timer
  completes are reported with the event that moved the clock. Timers may not sit under
  ``[n]``, ``not`` or at the start of an ``every`` operand (which could fire without end).
* The matches produced by one event are ordered by the sequence number of their first
  event, then by creation order (the order the state tree yields them).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import product
from typing import Any, NamedTuple, Union

from cep.engine import codec


class Event(NamedTuple):
    """One input event of a key: global sequence number, timestamp (µs), stream, fields."""

    seq: int
    ts: int
    stream: str
    row: dict[str, object]


Bindings = dict[str, Union[Event, list[Event]]]  # noqa: UP007 -- a runtime alias
Predicate = Callable[[Event, Bindings], bool]


# --------------------------------------------------------------------------- pattern nodes


@dataclass(frozen=True)
class Atom:
    """``[tag=]stream(predicate)``: one event of ``stream`` for which the predicate holds."""

    tag: str | None
    stream: str
    predicate: Predicate | None = None
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class FollowedBy:
    """``left -> right``: ``right`` starts after each completion of ``left``."""

    left: PatternNode
    right: PatternNode
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class And:
    """``left and right``: both complete, in any order."""

    left: PatternNode
    right: PatternNode
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class Or:
    """``left or right``: either completes."""

    left: PatternNode
    right: PatternNode
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class Not:
    """``not operand``: only as a direct operand of `And`."""

    operand: PatternNode
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class Every:
    """``every operand``: restart the operand whenever it turns true or false."""

    operand: PatternNode
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class Repeat:
    """Esper's match-until: ``[count] operand`` (``high`` EXACT), ``[count:high] operand``
    (``high`` None: no upper bound), each optionally ``until`` another pattern."""

    count: int
    operand: PatternNode
    node_id: int = field(default=-1, compare=False)
    high: int | None = -1  # EXACT: as many as count
    until: PatternNode | None = None

    @property
    def most(self) -> int | None:
        """The completion of the operand that completes the repeat (None: only until)."""
        return self.count if self.high == EXACT else self.high


EXACT = -1


@dataclass(frozen=True)
class Timer:
    """``timer:interval(T)``: completes, binding nothing, once the key's event time has
    passed T after the instance started (see the module docstring)."""

    us: int
    node_id: int = field(default=-1, compare=False)


PatternNode = Union[Atom, FollowedBy, And, Or, Not, Every, Repeat, Timer]  # noqa: UP007


@dataclass(slots=True)
class Match:
    """One complete match: tag bindings and the event that completed it."""

    bindings: Bindings
    trigger: Event


@dataclass(slots=True)
class PatternState:
    """The per-key state of one pattern: plain data only (see ``dumps_state``).

    ``root`` is the instance of the pattern's root node, or None once the pattern can never
    match again. Instances are lists and tuples whose position in the tree says which node
    they belong to, so nothing in here refers to code.
    """

    fingerprint: int
    root: Any


# --------------------------------------------------------------------------- runtime
#
# Each step returns a status code: the low two bits say what became of the instance, the
# TOUCHED bit says that one of its atoms bound the event (used by `and` to offer an event
# to one operand only). Completions are appended to the caller's list as
# (bindings, first event by seq) pairs; "first" drives WITHIN without rescanning bindings.

ALIVE = 0  # still running
DONE = 1  # finished after completing (its completions are in the output list)
FALSE = 2  # permanently false because of this event
EXPIRED = 3  # permanently false because WITHIN ran out before this event
TOUCHED = 4

Completion = tuple[Bindings, Event]


class _Atom:
    """Atom runtime; ``persistent`` is ``every <atom>``, which stays after matching."""

    is_atom = True
    timed = False

    def __init__(self, node: Atom, within: int | None, persistent: bool) -> None:
        self.tag = node.tag
        self.stream = node.stream
        self.pred = node.predicate
        self.within = within
        self.persistent = persistent

    def start(self, begin: Bindings, first: Event | None) -> tuple[Bindings, Event | None]:
        # The instance is (begin, first): the same shape as a completion, so a completion
        # of the previous step of a followed-by can be used as the instance as it is.
        return (begin, first)

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        begin, first = inst
        w = self.within
        if w is not None and first is not None and ev.ts - first.ts >= w:
            return EXPIRED
        if ev.stream != self.stream or (self.pred is not None and not self.pred(ev, begin)):
            return ALIVE
        tag = self.tag
        out.append(({**begin, tag: ev} if tag is not None else begin,
                    first if first is not None else ev))
        return (ALIVE if self.persistent else DONE) | TOUCHED

    def purge(self, inst: Any, ts: int) -> int:
        first = inst[1]
        return EXPIRED if first is not None and ts - first.ts >= self.within else ALIVE


class _Clock:
    """The event time at which instances start (shared by one pattern's runtime nodes;
    keys are fed one event at a time, so one value serves them all)."""

    now: int | None = None


class _Timer:
    """``timer:interval``; instance [begin, first, deadline] (deadline None until the key's
    first event when the instance exists before any event)."""

    is_atom = False
    timed = True

    def __init__(self, node: Timer, clock: _Clock, within: int | None) -> None:
        self.us = node.us
        self.clock = clock
        self.within = within

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        now = self.clock.now
        return [begin, first, None if now is None else now + self.us]

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        if self.purge(inst, ev.ts) == EXPIRED:
            return EXPIRED
        if inst[2] is None:
            inst[2] = ev.ts + self.us
        return ALIVE

    def tick(self, inst: Any, now: int, out: list[Completion]) -> int:
        deadline = inst[2]
        if deadline is None or deadline > now:
            return ALIVE
        if self.purge(inst, deadline) == EXPIRED:
            return EXPIRED
        self.clock.now = deadline  # what this completion starts, starts at the deadline
        out.append((inst[0], inst[1]))
        return DONE

    def purge(self, inst: Any, ts: int) -> int:
        first = inst[1]
        w = self.within
        return EXPIRED if w is not None and first is not None and ts - first.ts >= w else ALIVE


class _FollowedBy:
    """n-ary followed-by (``a -> b -> c`` flattened); instance [begin, first, levels].

    ``levels[k]`` holds the running instances of child k. Levels are stepped from the last
    to the first, so an instance started by a completion during this event is never stepped
    with the same event. Atom children are stepped inline: this is the hot path.
    """

    is_atom = False

    def __init__(self, children: list[Any], within: int | None) -> None:
        self.children = children
        self.last = len(children) - 1
        self.within = within
        self.timed = any(c.timed for c in children)

    def tick(self, inst: Any, now: int, out: list[Completion]) -> int:
        """Fire the timers due by ``now`` (see `_Timer`); same status codes as ``step``."""
        levels = inst[2]
        children = self.children
        emitted = False
        for k in range(self.last, -1, -1):
            child = children[k]
            if not child.timed or not levels[k]:
                continue
            keep = []
            for ci in levels[k]:
                tmp: list[Completion] = []
                if child.tick(ci, now, tmp) & 3 == ALIVE:
                    keep.append(ci)
                for comp in tmp:
                    if k == self.last:
                        out.append(comp)
                        emitted = True
                    else:
                        nchild = children[k + 1]
                        levels[k + 1].append(comp if nchild.is_atom else nchild.start(*comp))
            levels[k] = keep
        if any(levels):
            return ALIVE
        return DONE if emitted else FALSE

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        levels: list[list[Any]] = [[] for _ in self.children]
        levels[0].append(self.children[0].start(begin, first))
        return [begin, first, levels]

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        first = inst[1]
        w = self.within
        ts = ev.ts
        if w is not None and first is not None and ts - first.ts >= w:
            return EXPIRED
        levels = inst[2]
        children = self.children
        last = self.last
        stream = ev.stream
        emitted = survived = touched = False
        for k in range(last, -1, -1):
            lst = levels[k]
            if not lst:
                continue
            child = children[k]
            keep: list[Any] | None = None
            if child.is_atom:
                cstream = child.stream
                if stream != cstream and w is None:
                    survived = True
                    continue  # nothing can happen to these atoms
                pred = child.pred
                tag = child.tag
                persistent = child.persistent
                nxt = levels[k + 1] if k < last else None
                nchild = children[k + 1] if k < last else None
                for i, ci in enumerate(lst):
                    cb, cf = ci
                    if w is not None and cf is not None and ts - cf.ts >= w:
                        if keep is None:
                            keep = lst[:i]
                        continue
                    survived = True
                    if stream == cstream and (pred is None or pred(ev, cb)):
                        touched = True
                        comp = ({**cb, tag: ev} if tag is not None else cb,
                                cf if cf is not None else ev)
                        if nxt is None:
                            out.append(comp)
                            emitted = True
                        elif nchild.is_atom:
                            nxt.append(comp)
                        else:
                            nxt.append(nchild.start(*comp))
                        if not persistent:
                            if keep is None:
                                keep = lst[:i]
                            continue
                    if keep is not None:
                        keep.append(ci)
            else:
                tmp: list[Completion] = []
                for i, ci in enumerate(lst):
                    st = child.step(ci, ev, tmp)
                    code = st & 3
                    if st & TOUCHED:
                        touched = True
                    if code != EXPIRED:
                        survived = True
                    if tmp:
                        if k == last:
                            out.extend(tmp)
                            emitted = True
                        else:
                            nchild = children[k + 1]
                            nxt = levels[k + 1]
                            for comp in tmp:
                                nxt.append(nchild.start(*comp))
                        tmp.clear()
                    if code:
                        if keep is None:
                            keep = lst[:i]
                    elif keep is not None:
                        keep.append(ci)
            if keep is not None:
                levels[k] = keep
        flag = TOUCHED if touched else 0
        for lst in levels:
            if lst:
                return ALIVE | flag
        if emitted:
            return DONE | flag
        return (FALSE if survived else EXPIRED) | flag

    def purge(self, inst: Any, ts: int) -> int:
        first = inst[1]
        if first is not None and ts - first.ts >= self.within:
            return EXPIRED
        levels = inst[2]
        alive = False
        for k, lst in enumerate(levels):
            if lst:
                child = self.children[k]
                keep = [ci for ci in lst if child.purge(ci, ts) != EXPIRED]
                levels[k] = keep
                alive = alive or bool(keep)
        return ALIVE if alive else EXPIRED


class _Every:
    """``every x`` for a non-atom x; instance [begin, first, running instances of x]."""

    is_atom = False

    def __init__(self, child: Any, within: int | None) -> None:
        self.child = child
        self.within = within
        self.timed = child.timed

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        return [begin, first, [self.child.start(begin, first)]]

    def tick(self, inst: Any, now: int, out: list[Completion]) -> int:
        begin, first, kids = inst
        child = self.child
        keep: list[Any] = []
        spawned: list[Any] = []
        for ci in kids:
            tmp: list[Completion] = []
            code = child.tick(ci, now, tmp) & 3
            if code == ALIVE:
                keep.append(ci)
            for _ in range(len(tmp) + (code != ALIVE and not tmp)):
                spawned.append(child.start(begin, first))
            out.extend(tmp)
        inst[2] = keep + spawned
        return ALIVE

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        begin, first, kids = inst
        w = self.within
        if w is not None and first is not None and ev.ts - first.ts >= w:
            return EXPIRED
        child = self.child
        work = list(kids)
        keep: list[Any] = []
        spawned: list[Any] = []
        touched = 0
        tmp: list[Completion] = []
        i = 0
        while i < len(work):
            ci = work[i]
            i += 1
            st = child.step(ci, ev, tmp)
            code = st & 3
            touched |= st & TOUCHED
            if code == EXPIRED:
                # Expired before this event: the restart happened "earlier", so it sees it.
                work.append(child.start(begin, first))
                continue
            if code == ALIVE:
                keep.append(ci)
            # Like Esper, one restart per completion (and one for turning false).
            for _ in range(len(tmp) + (code == FALSE)):
                spawned.append(child.start(begin, first))
            if tmp:
                out.extend(tmp)
                tmp.clear()
        # Instances stay in creation order, which orders the matches of one event.
        inst[2] = keep + spawned
        return ALIVE | touched

    def purge(self, inst: Any, ts: int) -> int:
        begin, first, kids = inst
        if first is not None and ts - first.ts >= self.within:
            return EXPIRED
        child = self.child
        inst[2] = [ci if child.purge(ci, ts) != EXPIRED else child.start(begin, first)
                   for ci in kids]
        return ALIVE


class _Or:
    """n-ary or; instance [begin, first, instance or None per operand]."""

    is_atom = False

    def __init__(self, children: list[Any], within: int | None) -> None:
        self.children = children
        self.within = within
        self.timed = any(c.timed for c in children)

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        return [begin, first, [c.start(begin, first) for c in self.children]]

    def tick(self, inst: Any, now: int, out: list[Completion]) -> int:
        kids = inst[2]
        for i, child in enumerate(self.children):
            if kids[i] is None or not child.timed:
                continue
            code = child.tick(kids[i], now, out) & 3
            if code == DONE:
                return DONE
            if code:
                kids[i] = None
        return FALSE if all(ci is None for ci in kids) else ALIVE

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        first = inst[1]
        w = self.within
        if w is not None and first is not None and ev.ts - first.ts >= w:
            return EXPIRED
        kids = inst[2]
        touched = 0
        survived = False
        for i, child in enumerate(self.children):
            ci = kids[i]
            if ci is None:
                continue
            st = child.step(ci, ev, out)
            code = st & 3
            touched |= st & TOUCHED
            if code != EXPIRED:
                survived = True
            if code == DONE:
                return DONE | touched
            if code:
                kids[i] = None
        if all(ci is None for ci in kids):
            return (FALSE if survived else EXPIRED) | touched
        return ALIVE | touched

    def purge(self, inst: Any, ts: int) -> int:
        first = inst[1]
        if first is not None and ts - first.ts >= self.within:
            return EXPIRED
        kids = inst[2]
        for i, child in enumerate(self.children):
            if kids[i] is not None and child.purge(kids[i], ts) == EXPIRED:
                kids[i] = None
        return EXPIRED if all(ci is None for ci in kids) else ALIVE


class _Not:
    """``not x`` inside an and; instance [instance of x].

    Step result, read by `_And`: FALSE when x completed for good (the and dies), DONE when x
    can never complete (the not is inert and is dropped), ALIVE otherwise.
    """

    is_atom = False

    timed = False  # the checker keeps timers out of 'not'

    def __init__(self, child: Any) -> None:
        self.child = child

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        return [self.child.start(begin, first)]

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        tmp: list[Completion] = []
        code = self.child.step(inst[0], ev, tmp) & 3
        if code == DONE:
            return FALSE
        return DONE if code else ALIVE

    def purge(self, inst: Any, ts: int) -> int:
        return self.child.purge(inst[0], ts)


class _And:
    """n-ary and; instance [begin, first, instance or None per operand, stored completions].

    ``stored[i]`` is None until operand i has completed, then the list of its completions
    still usable for combinations (Esper's ``eventsPerChild``).
    """

    is_atom = False

    def __init__(self, children: list[Any], within: int | None) -> None:
        self.children = children
        self.within = within
        self.nots = [i for i, c in enumerate(children) if isinstance(c, _Not)]
        self.ops = [i for i, c in enumerate(children) if not isinstance(c, _Not)]
        self.timed = any(c.timed for c in children)

    def tick(self, inst: Any, now: int, out: list[Completion]) -> int:
        kids = inst[2]
        for i in self.ops:
            child = self.children[i]
            if kids[i] is None or not child.timed:
                continue
            tmp: list[Completion] = []
            code = child.tick(kids[i], now, tmp) & 3
            for n, comp in enumerate(tmp, 1):
                if code == DONE and n == len(tmp):
                    kids[i] = None
                if self._combine(inst, i, comp, out):
                    return DONE
            if code > DONE:
                return FALSE
        return ALIVE

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        return [begin, first, [c.start(begin, first) for c in self.children],
                [None] * len(self.children)]

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        w = self.within
        if w is not None and self.purge(inst, ev.ts) == EXPIRED:
            return EXPIRED
        kids = inst[2]
        children = self.children
        for i in self.nots:
            ci = kids[i]
            if ci is not None:
                code = children[i].step(ci, ev, out)
                if code == FALSE:
                    return FALSE
                if code:
                    kids[i] = None
        touched = 0
        tmp: list[Completion] = []
        for i in self.ops:
            ci = kids[i]
            if ci is None:
                continue
            st = children[i].step(ci, ev, tmp)
            code = st & 3
            touched |= st & TOUCHED
            # An operand that finishes does so with its last completion (an `or` may pass
            # on completions of a still-running operand before the one that ends it).
            for n, comp in enumerate(tmp, 1):
                if code == DONE and n == len(tmp):
                    kids[i] = None
                if self._combine(inst, i, comp, out):
                    return DONE | touched
            tmp.clear()
            if code > DONE:
                return FALSE | touched
            if touched:
                break  # the event is bound in this and instance: later operands don't get it
        return ALIVE | touched

    def _combine(self, inst: Any, i: int, comp: Completion, out: list[Completion]) -> bool:
        """Esper's ``EvalAndStateNode.evaluateTrue``; returns True when the and is done."""
        kids = inst[2]
        stored = inst[3]
        others = [j for j in self.ops if j != i]
        if any(stored[j] is None for j in others):
            self._store(stored, i, comp)
            return False
        if any(kids[j] is not None for j in others):
            self._store(stored, i, comp)
        for combo in product(*(stored[j] for j in others)):
            bindings = dict(comp[0])
            first = comp[1]
            for b, f in combo:
                bindings.update(b)
                if f.seq < first.seq:
                    first = f
            out.append((bindings, first))
        return all(kids[j] is None for j in self.ops)

    @staticmethod
    def _store(stored: list[Any], i: int, comp: Completion) -> None:
        if stored[i] is None:
            stored[i] = [comp]
        else:
            stored[i].append(comp)

    def purge(self, inst: Any, ts: int) -> int:
        w = self.within
        first = inst[1]
        if first is not None and ts - first.ts >= w:
            return EXPIRED
        kids = inst[2]
        stored = inst[3]
        children = self.children
        for i in self.ops:
            s = stored[i]
            if s is not None:
                s = [c for c in s if ts - c[1].ts < w]
                stored[i] = s or None
            ci = kids[i]
            if ci is not None and children[i].purge(ci, ts) == EXPIRED:
                return EXPIRED
            if ci is None and stored[i] is None:
                return EXPIRED  # done operand whose completions all ran out: can't complete
        for i in self.nots:
            if kids[i] is not None and children[i].purge(kids[i], ts) == EXPIRED:
                kids[i] = None
        return ALIVE


class _Repeat:
    """Match-until; instance [begin, begin_first, first, count, acc lists by tag,
    x instance] plus the until instance (or None once it can never complete) when the
    repeat has an until.

    ``begin_first`` is what a restarted x begins with; ``first`` is the WITHIN clock, which
    also covers the events collected in earlier iterations.
    """

    is_atom = False
    timed = False  # the checker keeps timers out of repeats

    def __init__(self, count: int, most: int | None, child: Any, until: Any,
                 tags: tuple[str, ...], within: int | None):
        self.count = count
        self.most = most
        self.child = child
        self.until = until
        self.tags = tags
        self.within = within

    def start(self, begin: Bindings, first: Event | None) -> list[Any]:
        inst = [begin, first, first, 0, {t: [] for t in self.tags},
                self.child.start(begin, first)]
        if self.until is not None:
            inst.append(self.until.start(begin, first))
        return inst

    def step(self, inst: Any, ev: Event, out: list[Completion]) -> int:
        begin, bfirst, first, count, acc, ci = inst[:6]
        w = self.within
        if w is not None and first is not None and ev.ts - first.ts >= w:
            return EXPIRED
        touched = 0
        if self.until is not None and inst[6] is not None:
            ended: list[Completion] = []
            st = self.until.step(inst[6], ev, ended)
            touched = st & TOUCHED
            if ended:
                if count < self.count:
                    return FALSE | touched
                bindings, ufirst = ended[0]
                if first is None or ufirst.seq < first.seq:
                    first = ufirst
                out.append(({**bindings, **begin, **acc}, first))
                return DONE | touched
            if st & 3:
                inst[6] = None
                if self.most is None:  # nothing else can end it
                    return (st & 3) | touched
        tmp: list[Completion] = []
        st = self.child.step(ci, ev, tmp)
        code = st & 3
        touched |= st & TOUCHED
        for b, f in tmp:
            count += 1
            for t in self.tags:
                v = b.get(t)
                if isinstance(v, list):
                    acc[t].extend(v)
                elif v is not None:
                    acc[t].append(v)
            if first is None:
                first = f
            if count == self.most:
                out.append(({**begin, **acc}, first))
                return DONE | touched
        inst[2] = first
        inst[3] = count
        if code == DONE:
            inst[5] = self.child.start(begin, bfirst)
        elif code:
            return code | touched
        return ALIVE | touched

    def purge(self, inst: Any, ts: int) -> int:
        first = inst[2]
        if first is not None and ts - first.ts >= self.within:
            return EXPIRED
        if (self.until is not None and inst[6] is not None
                and self.until.purge(inst[6], ts) == EXPIRED):
            inst[6] = None
            if self.most is None:
                return EXPIRED
        return self.child.purge(inst[5], ts)


# --------------------------------------------------------------------------- compiling


def _children(node: PatternNode) -> tuple[PatternNode, ...]:
    if isinstance(node, Atom | Timer):
        return ()
    if isinstance(node, (FollowedBy, And, Or)):
        return (node.left, node.right)
    if isinstance(node, Repeat) and node.until is not None:
        return (node.operand, node.until)
    return (node.operand,)


def _number(node: PatternNode, counter: list[int], nodes: list[PatternNode]) -> PatternNode:
    """Rebuild the tree with node ids in pre-order (ids index ``Pattern.nodes``)."""
    if not isinstance(node, (Atom, FollowedBy, And, Or, Not, Every, Repeat, Timer)):
        raise TypeError(f"not a pattern node: {node!r}")
    node_id = counter[0]
    counter[0] += 1
    nodes.append(node)  # placeholder, replaced below once the children are numbered
    if isinstance(node, Atom | Timer):
        new: PatternNode = dataclasses.replace(node, node_id=node_id)
    elif isinstance(node, (FollowedBy, And, Or)):
        left = _number(node.left, counter, nodes)
        right = _number(node.right, counter, nodes)
        new = dataclasses.replace(node, left=left, right=right, node_id=node_id)
    else:
        if isinstance(node, Repeat) and not _valid_range(node):
            raise ValueError(f"repeat count must be a positive int, got {node.count!r}")
        operand = _number(node.operand, counter, nodes)
        new = dataclasses.replace(node, operand=operand, node_id=node_id)
        if isinstance(node, Repeat) and node.until is not None:
            new = dataclasses.replace(new, until=_number(node.until, counter, nodes))
    nodes[node_id] = new
    return new


def _valid_range(node: Repeat) -> bool:
    """A repeat completes at its ``most``-th iteration or by its until: at least once."""
    if not isinstance(node.count, int) or node.count < 0:
        return False
    if node.high == EXACT:
        return node.count >= 1
    if node.high is None:
        return node.until is not None
    return isinstance(node.high, int) and node.high >= max(node.count, 1)


def _flatten(node: PatternNode, kind: type) -> list[PatternNode]:
    """Operands of a chain of one binary operator: ``(a -> b) -> c`` is ``[a, b, c]``."""
    if isinstance(node, kind):
        return _flatten(node.left, kind) + _flatten(node.right, kind)  # type: ignore[union-attr]
    return [node]


def _tags(node: PatternNode, under_not: bool = True) -> list[str]:
    """Tags bound in the subtree (those under a ``not`` only if ``under_not``).

    Raises ValueError on a tag bound twice, which would make bindings ambiguous.
    """
    if isinstance(node, Atom):
        return [node.tag] if node.tag is not None else []
    if isinstance(node, Not) and not under_not:
        return []
    if isinstance(node, Or):
        # Alternatives never bind together, so they may reuse a tag.
        return sorted(set(_tags(node.left, under_not)) | set(_tags(node.right, under_not)))
    found: list[str] = []
    for child in _children(node):
        for tag in _tags(child, under_not):
            if tag in found:
                raise ValueError(f"pattern tag {tag!r} is bound more than once")
            found.append(tag)
    return found


def _describe(node: PatternNode) -> str:
    """Structure of the numbered tree (no predicates): the state fingerprint's input."""
    name = type(node).__name__
    if isinstance(node, Atom):
        return f"{name}#{node.node_id}({node.tag!r},{node.stream!r},{node.predicate is None})"
    if isinstance(node, Timer):
        return f"{name}#{node.node_id}({node.us})"
    extra = f"{node.count}:{node.high}," if isinstance(node, Repeat) else ""
    inner = ",".join(_describe(c) for c in _children(node))
    return f"{name}#{node.node_id}({extra}{inner})"


def _build(node: PatternNode, within: int | None, clock: _Clock) -> Any:
    """Runtime object for a numbered node; checks where ``not`` and timers may appear."""
    if isinstance(node, Atom):
        return _Atom(node, within, persistent=False)
    if isinstance(node, Timer):
        return _Timer(node, clock, within)
    if isinstance(node, Not):
        raise ValueError("'not' is only allowed as a direct operand of 'and'")
    if isinstance(node, Every):
        if isinstance(node.operand, Atom):
            return _Atom(node.operand, within, persistent=True)
        if _starts_with_timer(node.operand):
            raise ValueError("'every' over a pattern that starts with a timer fires without "
                             "events")
        return _Every(_build(node.operand, within, clock), within)
    if isinstance(node, Repeat):
        if _has_timer(node):
            raise ValueError("timer:interval is not supported inside a repeat or a 'not'")
        tags = tuple(_tags(node.operand, under_not=False))
        until = _build(node.until, within, clock) if node.until is not None else None
        return _Repeat(node.count, node.most, _build(node.operand, within, clock), until, tags,
                       within)
    if isinstance(node, FollowedBy):
        return _FollowedBy([_build(c, within, clock) for c in _flatten(node, FollowedBy)],
                           within)
    if isinstance(node, Or):
        return _Or([_build(c, within, clock) for c in _flatten(node, Or)], within)
    operands = _flatten(node, And)
    if all(isinstance(c, Not) for c in operands):
        raise ValueError("an 'and' needs at least one operand that is not a 'not'")
    if any(isinstance(c, Not) and _has_timer(c) for c in operands):
        raise ValueError("timer:interval is not supported inside a repeat or a 'not'")
    return _And([_Not(_build(c.operand, within, clock)) if isinstance(c, Not)
                 else _build(c, within, clock) for c in operands], within)


def _has_timer(node: PatternNode) -> bool:
    return isinstance(node, Timer) or any(_has_timer(c) for c in _children(node))


def _starts_with_timer(node: PatternNode) -> bool:
    """Whether the pattern can complete before any event: a timer it starts with."""
    if isinstance(node, Timer):
        return True
    if isinstance(node, FollowedBy):
        return _starts_with_timer(node.left)
    if isinstance(node, And | Or):
        return _starts_with_timer(node.left) or _starts_with_timer(node.right)
    return isinstance(node, Every | Repeat) and _starts_with_timer(node.operand)


def compile_pattern(root: PatternNode, within_us: int | None = None) -> Pattern:
    """Number the nodes, validate the tree and build its interpreter.

    Raises ValueError for a ``not`` outside an ``and``, an ``and`` of only ``not``s, a tag
    bound twice (except in alternatives of an ``or``), a repeat count below 1 or a
    non-positive WITHIN.
    """
    if within_us is not None and (not isinstance(within_us, int) or within_us <= 0):
        raise ValueError(f"WITHIN must be a positive number of microseconds, got {within_us!r}")
    nodes: list[PatternNode] = []
    numbered = _number(root, [0], nodes)
    _tags(numbered)
    clock = _Clock()
    runtime = _build(numbered, within_us, clock)
    fingerprint = zlib.crc32(f"{_describe(numbered)}|{within_us}".encode())
    return Pattern(numbered, tuple(nodes), within_us, runtime, fingerprint, clock)


class Pattern:
    """A compiled pattern: the numbered tree plus its interpreter. Immutable; one per rule,
    shared by all keys (each key has its own `PatternState`)."""

    def __init__(self, root: PatternNode, nodes: tuple[PatternNode, ...],
                 within_us: int | None, runtime: Any, fingerprint: int,
                 clock: _Clock) -> None:
        self.root = root
        self.nodes = nodes
        self.within_us = within_us
        self.fingerprint = fingerprint
        self._runtime = runtime
        self._clock = clock

    def new_state(self) -> PatternState:
        """The state of a key that has seen no events yet."""
        self._clock.now = None  # its timers start at its first event
        return PatternState(self.fingerprint, self._runtime.start({}, None))

    def feed(self, state: PatternState, event: Event) -> list[Match]:
        """Process the key's next event (in sequence order), mutating ``state``.

        Returns the matches this event completed, ordered by the sequence number of their
        first event, then by creation order.
        """
        if state.fingerprint != self.fingerprint:
            raise ValueError("this pattern state belongs to a different pattern")
        root = state.root
        if root is None:
            return []
        out: list[Completion] = []
        if self._runtime.timed:
            for _ in range(len(self.nodes)):  # a pass per timer a firing can start
                fired: list[Completion] = []
                code = self._runtime.tick(root, event.ts, fired) & 3
                out.extend(fired)
                if code:
                    state.root = None
                    break
                if not fired:
                    break
        self._clock.now = event.ts
        if state.root is not None and self._runtime.step(root, event, out) & 3:
            state.root = None
        if not out:
            return []
        if len(out) > 1:
            out.sort(key=lambda comp: comp[1].seq if comp[1] is not None else event.seq)
        return [Match(dict(b), event) for b, _ in out]

    def is_exhausted(self, state: PatternState) -> bool:
        """True when no further match is possible (a pattern without ``every`` that
        matched, died on a ``not``, or ran out of time)."""
        return state.root is None


codec.register("pattern.Event", Event)
codec.register("pattern.PatternState", PatternState)


def dumps_state(state: PatternState) -> bytes:
    """Serialise a state (plain data and `Event` tuples) in the codec's format."""
    return codec.encode(state, "pattern")


def loads_state(data: bytes) -> PatternState:
    """Inverse of `dumps_state`; anything else raises `codec.StateFormatError`."""
    state = codec.decode(data, "pattern", "pattern state")
    if type(state) is not PatternState:
        raise codec.StateFormatError("pattern state holds no PatternState; refusing to load it")
    return state
