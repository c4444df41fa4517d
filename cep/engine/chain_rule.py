"""Pattern rules of the chain shapes (:mod:`cep.engine.pattern_chain`), batch at a time.

The same rule semantics as :class:`cep.engine.pattern_rule.PatternOperator` (the
interpreter, which runs every other shape and is the oracle of
``tests/engine/test_pattern_chain.py``), computed column-wise: the atoms' own filters for
the whole batch, the candidate rows (those some atom's filter takes) sorted once by (key,
effective time, processing order), every partial match advanced with ``searchsorted``,
and the output's tag columns gathered from the bound rows.

A key's state is its partial matches as rows of one table (``__key``, the atoms bound,
the first and last bound time, and per bound atom the event's fields), so the state is
columns in the codec's format: keys leave and arrive as slices of it, and a snapshot is
the table itself.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from cep.engine import codec
from cep.engine.clock import Watermark
from cep.engine.emit import emit
from cep.engine.expr import Col, Env, collect_nodes, truth
from cep.engine.output import TIMER, Stamps, empty_output
from cep.engine.pattern_chain import ChainShape, Instances, Outcome, Rows, advance
from cep.engine.pattern_rule import PatternOperator
from cep.engine.table import (
    DTYPES,
    KEY,
    NULL_SUFFIX,
    PLACEHOLDERS,
    RELEASE,
    SEQ,
    SUB,
    TIME,
    Table,
    concat,
    factorize,
    nrows,
)
from cep.engine.windows import SUB_RANGE, split_by_key
from cep.lang import ir

_STEP, _FIRST, _LAST, _ORDER = "__step", "__first", "__last", "__order"


@dataclass(slots=True)
class ChainState:
    """Partial matches of a chain rule (one key's, or an engine's): a table of columns."""

    fingerprint: int
    rows: Table


codec.register("pattern.ChainState", ChainState)


@dataclass
class _Batch:
    """One batch's candidate rows, sorted, and where each came from."""

    rows: Rows
    key_values: np.ndarray  # per key code, the key
    stream: np.ndarray  # per row, the stream's number in rule.streams
    local: np.ndarray  # per row, its row in that stream's table
    tables: list[Table]
    masks: np.ndarray  # bool [checked atoms, rows]: the atom's own filter holds
    pending_codes: np.ndarray  # per state row, its key code


class ChainPatternOperator(PatternOperator):
    """Runs one :class:`ir.PatternRule` of a chain shape for all keys of an engine."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef],
                 shape: ChainShape) -> None:
        self.rule = rule
        self.shape = shape
        self.within = rule.horizon_us
        self.streams = {name: streams[name] for name in rule.streams}
        self.order = list(self.streams)
        self.atoms = shape.checked
        self.n_atoms = len(shape.atoms)
        self.fingerprint = zlib.crc32(f"chain|{shape!r}|{self.within}".encode())
        self.pending: Table = self._empty_state()

    # ---- state layout

    def _fields(self, j: int) -> tuple[tuple[str, str], ...]:
        return self.streams[self.atoms[j].stream].fields

    def _empty_state(self) -> Table:
        out: Table = {KEY: np.empty(0, dtype=object)}
        for name in (_STEP, _FIRST, _LAST, _ORDER):
            out[name] = np.empty(0, dtype=np.int64)
        for j in range(self.n_atoms):
            for name, t in self._fields(j):
                out[f"{j}:{name}"] = np.empty(0, dtype=DTYPES[t])
                out[f"{j}:{name}{NULL_SUFFIX}"] = np.empty(0, dtype=bool)
        return out

    # ---- batches

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's events and the timers and expiries the watermark reaches, for
        every key (those without events too: it costs their partial matches, no more)."""
        batch = self._batch(tables)
        pending = self.pending
        n_pending = nrows(pending)
        inst = self._instances(batch, n_pending)
        positions = [np.flatnonzero(m) for m in batch.masks]
        absent = positions[self.n_atoms] if self.shape.absent is not None else None
        checks = [self._check(j, batch, inst, n_pending) if self.atoms[j].bound_filter
                  is not None else None for j in range(len(self.atoms))]
        outcome = advance(self.shape, self.within, inst, positions, absent, batch.rows,
                          n_pending, clock.end, checks)
        out = self._output(outcome, batch, n_pending, clock)
        self.pending = self._keep(outcome.pending, batch, n_pending)
        return out

    def _batch(self, tables: dict[str, Table]) -> _Batch:
        n_checked = len(self.atoms)
        keys, times, sort_keys, streams, locals_, masks = [], [], [], [], [], []
        kept_tables = []
        for order, name in enumerate(self.order):
            table = tables.get(name, {})
            n = nrows(table)
            kept_tables.append(table)
            if n == 0:
                continue
            own = np.zeros((n_checked, n), dtype=bool)
            for j, atom in enumerate(self.atoms):
                if atom.stream != name:
                    continue
                if atom.local_filter is None:
                    own[j] = True
                else:
                    env = Env(n)
                    env.bind_table(atom.tag, table)
                    own[j] = truth(atom.local_filter, env)
            relevant = np.flatnonzero(own.any(axis=0))
            keys.append(table[KEY][relevant])
            times.append(table[TIME][relevant])
            sort_keys.append((table[SEQ][relevant] * SUB_RANGE + table[SUB][relevant])
                             * len(self.order) + order)
            streams.append(np.full(len(relevant), order, dtype=np.int64))
            locals_.append(relevant)
            masks.append(own[:, relevant])
        pending_keys = self.pending[KEY]
        all_keys = np.concatenate([*keys, pending_keys]).astype(object)
        codes = factorize(all_keys)
        n_rows = len(all_keys) - len(pending_keys)
        row_codes = codes[:n_rows]
        key_values = np.empty(int(codes.max()) + 1 if len(codes) else 0, dtype=object)
        key_values[codes] = all_keys
        if n_rows:
            time = np.concatenate(times)
            order_ = np.lexsort((np.concatenate(sort_keys), time, row_codes))
            rows = Rows(row_codes[order_], time[order_])
            stream = np.concatenate(streams)[order_]
            local = np.concatenate(locals_)[order_]
            mask = np.concatenate(masks, axis=1)[:, order_]
        else:
            rows = Rows(_INT, _INT)
            stream = local = _INT
            mask = np.zeros((n_checked, 0), dtype=bool)
        return _Batch(rows, key_values, stream, local, kept_tables, mask, codes[n_rows:])

    def _instances(self, batch: _Batch, n_pending: int) -> Instances:
        """The partial matches from state (searching from their key's first row) and one
        new instance per row the first atom takes."""
        pending = self.pending
        starts = np.searchsorted(batch.rows.codes, batch.pending_codes, side="left") - 1
        new = np.flatnonzero(batch.masks[0])
        bound = np.full((self.n_atoms, n_pending + len(new)), -1, dtype=np.int64)
        steps = pending[_STEP]
        for j in range(self.n_atoms):
            held = np.flatnonzero(steps > j)
            bound[j, held] = held
        bound[0, n_pending:] = n_pending + new
        t = batch.rows.times[new]
        return Instances(np.concatenate([batch.pending_codes, batch.rows.codes[new]]),
                         np.concatenate([steps, np.ones(len(new), dtype=np.int64)]),
                         np.concatenate([starts, new]),
                         np.concatenate([pending[_FIRST], t]),
                         np.concatenate([pending[_LAST], t]), bound)

    # ---- reading bound events: index < n_pending is a state row, else a batch row

    def _gather(self, j: int, name: str, index: np.ndarray, batch: _Batch,
                n_pending: int) -> Col:
        """Field ``name`` of atom j's event at each bound ``index``."""
        column = f"{j}:{name}"
        values = np.empty(len(index), dtype=DTYPES[dict(self._fields(j))[name]])
        nulls = np.zeros(len(index), dtype=bool)
        held = index < n_pending
        if held.any():
            values[held] = self.pending[column][index[held]]
            nulls[held] = self.pending[column + NULL_SUFFIX][index[held]]
        fresh = ~held
        if fresh.any():
            table = batch.tables[self.order.index(self.atoms[j].stream)]
            local = batch.local[index[fresh] - n_pending]
            values[fresh] = table[name][local]
            table_nulls = table.get(name + NULL_SUFFIX)
            if table_nulls is not None:
                nulls[fresh] = table_nulls[local]
        return Col(values, nulls if nulls.any() else None)

    def _bind(self, env: Env, j: int, index: np.ndarray, batch: _Batch, n_pending: int,
              names: set[str] | None = None) -> None:
        tag = self.atoms[j].tag
        for name, _ in self._fields(j):
            if names is None or name in names:
                env.columns[(tag, name)] = self._gather(j, name, index, batch, n_pending)

    def _check(self, j: int, batch: _Batch, inst: Instances, n_pending: int):
        """Atom j's filter that reads earlier tags, over (instance, candidate row) pairs,
        with the tags bound before it (as the interpreter's predicate sees them)."""
        condition = self.atoms[j].bound_filter
        refs = collect_nodes([condition], ir.FieldRef)
        wanted: dict[str, set[str]] = {}
        for ref in refs:
            wanted.setdefault(ref.qualifier, set()).add(ref.name)
        visible = range(min(j, self.n_atoms))

        def check(which: np.ndarray, cand: np.ndarray) -> np.ndarray:
            env = Env(len(which))
            self._bind(env, j, n_pending + cand, batch, n_pending,
                       wanted.get(self.atoms[j].tag, set()))
            for i in visible:
                tag = self.atoms[i].tag
                if tag in wanted:
                    self._bind(env, i, inst.bound[i, which], batch, n_pending, wanted[tag])
            try:
                return truth(condition, env)
            except KeyError:  # a tag not bound yet: never true, as in the interpreter
                return np.zeros(len(which), dtype=bool)

        return check

    # ---- output

    def _output(self, outcome: Outcome, batch: _Batch, n_pending: int,
                clock: Watermark) -> Table:
        done, fired = outcome.done, outcome.fired
        n_done, n = len(done), len(done) + len(fired)
        if n == 0:
            return empty_output()
        bound = np.concatenate([done.bound, fired.bound], axis=1)
        codes = np.concatenate([done.code, fired.code])
        seq = np.empty(n, np.int64)
        at = np.empty(n, np.int64)
        origin = np.empty(n, np.int64)
        ts = np.empty(n, np.int64)
        trigger = done.bound[self.n_atoms - 1] - n_pending
        if n_done:
            table_rows = batch.local[trigger]
            streams = batch.stream[trigger]
            for s, name in enumerate(self.order):
                mine = np.flatnonzero(streams == s)
                if len(mine) == 0:
                    continue
                table, local = batch.tables[s], table_rows[mine]
                seq[mine] = table[RELEASE][local]
                origin[mine] = table[SEQ][local]
                at[mine] = 2 * table[TIME][local] + 1
                own = self.streams[name].timestamp
                ts[mine] = table[own][local] if own is not None else table[TIME][local]
        if len(fired):
            seq[n_done:], _ = clock.reach(outcome.deadline)
            at[n_done:] = 2 * outcome.deadline
            origin[n_done:] = TIMER
            ts[n_done:] = outcome.deadline
        first_seq = self._gather_seq(bound[0], batch, n_pending)
        # a key's rows made at one moment: by the seq of their first event (the
        # interpreter's order; the output's sort keeps it within a key)
        order = np.lexsort((first_seq, origin, at, seq, codes))
        bound, codes = bound[:, order], codes[order]
        stamps = Stamps(seq[order], at[order], origin[order])
        env = Env(n)
        for j in range(self.n_atoms):
            self._bind(env, j, bound[j], batch, n_pending)
        for tag in self.rule.tags:
            if all(a.tag != tag for a in self.shape.atoms):  # under a ``not``: NULL
                stream = next(a.stream for a in self.atoms if a.tag == tag)
                for name, t in self.streams[stream].fields:
                    env.columns[(tag, name)] = _nulls(n, t)
        keys = batch.key_values[codes]
        has_time = any(s.timestamp for s in self.streams.values())
        time = Col(ts[order]) if has_time else None
        keep = truth(self.rule.where, env)
        if not keep.all():
            env = Env(int(keep.sum()), {k: Col(c.values[keep], None if c.nulls is None
                                               else c.nulls[keep])
                                        for k, c in env.columns.items()})
            keys, stamps = keys[keep], stamps.take(keep)
            time = Col(time.values[keep]) if time is not None else None
        return emit(self.rule.name, self.rule.columns, None, keys, env, {}, time, stamps)

    def _gather_seq(self, index: np.ndarray, batch: _Batch, n_pending: int) -> np.ndarray:
        """The seq of the first atom's event at each bound index."""
        out = np.empty(len(index), dtype=np.int64)
        held = index < n_pending
        out[held] = self.pending[_ORDER][index[held]]
        rows = index[~held] - n_pending
        for s, table in enumerate(batch.tables):
            mine = batch.stream[rows] == s
            if mine.any():
                out[np.flatnonzero(~held)[mine]] = table[SEQ][batch.local[rows[mine]]]
        return out

    # ---- state

    def _keep(self, inst: Instances, batch: _Batch, n_pending: int) -> Table:
        """The instances still pending as state rows: their bound events' fields."""
        n = len(inst)
        out: Table = {KEY: batch.key_values[inst.code], _STEP: inst.step.copy(),
                      _FIRST: inst.first.copy(), _LAST: inst.last.copy(),
                      _ORDER: self._gather_seq(inst.bound[0], batch, n_pending)}
        for j in range(self.n_atoms):
            has = inst.bound[j] >= 0
            for name, t in self._fields(j):
                col = self._gather(j, name, inst.bound[j, has], batch, n_pending)
                values = np.zeros(n, dtype=DTYPES[t])
                nulls = np.zeros(n, dtype=bool)
                values[has] = col.values
                if col.nulls is not None:
                    nulls[has] = col.nulls
                out[f"{j}:{name}"] = values
                out[f"{j}:{name}{NULL_SUFFIX}"] = nulls
        return out

    def deadlines(self) -> np.ndarray:
        """Per state row, when event time next changes it by itself (WITHIN's expiry,
        the timer's firing)."""
        pending = self.pending
        out = np.full(nrows(pending), np.iinfo(np.int64).max, dtype=np.int64)
        if self.within is not None:
            out = pending[_FIRST] + self.within
        if self.shape.timer_us is not None:
            timed = pending[_STEP] == self.n_atoms
            out = np.where(timed, np.minimum(out, pending[_LAST] + self.shape.timer_us), out)
        return out

    def due_keys(self, until: int) -> list:
        deadline = self.deadlines()
        due = deadline <= until
        if not due.any():
            return []
        keys, deadline = self.pending[KEY][due], deadline[due]
        codes = factorize(keys)
        order = np.lexsort((codes, deadline))
        first = np.unique(codes[order], return_index=True)[1]
        return keys[order][np.sort(first)].tolist()

    def snapshot(self) -> object:
        return ChainState(self.fingerprint, self.pending)

    def restore(self, state: object) -> None:
        self.pending = self._checked(state, "the state")

    def keys(self) -> set:
        return set(self.pending[KEY].tolist())

    def export(self, keys: list) -> dict[object, object]:
        parts, rest = split_by_key(self.pending, keys)
        self.pending = rest
        return {key: ChainState(self.fingerprint, part) for key, part in parts.items()}

    def import_states(self, states: dict[object, object]) -> None:
        parts = [self.pending]
        for key, state in states.items():
            parts.append(self._checked(state, f"the state of key {key!r}"))
        self.pending = concat(parts) or self._empty_state()

    def _checked(self, state: object, what: str) -> Table:
        """A state value someone may have written: this rule's, with its columns."""
        expected = self._empty_state()
        if (type(state) is not ChainState or state.fingerprint != self.fingerprint
                or type(state.rows) is not dict or set(state.rows) != set(expected)
                or any(not isinstance(v, np.ndarray) or v.ndim != 1
                       or len(v) != nrows(state.rows) for v in state.rows.values())):
            raise ValueError(f"{what} does not belong to the pattern of rule "
                             f"{self.rule.name!r}")
        rows = state.rows
        return {name: rows[name].astype(expected[name].dtype, copy=False)
                for name in expected}


_INT = np.empty(0, dtype=np.int64)


def _nulls(n: int, type_name: str) -> Col:
    """An unbound tag's field: NULL on every row."""
    return Col(np.full(n, PLACEHOLDERS[type_name], dtype=DTYPES[type_name]),
               np.ones(n, dtype=bool))
