"""Per-key event-pattern matcher (``every``, ``->``, ``and``, ``or``, ``not``, ``[n]``, WITHIN).

:mod:`cep.engine.patterns.rule` turns a rule's ``PATTERN [...]`` into the nodes of
:mod:`cep.engine.patterns.nodes`; the matcher knows nothing about the language.
``compile_pattern`` numbers the nodes and builds a small interpreter (`Pattern`, whose
per-node steps are in :mod:`cep.engine.patterns.node_runtime` and
:mod:`cep.engine.patterns.node_combinators`); the per-key state it works on
(`PatternState`) is plain data: lists, dicts, ints and `Event` tuples, never callables and
never a reference to the `Pattern`, so a key's state can be written mid-stream as data
(`cep.engine.codec`, inside the engine's snapshot and key documents) and handed to another
engine. A state instance belongs to the pattern it was made by; `Pattern.feed` checks a
structural fingerprint so a state is never silently run by another pattern.

Semantics follow Esper's pattern state machine, driven by events and event time (no
wall clock):

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
  earliest bound event by sequence number (``first``); once event time reaches
  ``first.ts + T`` the instance is discarded (an enclosing ``every`` restarts its
  operand in its place), so a match always has ``last.ts - first.ts < T`` (exclusive).
  ``every a -> b -> c WITHIN 24h`` gives each a its own clock.
* Event time (``Event.ts``: the effective time, ``cep.engine.clock``) passes for a key
  in two ways, both through :meth:`Pattern.advance`: before each of its events, to that
  event's time, and at the end of each batch, to the watermark. Either way deadlines
  are taken one at a time in time order: at each, the instances whose WITHIN ran out
  are discarded, then the timers due fire (what a firing starts, starts at the deadline
  and may be due itself). Only then is the event processed, so in
  ``a -> (timer:interval(T) and not b)`` a b at a.ts + T or later is too late. Since
  time passes the same way whichever events and batch boundaries come between, a key
  that gets no more events still sees its timers fire and its instances expire.
* ``timer:interval(T)`` is an atom that no event matches: it completes once event time
  reaches ``start + T``, where start is the time of the event during which the instance
  started (the key's first event for an instance that exists before any). A match a
  timer completes is stamped with the deadline. Timers may not sit under ``[n]``,
  ``not`` or at the start of an ``every`` operand (which could fire without end).
* The matches produced by one event are ordered by the sequence number of their first
  event, then by creation order (the order the state tree yields them).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from cep.engine import codec
from cep.engine.patterns import nodes
from cep.engine.patterns.node_combinators import (
    AndStep,
    EveryStep,
    FollowedByStep,
    NotStep,
    OrStep,
    RepeatStep,
)
from cep.engine.patterns.node_runtime import EXPIRED, AtomStep, Clock, Completion, TimerStep
from cep.engine.patterns.nodes import (
    Bindings,
    Event,
    PatternNode,
    bound_tags,
    describe,
    number_nodes,
)


@dataclass(slots=True)
class Match:
    """One complete match: tag bindings and what completed it: an event, or a timer at
    its deadline (``deadline``; None for an event)."""

    bindings: Bindings
    trigger: Event | None
    deadline: int | None = None


@dataclass(slots=True)
class PatternState:
    """The per-key state of one pattern: plain data only, stored by :mod:`cep.engine.codec`.

    ``root`` is the instance of the pattern's root node, or None once the pattern can never
    match again. Instances are lists and tuples whose position in the tree says which node
    they belong to, so nothing in here refers to code.
    """

    fingerprint: int
    root: Any


codec.register("pattern.PatternState", PatternState)


def compile_pattern(root: PatternNode, within_us: int | None = None) -> Pattern:
    """Number the nodes, validate the tree and build its interpreter.

    Raises ValueError for a ``not`` outside an ``and``, an ``and`` of only ``not``s, a tag
    bound twice (except in alternatives of an ``or``), a repeat count below 1 or a
    non-positive WITHIN.
    """
    if within_us is not None and (not isinstance(within_us, int) or within_us <= 0):
        raise ValueError(f"WITHIN must be a positive number of microseconds, got {within_us!r}")
    numbered, nodes = number_nodes(root)
    bound_tags(numbered)
    clock = Clock()
    runtime = build(numbered, within_us, clock)
    fingerprint = zlib.crc32(f"{describe(numbered)}|{within_us}".encode())
    return Pattern(numbered, nodes, within_us, fingerprint, runtime, clock)


@dataclass(frozen=True, eq=False)
class Pattern:
    """A compiled pattern: the numbered tree plus its interpreter. Immutable; one per rule,
    shared by all keys (each key has its own `PatternState`)."""

    root: PatternNode
    nodes: tuple[PatternNode, ...]
    within_us: int | None
    fingerprint: int
    _runtime: Any = field(repr=False)
    _clock: Clock = field(repr=False)

    def new_state(self) -> PatternState:
        """The state of a key that has seen no events yet."""
        self._clock.now = None  # its timers start at its first event
        return PatternState(self.fingerprint, self._runtime.start({}, None))

    def is_idle(self, state: PatternState) -> bool:
        """Whether ``state`` is that of a key that has seen nothing (holding it is
        holding nothing: the key may go)."""
        return state.root is not None and state == self.new_state()

    def feed(self, state: PatternState, event: Event) -> list[Match]:
        """Process the key's next event (in processing order), mutating ``state``, once
        :meth:`advance` has brought it to the event's time.

        Returns the matches this event completed, ordered by the sequence number of their
        first event, then by creation order.
        """
        self._check(state)
        root = state.root
        if root is None:
            return []
        out: list[Completion] = []
        self._clock.now = event.ts
        if self._runtime.step(root, event, out) & 3:
            state.root = None
        return [Match(dict(b), event) for b, _ in _by_first(out, event.seq)]

    def advance(self, state: PatternState, until: int) -> list[Match]:
        """Let event time pass to ``until`` for this key: deadline by deadline, discard
        the instances whose WITHIN ran out and fire the timers due (see the module
        notes). Returns the matches timers completed, in deadline order."""
        self._check(state)
        runtime, within = self._runtime, self.within_us
        matches: list[Match] = []
        while state.root is not None and runtime.timed:
            deadline = runtime.next_timer(state.root)
            if deadline is None or deadline > until:
                break
            self._clock.now = deadline  # what a restart or a firing starts, starts here
            if within is not None and runtime.purge(state.root, deadline) == EXPIRED:
                state.root = None
                break
            fired: list[Completion] = []
            if runtime.tick(state.root, deadline, fired) & 3:
                state.root = None
            matches.extend(Match(dict(b), None, deadline)
                           for b, _ in _by_first(fired, None))
        self._clock.now = until
        if (state.root is not None and within is not None
                and runtime.purge(state.root, until) == EXPIRED):
            state.root = None
        return matches

    def next_deadline(self, state: PatternState) -> int | None:
        """When event time next changes ``state`` by itself: its earliest timer or WITHIN
        expiry (None: only events can)."""
        root = state.root
        if root is None:
            return None
        runtime = self._runtime
        timer = runtime.next_timer(root) if runtime.timed else None
        first = runtime.earliest(root) if self.within_us is not None else None
        expiry = first + self.within_us if first is not None else None  # type: ignore[operator]
        return min((d for d in (timer, expiry) if d is not None), default=None)

    def _check(self, state: PatternState) -> None:
        if state.fingerprint != self.fingerprint:
            raise ValueError("this pattern state belongs to a different pattern")


def _by_first(completions: list[Completion], seq: int | None) -> list[Completion]:
    """Completions in the order of their first event's seq (``seq`` for one without),
    then as made."""
    if len(completions) > 1:
        completions.sort(key=lambda comp: comp[1].seq if comp[1] is not None else (seq or 0))
    return completions


def build(node: PatternNode, within: int | None, clock: Clock) -> Any:
    """The runtime object of a numbered node (and of its subtree); checks where ``not``
    and timers may appear."""
    if isinstance(node, nodes.Atom):
        return AtomStep(node, within, persistent=False)
    if isinstance(node, nodes.Timer):
        return TimerStep(node, clock, within)
    if isinstance(node, nodes.Not):
        raise ValueError("'not' is only allowed as a direct operand of 'and'")
    if isinstance(node, nodes.Every):
        if isinstance(node.operand, nodes.Atom):
            return AtomStep(node.operand, within, persistent=True)
        if nodes.starts_with_timer(node.operand):
            raise ValueError("'every' over a pattern that starts with a timer fires without "
                             "events")
        return EveryStep(build(node.operand, within, clock), within)
    if isinstance(node, nodes.Repeat):
        if nodes.has_timer(node):
            raise ValueError("timer:interval is not supported inside a repeat or a 'not'")
        tags = tuple(nodes.bound_tags(node.operand, under_not=False))
        until = build(node.until, within, clock) if node.until is not None else None
        return RepeatStep(node.count, node.most, build(node.operand, within, clock), until, tags,
                       within)
    if isinstance(node, nodes.FollowedBy):
        steps = nodes.flatten(node, nodes.FollowedBy)
        return FollowedByStep([build(c, within, clock) for c in steps], within)
    if isinstance(node, nodes.Or):
        return OrStep([build(c, within, clock) for c in nodes.flatten(node, nodes.Or)], within)
    operands = nodes.flatten(node, nodes.And)
    if all(isinstance(c, nodes.Not) for c in operands):
        raise ValueError("an 'and' needs at least one operand that is not a 'not'")
    if any(isinstance(c, nodes.Not) and nodes.has_timer(c) for c in operands):
        raise ValueError("timer:interval is not supported inside a repeat or a 'not'")
    return AndStep([NotStep(build(c.operand, within, clock)) if isinstance(c, nodes.Not)
                 else build(c, within, clock) for c in operands], within)
