"""``SELECT ... FROM PATTERN [...] [PARTITION BY k]``: sequence patterns per key.

Filters that read only the candidate event are evaluated vectorised for the whole batch
first; the per-event matcher (:mod:`cep.engine.patterns.interpreter`) then only looks
those flags up. Filters that read earlier tags (``b=A(x > a.x)``) are evaluated per
candidate. Matches become output rows (stamped by the event that completed the match, or
by the timer and its deadline) through the same vectorised expression evaluator as every
other rule, after WHERE. Each batch works on the keys its events reach and on the keys
whose next deadline (:class:`~cep.engine.timers.TimerIndex`) the watermark reaches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.emit import emit
from cep.engine.event_rows import Row, as_column, field_values, rows_of
from cep.engine.expr import Col, Env, collect_nodes, truth
from cep.engine.keyed import SUB_RANGE, PerKeyState
from cep.engine.output import TIMER, Stamps, empty_output
from cep.engine.patterns import nodes
from cep.engine.patterns.interpreter import Match, PatternState, compile_pattern
from cep.engine.patterns.nodes import Event, PatternNode
from cep.engine.table import KEY, RELEASE, SEQ, SUB, TIME, Table, factorize, nrows, take
from cep.engine.timers import TimerIndex
from grammar import ir


class PatternOperator(PerKeyState, ABC):
    """Runs one :class:`ir.PatternRule` for all keys of an engine. The column kernels
    take the shapes they can: :class:`cep.engine.patterns.chain_rule.ChainPatternOperator` the
    chains (``every a -> (b or c) [-> (d and e)] [WITHIN]``, the follow-up and absence
    timers),
    :class:`cep.engine.patterns.until_rule.UntilPatternOperator` the match-untils and
    :class:`cep.engine.patterns.group_rule.GroupPatternOperator` ``every (a -> b ...)`` and
    ``a -> b ...`` without ``every``;
    :class:`InterpretedPatternOperator` runs every shape event by event (the others'
    oracle in their differential tests)."""

    @abstractmethod
    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's events, key by key in processing order, and the timers the
        watermark fires for every key with a deadline it reaches: the output rows."""

    @abstractmethod
    def due_keys(self, until: int) -> list:
        """Keys with a timer or expiry at or before ``until``, earliest first."""

    @abstractmethod
    def snapshot(self) -> object:
        """Every key's state, as data the state codec stores."""

    @abstractmethod
    def restore(self, states: object) -> None:
        """Continue from a :meth:`snapshot` (data someone may have written: checked)."""

    @abstractmethod
    def keys(self) -> set:
        """Keys with state."""

    @abstractmethod
    def export(self, keys: list) -> dict[object, object]:
        """Remove the keys' states and return them, per key."""

    @abstractmethod
    def import_states(self, states: dict[object, object]) -> None:
        """Take in states that :meth:`export` returned (checked to be this rule's)."""


class InterpretedPatternOperator(PatternOperator):
    """Any pattern, event by event through :mod:`cep.engine.patterns.interpreter`' interpreter."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef]) -> None:
        self.rule = rule
        self.streams = {name: streams[name] for name in rule.streams}
        self.tag_streams: dict[str, ir.StreamDef] = {}
        # (flag, stream, tag, filter): filters that read only the candidate event
        self.local_filters: list[tuple[str, str, str, ir.TExpr]] = []
        root = self._build(rule.pattern)
        # streams with an atom whose filter is not fully precomputed: feed every event
        # (time passes by the watermark, so the others need not reach the matcher)
        self.unfiltered_streams = {
            a.stream for a in _atoms(rule.pattern)
            if a.local_filter is None or a.bound_filter is not None}
        self.pattern = compile_pattern(root, within_us=rule.horizon_us)
        self.states: dict[object, PatternState] = {}
        self.timers = TimerIndex()  # each key's next deadline
        # tag[i] the rule reads: bound (NULL) even when no match has that many events
        self.indices: dict[str, int] = {}
        for ref in collect_nodes([rule.where, *(c.expr for c in rule.columns)], ir.FieldRef):
            if ref.index is not None:
                self.indices[ref.qualifier] = max(self.indices.get(ref.qualifier, 0),
                                                  ref.index + 1)

    # ---- compile the IR pattern into matcher nodes

    def _build(self, node: ir.PNode) -> PatternNode:
        if isinstance(node, ir.PAtom):
            self.tag_streams[node.tag] = self.streams[node.stream]
            return nodes.Atom(node.tag, node.stream, self._predicate(node))
        if isinstance(node, ir.PFollowedBy):
            return nodes.FollowedBy(self._build(node.left), self._build(node.right))
        if isinstance(node, ir.PAnd):
            return nodes.And(self._build(node.left), self._build(node.right))
        if isinstance(node, ir.POr):
            return nodes.Or(self._build(node.left), self._build(node.right))
        if isinstance(node, ir.PNot):
            return nodes.Not(self._build(node.operand))
        if isinstance(node, ir.PEvery):
            return nodes.Every(self._build(node.operand))
        if isinstance(node, ir.PTimer):
            return nodes.Timer(node.us)
        until = self._build(node.until) if node.until is not None else None
        return nodes.Repeat(node.count, self._build(node.operand), high=node.high, until=until)

    def _predicate(self, atom: ir.PAtom) -> Callable[[Event, dict], bool] | None:
        checks: list[Callable[[Event, dict], bool]] = []
        if atom.local_filter is not None:
            flag = f"__atom{len(self.local_filters)}"
            self.local_filters.append((flag, atom.stream, atom.tag, atom.local_filter))
            checks.append(lambda event, bindings, flag=flag: bool(event.row[flag]))
        if atom.bound_filter is not None:
            condition = atom.bound_filter
            checks.append(lambda event, bindings: self._bound_check(
                condition, atom.tag, event, bindings))
        if not checks:
            return None
        if len(checks) == 1:
            return checks[0]
        return lambda event, bindings: all(c(event, bindings) for c in checks)

    def _bound_check(self, condition: ir.TExpr, tag: str, event: Event,
                     bindings: dict) -> bool:
        env = Env(1, seq=np.array([event.seq], dtype=np.int64))  # the candidate's record
        _bind_row(env, tag, self.tag_streams[tag], event.row)
        for other, bound in bindings.items():
            stream = self.tag_streams[other]
            if isinstance(bound, list):
                for i, ev in enumerate(bound):
                    _bind_row(env, other, stream, ev.row, index=i)
            else:
                _bind_row(env, other, stream, bound.row)
        try:
            return bool(truth(condition, env)[0])
        except KeyError:  # refers to an index of a repeated tag not matched yet
            return False

    # ---- batches

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's events, key by key in processing order, and the timers the
        watermark fires for every key with a deadline it reaches."""
        events = self._events(tables)
        due = [k for k in self.timers.due(clock.end) if k not in events]
        matches: list[tuple[object, Match, int]] = []
        for key in [*events, *due]:
            state = self.states.get(key)
            if state is None:
                state = self.pattern.new_state()
            for event, release in events.get(key, ()):
                matches.extend((key, m, -1) for m in self.pattern.advance(state, event.ts))
                matches.extend((key, m, release) for m in self.pattern.feed(state, event))
            matches.extend((key, m, -1) for m in self.pattern.advance(state, clock.end))
            self._settle(key, state)
        if not matches:
            return empty_output()
        return self._output(matches, clock)

    def _settle(self, key: object, state: PatternState) -> None:
        """Keep the key's state and next deadline, or let the key go when its state is
        a fresh one's (nothing bound, no timer running)."""
        if self.pattern.is_idle(state):
            self.states.pop(key, None)
            self.timers.set(key, None)
        else:
            self.states[key] = state
            self.timers.set(key, self.pattern.next_deadline(state))

    def due_keys(self, until: int) -> list:
        return self.timers.due(until)

    def _events(self, tables: dict[str, Table]) -> dict[object, list[tuple[Event, int]]]:
        """Every candidate event of the batch per key, with the seq it is processed at,
        in per-key processing order (``Event.ts`` is the effective time)."""
        parts = []
        for order, (name, stream) in enumerate(self.streams.items()):
            table = tables[name]
            n = nrows(table)
            if n == 0:
                continue
            flags = {}
            for flag, s, tag, cond in self.local_filters:
                if s == name:
                    env = Env(n)
                    env.bind_table(tag, table)
                    flags[flag] = truth(cond, env)
            if name not in self.unfiltered_streams:
                # an event no atom can match never reaches the matcher (as in Esper,
                # whose patterns only see events that pass some filter)
                relevant = np.logical_or.reduce(list(flags.values()))
                table = take(table, relevant)
                flags = {f: m[relevant] for f, m in flags.items()}
                n = nrows(table)
                if n == 0:
                    continue
            rows = _rows(table, stream, flags)
            ts = table[TIME].tolist()
            seq = table[SEQ].tolist()
            sort_key = (table[SEQ] * SUB_RANGE + table[SUB]) * len(self.streams) + order
            parts.append((table[KEY], table[TIME], sort_key, table[RELEASE].tolist(), [
                Event(seq[i], ts[i], name, rows[i]) for i in range(n)]))
        if not parts:
            return {}
        keys = np.concatenate([p[0] for p in parts]).astype(object)
        times = np.concatenate([p[1] for p in parts])
        sort_key = np.concatenate([p[2] for p in parts])
        release = [r for p in parts for r in p[3]]
        events = [e for p in parts for e in p[4]]
        codes = factorize(keys)
        out: dict[object, list[tuple[Event, int]]] = {}
        for i in np.lexsort((sort_key, times, codes)).tolist():
            out.setdefault(keys[i], []).append((events[i], release[i]))
        return out

    def _output(self, matches: list[tuple[object, Match, int]], clock: Watermark) -> Table:
        """Output rows of the matches (with the release seq of the event that completed
        each, or -1 for a timer's), after WHERE."""
        rule = self.rule
        env = Env(len(matches))
        for tag in rule.tags:
            stream = self.tag_streams[tag]
            if tag in rule.repeated_tags:
                width = max([self.indices.get(tag, 0),
                             *(len(m.bindings.get(tag) or []) for _, m, _ in matches)])
                for i in range(width):
                    rows = [_nth(m.bindings.get(tag), i) for _, m, _ in matches]
                    _bind_rows(env, tag, stream, rows, index=i)
            else:
                rows = [_row_of(m.bindings.get(tag)) for _, m, _ in matches]
                _bind_rows(env, tag, stream, rows)
        keep = truth(rule.where, env)
        keys = np.array([k for k, _, _ in matches], dtype=object)
        stamps, ts = self._stamps(matches, clock)
        if not keep.all():
            env = env.where(keep)
            keys, stamps = keys[keep], stamps.take(keep)
            ts = Col(ts.values[keep]) if ts is not None else None
        return emit(rule.name, rule.columns, None, keys, env, {}, ts, stamps)

    def _stamps(self, matches: list[tuple[object, Match, int]], clock: Watermark
                ) -> tuple[Stamps, Col | None]:
        """Each match's place in the reference order and its time: the completing
        event's (its own timestamp), or the timer's deadline at the first event whose
        watermark reaches it."""
        n = len(matches)
        seq = np.empty(n, np.int64)
        at = np.empty(n, np.int64)
        origin = np.empty(n, np.int64)
        ts = np.empty(n, np.int64)
        for i, (_, m, release) in enumerate(matches):
            if m.trigger is None:
                seq[i] = clock.reach_one(m.deadline)  # type: ignore[arg-type,assignment]
                at[i], origin[i], ts[i] = 2 * m.deadline, TIMER, m.deadline  # type: ignore[operator]
            else:
                event = m.trigger
                seq[i], at[i], origin[i] = release, 2 * event.ts + 1, event.seq
                own = self.streams[event.stream].timestamp
                ts[i] = event.row[own] if own is not None else event.ts  # type: ignore[assignment]
        has_time = any(s.timestamp for s in self.streams.values())
        return Stamps(seq, at, origin), Col(ts) if has_time else None

    # ---- state (plain data: `PatternState` objects, which the state codec stores)

    def snapshot(self) -> object:
        return self.states

    def restore(self, states: object) -> None:
        if type(states) is not dict:
            raise ValueError(f"the state of rule {self.rule.name!r} is not a dict of keys")
        self.states = {}
        self.timers = TimerIndex()
        self.import_states(states)

    def keys(self) -> set:
        return set(self.states)

    def export(self, keys: list) -> dict[object, object]:
        out = {}
        for key in keys:
            state = self.states.pop(key, None)
            self.timers.set(key, None)
            if state is not None:
                out[key] = state
        return out

    def import_states(self, states: dict[object, object]) -> None:
        for key, state in states.items():
            if type(state) is not PatternState or state.fingerprint != self.pattern.fingerprint:
                raise ValueError(f"the state of key {key!r} does not belong to the pattern of "
                                 f"rule {self.rule.name!r}")
            self.states[key] = state
            self.timers.set(key, self.pattern.next_deadline(state))


def _rows(table: Table, stream: ir.StreamDef, flags: dict[str, np.ndarray]) -> list[Row]:
    """The batch's events as dicts (NULL → None), plus the precomputed filter flags."""
    columns = {name: field_values(table, name) for name, _ in stream.fields}
    columns.update({flag: mask.tolist() for flag, mask in flags.items()})
    return rows_of(columns)


def _row_of(bound: object) -> Row | None:
    return bound.row if bound is not None else None  # type: ignore[attr-defined]


def _nth(bound: object, i: int) -> Row | None:
    if not bound or i >= len(bound):  # type: ignore[arg-type]
        return None
    return bound[i].row  # type: ignore[index]


def _bind_row(env: Env, tag: str, stream: ir.StreamDef, row: Row,
              index: int | None = None) -> None:
    _bind_rows(env, tag, stream, [row], index)


def _bind_rows(env: Env, tag: str, stream: ir.StreamDef, rows: list[Row | None],
               index: int | None = None) -> None:
    """Expose the fields of one event per output row (None: the tag did not match)."""
    for name, t in stream.fields:
        key = (tag, name) if index is None else (tag, name, index)
        env.columns[key] = as_column([None if r is None else r.get(name) for r in rows], t)


def _atoms(node: ir.PNode) -> list[ir.PAtom]:
    if isinstance(node, ir.PAtom):
        return [node]
    if isinstance(node, ir.PTimer):
        return []
    if isinstance(node, ir.PRepeat) and node.until is not None:
        return _atoms(node.operand) + _atoms(node.until)
    if isinstance(node, ir.PNot | ir.PEvery | ir.PRepeat):
        return _atoms(node.operand)
    return _atoms(node.left) + _atoms(node.right)
