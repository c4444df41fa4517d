"""``SELECT ... FROM PATTERN [...] [PARTITION BY k]``: sequence patterns per key.

Filters that read only the candidate event are evaluated vectorised for the whole batch
first; the per-event matcher (:mod:`cep.engine.patterns`) then only looks those flags up.
Filters that read earlier tags (``b=A(x > a.x)``) are evaluated per candidate. Matches
become output rows (trigger = the event that completed the match) through the same
vectorised expression evaluator as every other rule, after WHERE.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cep.engine import pattern_nodes as nodes
from cep.engine.emit import emit
from cep.engine.event_rows import Row, as_column, field_values, rows_of
from cep.engine.expr import Col, Env, collect_nodes, truth
from cep.engine.output import empty_output
from cep.engine.pattern_nodes import Event, PatternNode
from cep.engine.patterns import Match, PatternState, compile_pattern
from cep.engine.table import KEY, SEQ, SUB, Table, factorize, nrows, take
from cep.engine.windows import SUB_RANGE, PerKeyState
from cep.lang import ir


class PatternOperator(PerKeyState):
    """Runs one :class:`ir.PatternRule` for all keys of an engine."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef]) -> None:
        self.rule = rule
        self.streams = {name: streams[name] for name in rule.streams}
        self.tag_streams: dict[str, ir.StreamDef] = {}
        # (flag, stream, tag, filter): filters that read only the candidate event
        self.local_filters: list[tuple[str, str, str, ir.TExpr]] = []
        root = self._build(rule.pattern)
        # streams with an atom whose filter is not fully precomputed: feed every event
        # (a timer's clock moves with every event of the key: then all are fed)
        timed = nodes.has_timer(root)
        self.unfiltered_streams = {
            a.stream for a in _atoms(rule.pattern)
            if a.local_filter is None or a.bound_filter is not None or timed}
        self.pattern = compile_pattern(root, within_us=rule.horizon_us)
        self.states: dict[object, PatternState] = {}
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
        env = Env(1)
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

    def process(self, tables: dict[str, Table]) -> Table:
        events = self._events(tables)
        if not events:
            return empty_output()
        matches: list[tuple[object, Match]] = []
        for key, event in events:
            state = self.states.get(key)
            if state is None:
                state = self.states[key] = self.pattern.new_state()
            for match in self.pattern.feed(state, event):
                matches.append((key, match))
        if not matches:
            return empty_output()
        return self._output(matches)

    def _events(self, tables: dict[str, Table]) -> list[tuple[object, Event]]:
        """Every candidate event of the batch as (key, Event), in per-key arrival order."""
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
            ts = table[stream.timestamp].tolist() if stream.timestamp else [0] * n
            seq = table[SEQ].tolist()
            sort_key = (table[SEQ] * SUB_RANGE + table[SUB]) * len(self.streams) + order
            parts.append((table[KEY], sort_key, [
                Event(seq[i], ts[i], name, rows[i]) for i in range(n)]))
        if not parts:
            return []
        keys = np.concatenate([p[0] for p in parts]).astype(object)
        sort_key = np.concatenate([p[1] for p in parts])
        events = [e for p in parts for e in p[2]]
        codes = factorize(keys)
        order = np.lexsort((sort_key, codes))
        return [(keys[i], events[i]) for i in order.tolist()]

    def _output(self, matches: list[tuple[object, Match]]) -> Table:
        rule = self.rule
        env = Env(len(matches))
        for tag in rule.tags:
            stream = self.tag_streams[tag]
            if tag in rule.repeated_tags:
                width = max([self.indices.get(tag, 0),
                             *(len(m.bindings.get(tag) or []) for _, m in matches)])
                for i in range(width):
                    rows = [_nth(m.bindings.get(tag), i) for _, m in matches]
                    _bind_rows(env, tag, stream, rows, index=i)
            else:
                rows = [_row_of(m.bindings.get(tag)) for _, m in matches]
                _bind_rows(env, tag, stream, rows)
        keep = truth(rule.where, env)
        triggers: Table = {
            KEY: np.array([k for k, _ in matches], dtype=object),
            SEQ: np.array([m.trigger.seq for _, m in matches], dtype=np.int64),
        }
        has_time = any(s.timestamp for s in self.streams.values())
        ts = Col(np.array([m.trigger.ts for _, m in matches], dtype=np.int64)) if has_time \
            else None
        if not keep.all():
            env = Env(int(keep.sum()), {k: Col(c.values[keep], None if c.nulls is None
                                               else c.nulls[keep])
                                        for k, c in env.columns.items()})
            triggers = {KEY: triggers[KEY][keep], SEQ: triggers[SEQ][keep]}
            ts = Col(ts.values[keep]) if ts is not None else None
        return emit(rule.name, rule.columns, None, triggers, env, {}, ts)

    # ---- state (plain data: `PatternState` objects, which the state codec stores)

    def snapshot(self) -> object:
        return self.states

    def restore(self, states: object) -> None:
        if type(states) is not dict:
            raise ValueError(f"the state of rule {self.rule.name!r} is not a dict of keys")
        self.states = {}
        self.import_states(states)

    def keys(self) -> set:
        return set(self.states)

    def export(self, keys: list) -> dict[object, object]:
        out = {}
        for key in keys:
            state = self.states.pop(key, None)
            if state is not None:
                out[key] = state
        return out

    def import_states(self, states: dict[object, object]) -> None:
        for key, state in states.items():
            if type(state) is not PatternState or state.fingerprint != self.pattern.fingerprint:
                raise ValueError(f"the state of key {key!r} does not belong to the pattern of "
                                 f"rule {self.rule.name!r}")
            self.states[key] = state


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
