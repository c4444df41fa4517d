"""The matcher's runtime, its inner nodes: the objects that step ``->``, ``every``, ``or``,
``and``, ``not`` and repeats over their operands' instances (the leaves, status codes and
what an instance is are in :mod:`cep.engine.patterns.node_runtime`).

Each holds only its node's constants and its operands' runtime objects; an instance is a
plain list of its operands' instances, part of the key's ``PatternState``.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from cep.engine.patterns.node_runtime import (
    ALIVE,
    DONE,
    EXPIRED,
    FALSE,
    TOUCHED,
    Completion,
    first_ts,
    least,
)
from cep.engine.patterns.nodes import Bindings, Event


class FollowedByStep:
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
        """Fire the timers due by ``now`` (see `TimerStep`); same status codes as ``step``."""
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

    def next_timer(self, inst: Any) -> int | None:
        return least(child.next_timer(ci) for child, lst in zip(self.children, inst[2],
                                                                  strict=True)
                      if child.timed for ci in lst)

    def earliest(self, inst: Any) -> int | None:
        return least([first_ts(inst[1]), *(child.earliest(ci) for child, lst in zip(
            self.children, inst[2], strict=True) for ci in lst)])

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


class EveryStep:
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

    def next_timer(self, inst: Any) -> int | None:
        return least(self.child.next_timer(ci) for ci in inst[2])

    def earliest(self, inst: Any) -> int | None:
        return least([first_ts(inst[1]), *(self.child.earliest(ci) for ci in inst[2])])

    def purge(self, inst: Any, ts: int) -> int:
        begin, first, kids = inst
        if first is not None and ts - first.ts >= self.within:
            return EXPIRED
        child = self.child
        inst[2] = [ci if child.purge(ci, ts) != EXPIRED else child.start(begin, first)
                   for ci in kids]
        return ALIVE


class OrStep:
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

    def next_timer(self, inst: Any) -> int | None:
        return least(child.next_timer(ci) for child, ci in zip(self.children, inst[2],
                                                                strict=True)
                      if ci is not None and child.timed)

    def earliest(self, inst: Any) -> int | None:
        return least([first_ts(inst[1]), *(child.earliest(ci) for child, ci in zip(
            self.children, inst[2], strict=True) if ci is not None)])

    def purge(self, inst: Any, ts: int) -> int:
        first = inst[1]
        if first is not None and ts - first.ts >= self.within:
            return EXPIRED
        kids = inst[2]
        for i, child in enumerate(self.children):
            if kids[i] is not None and child.purge(kids[i], ts) == EXPIRED:
                kids[i] = None
        return EXPIRED if all(ci is None for ci in kids) else ALIVE


class NotStep:
    """``not x`` inside an and; instance [instance of x].

    Step result, read by `AndStep`: FALSE when x completed for good (the and dies), DONE when x
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

    def earliest(self, inst: Any) -> int | None:
        return self.child.earliest(inst[0])


class AndStep:
    """n-ary and; instance [begin, first, instance or None per operand, stored completions].

    ``stored[i]`` is None until operand i has completed, then the list of its completions
    still usable for combinations (Esper's ``eventsPerChild``).
    """

    is_atom = False

    def __init__(self, children: list[Any], within: int | None) -> None:
        self.children = children
        self.within = within
        self.nots = [i for i, c in enumerate(children) if isinstance(c, NotStep)]
        self.ops = [i for i, c in enumerate(children) if not isinstance(c, NotStep)]
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

    def next_timer(self, inst: Any) -> int | None:
        kids = inst[2]
        return least(self.children[i].next_timer(kids[i]) for i in self.ops
                      if kids[i] is not None and self.children[i].timed)

    def earliest(self, inst: Any) -> int | None:
        kids, stored = inst[2], inst[3]
        return least([first_ts(inst[1]),
                       *(c.earliest(ci) for c, ci in zip(self.children, kids, strict=True)
                         if ci is not None),
                       *(comp[1].ts for s in stored if s is not None for comp in s)])

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


class RepeatStep:
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

    def earliest(self, inst: Any) -> int | None:
        until = inst[6] if self.until is not None else None
        return least([first_ts(inst[2]), self.child.earliest(inst[5]),
                       self.until.earliest(until) if until is not None else None])

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
