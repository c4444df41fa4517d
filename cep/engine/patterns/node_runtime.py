"""The matcher's runtime, its leaves: for each node of a numbered pattern tree, the object
that starts, steps, ticks (timers) and purges (WITHIN) that node's instances, following the
semantics written in :mod:`cep.engine.patterns.interpreter`. This module holds the status
codes, the atoms and the timers; :mod:`cep.engine.patterns.node_combinators` holds the
nodes over other nodes (``->``, ``every``, ``or``, ``and``, ``not``, repeats).

A runtime object holds only the node's constants; its instances are plain lists and tuples
(the key's `PatternState`), so the same runtime serves every key. Each step returns a
status code: the low two bits say what became of the instance, the TOUCHED bit says that
one of its atoms bound the event (used by ``and`` to offer an event to one operand only).
Completions are appended to the caller's list as (bindings, first event by seq) pairs;
"first" drives WITHIN without rescanning bindings.
"""

from __future__ import annotations

from typing import Any

from cep.engine.patterns import nodes
from cep.engine.patterns.nodes import Bindings, Event

ALIVE = 0  # still running
DONE = 1  # finished after completing (its completions are in the output list)
FALSE = 2  # permanently false because of this event
EXPIRED = 3  # permanently false because WITHIN ran out before this event
TOUCHED = 4

Completion = tuple[Bindings, Event]


class AtomStep:
    """Atom runtime; ``persistent`` is ``every <atom>``, which stays after matching."""

    is_atom = True
    timed = False

    def __init__(self, node: nodes.Atom, within: int | None, persistent: bool) -> None:
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

    def earliest(self, inst: Any) -> int | None:
        return first_ts(inst[1])


class Clock:
    """The event time at which instances start (shared by one pattern's runtime nodes;
    keys are fed one event at a time, so one value serves them all)."""

    now: int | None = None


class TimerStep:
    """``timer:interval``; instance [begin, first, deadline] (deadline None until the key's
    first event when the instance exists before any event)."""

    is_atom = False
    timed = True

    def __init__(self, node: nodes.Timer, clock: Clock, within: int | None) -> None:
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

    def next_timer(self, inst: Any) -> int | None:
        return inst[2]

    def earliest(self, inst: Any) -> int | None:
        return first_ts(inst[1])


def first_ts(first: Event | None) -> int | None:
    return first.ts if first is not None else None


def least(values: Any) -> int | None:
    """The least of the values that are not None (None when there are none)."""
    found = [v for v in values if v is not None]
    return min(found) if found else None
