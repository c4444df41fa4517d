"""Per-key event-pattern matcher (``every``, ``->``, ``and``, ``or``, ``not``, ``[n]``, WITHIN).

:mod:`cep.engine.pattern_rule` turns a rule's ``PATTERN [...]`` into the nodes of
:mod:`cep.engine.pattern_nodes`; the matcher knows nothing about the language.
``compile_pattern`` numbers the nodes and builds a small interpreter (`Pattern`, whose
per-node steps are in :mod:`cep.engine.pattern_runtime`); the per-key state it works on
(`PatternState`) is plain data: lists, dicts, ints and `Event` tuples, never callables and
never a reference to the `Pattern`, so a key's state can be written mid-stream as data
(`cep.engine.codec`, inside the engine's snapshot and key documents) and handed to another
engine. A state instance belongs to the pattern it was made by; `Pattern.feed` checks a
structural fingerprint so a state is never silently run by another pattern.

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

import zlib
from dataclasses import dataclass, field
from typing import Any

from cep.engine import codec
from cep.engine.pattern_nodes import (
    Bindings,
    Event,
    PatternNode,
    bound_tags,
    describe,
    number_nodes,
)
from cep.engine.pattern_runtime import Clock, Completion, build


@dataclass(slots=True)
class Match:
    """One complete match: tag bindings and the event that completed it."""

    bindings: Bindings
    trigger: Event


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
