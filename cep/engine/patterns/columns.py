"""What the column kernels of pattern rules share: a batch's candidate rows, reading the
events partial matches hold, output rows, and the state table.

A kernel (:mod:`cep.engine.patterns.chain_rule`, :mod:`cep.engine.patterns.until_rule`)
names the atoms whose own filter picks candidate rows (``checked``) and the *slots* of a
partial match: the atoms whose events it holds from batch to batch, one group of columns
each. A bound event is a number: below the state's row count it is a state row (its
slot's columns), else a candidate row of the batch (``n_pending`` + its place in the
sorted rows).

A key's state is rows of one table: ``__key``, the number of slots filled (``__step``;
for a chain with ``or`` steps the number of steps done, and ``__held`` the bits of the
slots that hold an event), the first and last bound event's time, the first's seq, and
per slot the event's fields.
Keys leave and arrive as slices of it; a snapshot is the table itself.
"""

from __future__ import annotations

import zlib
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from cep.engine import codec
from cep.engine.emit import emit
from cep.engine.expr import Col, Env, collect_nodes, truth
from cep.engine.keyed import SUB_RANGE, split_by_key
from cep.engine.output import Stamps
from cep.engine.patterns.chain import Rows
from cep.engine.patterns.rule import PatternOperator
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
    take,
)
from grammar import ir

STEP, FIRST, LAST, ORDER = "__step", "__first", "__last", "__order"
HELD = "__held"


@dataclass(slots=True)
class ChainState:
    """Partial matches of a column-kernel pattern rule (one key's, or an engine's)."""

    fingerprint: int
    rows: Table


codec.register("pattern.ChainState", ChainState)


@dataclass
class Batch:
    """One batch's candidate rows, sorted by (key, effective time, processing order),
    and where each came from."""

    rows: Rows
    key_values: np.ndarray  # per key code, the key
    stream: np.ndarray  # per row, the stream's number in rule.streams
    local: np.ndarray  # per row, its row in that stream's table
    tables: list[Table]
    masks: np.ndarray  # bool [checked atoms, rows]: the atom's own filter holds
    pending_codes: np.ndarray  # per state row, its key code


class ColumnPatternOperator(PatternOperator):
    """The shared part of a pattern rule's column kernel (see the module notes)."""

    def __init__(self, rule: ir.PatternRule, streams: dict[str, ir.StreamDef],
                 checked: tuple[ir.PAtom, ...], slots: tuple[ir.PAtom, ...],
                 shape: object, held: bool = False) -> None:
        self.rule = rule
        self.within = rule.horizon_us
        self.streams = {name: streams[name] for name in rule.streams}
        self.order = list(self.streams)
        self.atoms = checked
        self.slots = slots
        self.held = held  # the state says which slots hold an event (``__held``)
        self.fingerprint = zlib.crc32(f"{type(self).__name__}|{shape!r}|{self.within}"
                                      .encode())
        self.pending: Table = self._empty_state()

    @abstractmethod
    def deadlines(self) -> np.ndarray:
        """Per state row, when event time next changes it by itself (a WITHIN expiry, a
        timer)."""

    # ---- state layout

    def _slot_fields(self, j: int) -> tuple[tuple[str, str], ...]:
        return self.streams[self.slots[j].stream].fields

    def _empty_state(self) -> Table:
        out: Table = {KEY: np.empty(0, dtype=object)}
        for name in (STEP, FIRST, LAST, ORDER) + ((HELD,) if self.held else ()):
            out[name] = np.empty(0, dtype=np.int64)
        for j in range(len(self.slots)):
            for name, t in self._slot_fields(j):
                out[f"{j}:{name}"] = np.empty(0, dtype=DTYPES[t])
                out[f"{j}:{name}{NULL_SUFFIX}"] = np.empty(0, dtype=bool)
        return out

    # ---- a batch's candidate rows

    def batch(self, tables: dict[str, Table]) -> Batch:
        """The rows some checked atom's own filter takes, sorted as the key processes
        them, with the filters' bits; the state's keys coded alike."""
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
        return Batch(rows, key_values, stream, local, kept_tables, mask, codes[n_rows:])

    # ---- reading bound events

    def gather(self, stream: str, slot: int | None, name: str, index: np.ndarray,
               batch: Batch, n_pending: int) -> Col:
        """Field ``name`` of the events at ``index`` (state rows of ``slot``, or
        candidate rows of ``stream``)."""
        values = np.empty(len(index), dtype=DTYPES[self.streams[stream].field_type(name)])
        nulls = np.zeros(len(index), dtype=bool)
        held = index < n_pending
        if held.any():
            column = f"{slot}:{name}"
            values[held] = self.pending[column][index[held]]
            nulls[held] = self.pending[column + NULL_SUFFIX][index[held]]
        fresh = ~held
        if fresh.any():
            table = batch.tables[self.order.index(stream)]
            local = batch.local[index[fresh] - n_pending]
            values[fresh] = table[name][local]
            table_nulls = table.get(name + NULL_SUFFIX)
            if table_nulls is not None:
                nulls[fresh] = table_nulls[local]
        return Col(values, nulls if nulls.any() else None)

    def bind_slot(self, env: Env, tag: str, item: int | None, j: int, index: np.ndarray,
                  batch: Batch, n_pending: int, names: set[str] | None = None) -> None:
        """Slot j's events at ``index`` (-1: none, NULL) as the columns of ``tag`` (of
        ``tag[item]`` for a repeated tag)."""
        self.bind_events(env, tag, item, self.slots[j].stream, j, index, batch, n_pending,
                         names)

    def bind_events(self, env: Env, tag: str, item: int | None, stream: str,
                    slot: int | None, index: np.ndarray, batch: Batch, n_pending: int,
                    names: set[str] | None = None) -> None:
        """The events of ``stream`` at ``index`` (state rows of ``slot`` or candidate
        rows; -1: none, NULL) as the columns of ``tag`` (``tag[item]``)."""
        bound = index >= 0
        whole = bool(bound.all())
        for name, t in self.streams[stream].fields:
            if names is not None and name not in names:
                continue
            if whole:
                col = self.gather(stream, slot, name, index, batch, n_pending)
            else:
                part = self.gather(stream, slot, name, index[bound], batch, n_pending)
                values = np.full(len(index), PLACEHOLDERS[t], dtype=DTYPES[t])
                values[bound] = part.values
                nulls = ~bound
                nulls[bound] = part.null_mask()
                col = Col(values, nulls)
            env.columns[(tag, name) if item is None else (tag, name, item)] = col

    def bind_matches(self, env: Env, bound: np.ndarray, items: tuple[int, ...],
                     batch: Batch, n_pending: int) -> None:
        """The tags of matches (``bound``: [slots, matches]) in ``env``: slot j as its
        tag, or as ``tag[items[j]]`` where ``items[j]`` >= 0 (an iteration of
        ``[n] b``); a ``b[i]`` the rule reads past the last iteration is NULL, and so
        is every tag no slot binds."""
        n = bound.shape[1]
        for j, atom in enumerate(self.slots):
            item = items[j] if items and items[j] >= 0 else None
            self.bind_slot(env, atom.tag, item, j, bound[j], batch, n_pending)
        for ref in collect_nodes([self.rule.where, *(c.expr for c in self.rule.columns)],
                                 ir.FieldRef):
            if ref.index is not None and (ref.qualifier, ref.name, ref.index) not in \
                    env.columns:
                j = max(i for i, a in enumerate(self.slots) if a.tag == ref.qualifier)
                self.bind_slot(env, ref.qualifier, ref.index, j, np.full(n, -1, np.int64),
                               batch, n_pending, {ref.name})
        self.null_tags(env, n, {a.tag for a in self.slots})

    def first_seqs(self, index: np.ndarray, batch: Batch, n_pending: int) -> np.ndarray:
        """The seq of the events at ``index`` (their slots' first is slot 0)."""
        out = np.empty(len(index), dtype=np.int64)
        held = index < n_pending
        out[held] = self.pending[ORDER][index[held]]
        rows = index[~held] - n_pending
        for s, table in enumerate(batch.tables):
            mine = batch.stream[rows] == s
            if mine.any():
                out[np.flatnonzero(~held)[mine]] = table[SEQ][batch.local[rows[mine]]]
        return out

    # ---- output

    def event_stamps(self, rows: np.ndarray, batch: Batch
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Stamps (seq, at, origin) and output time of matches the candidate ``rows``
        completed: the event's release seq, effective time and seq, and own time."""
        n = len(rows)
        seq, at, origin, ts = (np.empty(n, np.int64) for _ in range(4))
        table_rows = batch.local[rows]
        streams = batch.stream[rows]
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
        return seq, at, origin, ts

    def null_tags(self, env: Env, n: int, bound: set[str]) -> None:
        """The rule's tags no slot binds here: NULL, as the interpreter gives them."""
        for tag in self.rule.tags:
            if tag in bound or tag in self.rule.repeated_tags:
                continue
            stream = next(a.stream for a in self.atoms if a.tag == tag)
            for name, t in self.streams[stream].fields:
                env.columns[(tag, name)] = Col(np.full(n, PLACEHOLDERS[t], dtype=DTYPES[t]),
                                               np.ones(n, dtype=bool))

    def emit_rows(self, env: Env, keys: np.ndarray, stamps: Stamps,
                  ts: np.ndarray) -> Table:
        """Output rows of the matches bound in ``env``, after WHERE."""
        time = Col(ts) if any(s.timestamp for s in self.streams.values()) else None
        keep = truth(self.rule.where, env)
        if not keep.all():
            env = env.where(keep)
            keys, stamps = keys[keep], stamps.take(keep)
            time = Col(time.values[keep]) if time is not None else None
        return emit(self.rule.name, self.rule.columns, None, keys, env, {}, time, stamps)

    # ---- state

    def state_rows(self, codes: np.ndarray, step: np.ndarray, first: np.ndarray,
                   last: np.ndarray, bound: np.ndarray, batch: Batch,
                   n_pending: int) -> Table:
        """Partial matches still pending as state rows: their bound events' fields
        (``bound``: [slots, rows], -1 where a slot is empty)."""
        n = len(codes)
        first_event = first_bound(bound)
        order = np.full(n, -1, dtype=np.int64)  # -1: no event held (a key done for good)
        has = first_event >= 0
        order[has] = self.first_seqs(first_event[has], batch, n_pending)
        out: Table = {KEY: batch.key_values[codes], STEP: step.copy(), FIRST: first.copy(),
                      LAST: last.copy(), ORDER: order}
        if self.held:
            out[HELD] = ((bound >= 0).astype(np.int64)
                         << np.arange(len(bound), dtype=np.int64)[:, None]).sum(axis=0)
        for j in range(len(self.slots)):
            has = bound[j] >= 0
            stream = self.slots[j].stream
            for name, t in self._slot_fields(j):
                col = self.gather(stream, j, name, bound[j, has], batch, n_pending)
                values = np.zeros(n, dtype=DTYPES[t])
                nulls = np.zeros(n, dtype=bool)
                values[has] = col.values
                if col.nulls is not None:
                    nulls[has] = col.nulls
                out[f"{j}:{name}"] = values
                out[f"{j}:{name}{NULL_SUFFIX}"] = nulls
        return out

    # ---- kernels that walk each key's rows (one instance per key at a time)

    def key_runs(self, batch: Batch, n_pending: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per key with rows in the batch: its first row, one past its last, its code
        and its state row (-1: none)."""
        codes = batch.rows.codes
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) \
            else np.empty(0, dtype=np.int64)
        ends = np.append(starts[1:], len(codes)).astype(np.int64)
        group_code = codes[starts]
        held_of = np.full(len(batch.key_values), -1, dtype=np.int64)
        held_of[batch.pending_codes] = np.arange(n_pending)
        return starts, ends, group_code, held_of[group_code]

    def replace_walked(self, walked: Table, held: np.ndarray, end: int | None) -> None:
        """The state after a walk: the keys walked (``held``: their old state rows) as
        ``walked``, the others as they were unless WITHIN ran out by ``end`` (None:
        the caller sees to it)."""
        pending = self.pending
        untouched = np.ones(nrows(pending), dtype=bool)
        untouched[held[held >= 0]] = False
        if self.within is not None and end is not None:
            untouched &= pending[FIRST] + self.within > end
        self.pending = concat([take(pending, untouched), walked]) or self._empty_state()

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

    def restore(self, states: object) -> None:
        self.pending = self._checked(states, "the state")

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


def first_bound(bound: np.ndarray) -> np.ndarray:
    """Per partial match (a column of ``bound``: [slots, matches], -1 where a slot is
    empty), the event of its first filled slot: its first event."""
    if len(bound) == 0 or (bound[0] >= 0).all():
        return bound[0] if len(bound) else np.empty(0, dtype=np.int64)
    first = (bound >= 0).argmax(axis=0)
    return bound[first, np.arange(bound.shape[1])]


_INT = np.empty(0, dtype=np.int64)
