"""MATCH_RECOGNIZE on the compiled matcher: the operator side of the kernel.

:class:`MatchRecognizeOperator` hands a rule here when :func:`plan` admits it (decided
once, when the operator is made). Per batch, for all keys of the engine at once:

1. the batch's rows are sorted by (time, seq) and put, key by key, after each key's
   buffered rows (one stable argsort by key, no loop over keys);
2. DEFINE's conjuncts that read the row and ``PREV`` rows are evaluated column-wise
   over those rows (one bool per row and variable), and the left sides and fields of
   the conjuncts that compare with another variable's last row, and the right sides
   and aggregated fields of those that compare a running aggregate;
3. one call of :func:`cep.engine.row_patterns.kernel.run_keys` walks every key;
4. MEASURES and SELECT are computed column-wise from the decided matches' row indices
   (:mod:`cep.engine.row_patterns.columns`), and stamped as the interpreter stamps them
   (the deciding row's seq and time; a WITHIN deadline's, or the input's end).

The state of every key is one :data:`Store`: a dict of numpy arrays (per key its
partition index of the first buffered row, next start, resume row, match number, next
deadline; CSR segments of its buffered rows, threads, held matches and label arena).
The keys a batch splits off, merges back or hands over move as one such dict of theirs
(:class:`KeyStores`), which reads as one key's dict per key where a caller asks key by
key: it moves through the codec like any other state, never as a pickle.

The measured gain is at the top of :mod:`cep.engine.row_patterns.kernel`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from cep.engine import codec
from cep.engine.clock import END_OF_TIME, Watermark
from cep.engine.codec import StateFormatError
from cep.engine.expr import Col, Env, collect_nodes, evaluate, truth
from cep.engine.output import TIMER, Stamps, build_output, empty_output
from cep.engine.row_patterns.columns import (
    Matches,
    aggregate,
    reference,
    row_fields,
    with_current,
)
from cep.engine.row_patterns.interpreter import new_state
from cep.engine.row_patterns.kernel import BY_DEADLINE, BY_END, BY_ROW, COMPARES, run_keys
from cep.engine.row_patterns.plan import DEFINE_AGGREGATES, KernelPlan
from cep.engine.table import (
    DTYPES,
    KEY,
    NULL_SUFFIX,
    RELEASE,
    SEQ,
    SUB,
    TIME,
    Table,
    factorize,
    nrows,
)
from grammar import ir

Store = dict[str, np.ndarray]
#: ``at`` of a match the end of the input decides: after every timer's
END_AT = (1 << 63) - 1
#: per-key values of a store, and its CSR families (offsets, member arrays)
SCALARS = ("keys", "base", "next", "resume", "number", "deadline", "covered")
FAMILIES = {"th": ("th_start", "th_pc", "th_len", "th_node", "th_last"),
            "fd": ("fd_start", "fd_len", "fd_node"),
            "ar": ("ar_var", "ar_parent")}
ROW = "row:"  # the prefix of a buffered row column


class KernelOperator:
    """One MATCH_RECOGNIZE rule for all keys of an engine, on the compiled matcher."""

    def __init__(self, rule: ir.MatchRecognizeRule, stream: ir.StreamDef, kplan: KernelPlan,
                 groups: dict[str, tuple[str, ...]], numbered: bool) -> None:
        self.rule = rule
        self.stream = stream
        self.plan = kplan
        self.groups = groups
        self.numbered = numbered
        types = dict(stream.fields)
        exprs = [c.expr for c in rule.measures]
        names = {r.name for r in collect_nodes(exprs, ir.FieldRef) if r.name in types}
        for conjuncts in kplan.local:
            names |= {r.name for r in collect_nodes(list(conjuncts), ir.FieldRef)}
        for res in kplan.residuals:
            names |= {r.name for r in collect_nodes([res.lhs], ir.FieldRef)} | {res.field}
        for agg in kplan.aggregates:
            names |= {r.name for r in collect_nodes([agg.rhs], ir.FieldRef)} if agg.rhs else set()
        names |= set(kplan.aggregate_fields) | set(kplan.residual_fields)
        if stream.timestamp:
            names.add(stream.timestamp)
        if rule.rows == "all":  # each output row carries its row's fields
            names |= set(types)
        self.fields = tuple(sorted(names))
        self.columns = (TIME, *self.fields)
        self.dtypes = {TIME: np.dtype(np.int64),
                       **{name: np.dtype(DTYPES[types[name]]) for name in self.fields}}
        self.store = self._empty()
        # the residuals' counts per variable, as the VM reads them
        counts = np.bincount([r.var for r in kplan.residuals], minlength=len(kplan.variables))
        self.res_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.res_nav = np.array([r.nav for r in kplan.residuals], np.int64)
        self.res_field = np.array([kplan.residual_fields.index(r.field)
                                   for r in kplan.residuals], np.int64)
        self.res_op = np.array([COMPARES[r.op] for r in kplan.residuals], np.int64)
        # the aggregate conditions, the same way
        aggs = kplan.aggregates
        counts = np.bincount([a.var for a in aggs], minlength=len(kplan.variables))
        self.ag_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.ag_fn = np.array([DEFINE_AGGREGATES[a.fn] for a in aggs], np.int64)
        self.ag_col = np.array([-1 if a.field is None else kplan.aggregate_fields.index(a.field)
                                for a in aggs], np.int64)
        self.ag_set = np.zeros((len(aggs), len(kplan.variables)), np.bool_)
        for k, agg in enumerate(aggs):
            self.ag_set[k, list(agg.members)] = True
        self.ag_op = np.array([COMPARES[a.op] for a in aggs], np.int64)
        self.ag_nav = np.array([a.nav for a in aggs], np.int64)
        self.ag_navf = np.array([kplan.residual_fields.index(a.nav_field) if a.nav >= 0 else -1
                                 for a in aggs], np.int64)

    # ---- processing

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's rows and the deadlines the watermark reaches, for every key."""
        table = tables[self.rule.stream]
        keep = None
        if self.rule.filter is not None:
            env = Env(nrows(table))
            env.bind_table("", table)
            keep = truth(self.rule.filter, env)
        store = self.store
        n_old = len(store["keys"])
        batch_slot = np.empty(0, np.int64)
        if nrows(table) and (keep is None or keep.any()):
            # each distinct key of the batch once against the store's keys: its slot
            codes = factorize(table[KEY])
            _, first = np.unique(codes, return_index=True)
            both = _objects([*store["keys"].tolist(), *table[KEY][first].tolist()])
            code_slot = factorize(both)[n_old:]
            store = _concat([store, self._empty(both[n_old:][code_slot >= n_old])])
            # the rows in processing order (time, seq, sub): the kernel groups them by key
            order = np.lexsort((table[SUB], table[SEQ], table[TIME]))
            if keep is not None:
                order = order[keep[order]]
            batch_slot = code_slot[codes[order]]
            # only the columns the rule reads (a batch's text fields are not copied)
            table = {name: table[name][order]
                     for name in (SEQ, TIME, RELEASE, *self.fields,
                                  *(f + NULL_SUFFIX for f in self.fields)) if name in table}
        else:
            table = {}
        if not len(store["keys"]):
            self.store = store
            return empty_output()
        out = self._run(store, table, batch_slot, clock)
        return out

    def _run(self, store: Store, table: Table, batch_slot: np.ndarray, clock: Watermark
             ) -> Table:
        n_keys = len(store["keys"])
        buffered = np.diff(store["row_off"])
        n_old = int(store["row_off"][-1])
        n_new = len(batch_slot)
        all_slot = np.concatenate([np.repeat(np.arange(n_keys), buffered), batch_slot])
        pos = np.argsort(all_slot, kind="stable")
        counts = np.bincount(all_slot, minlength=n_keys)
        seg_hi = np.cumsum(counts)
        seg_lo = seg_hi - counts
        new_lo = seg_lo + buffered
        cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in self.columns:
            fresh = table[name] if n_new else np.empty(0, store[ROW + name].dtype)
            fresh_null = table.get(name + NULL_SUFFIX) if n_new else None
            if fresh_null is None:
                fresh_null = np.zeros(n_new, bool)
            values = _join(store[ROW + name], fresh)[pos]
            nulls = np.concatenate([store[ROW + name + NULL_SUFFIX], fresh_null])[pos]
            cols[name] = (values, nulls)
        src = np.concatenate([np.full(n_old, -1, np.int64), np.arange(n_new)])[pos]
        rank = np.arange(len(pos)) - np.repeat(seg_lo, counts)
        (flags, res_lhs, res_lhs_null, res_col, res_col_null, ag_rhs, ag_rhs_null, ag_vals,
         ag_nulls) = self._defines(cols, rank)
        kp = self.plan
        result = run_keys(
            seg_lo, new_lo, seg_hi, store["base"], cols[TIME][0].astype(np.int64),
            flags, self.res_off, self.res_nav, self.res_field, self.res_op,
            res_lhs, res_lhs_null, res_col, res_col_null,
            self.ag_off, self.ag_fn, self.ag_col, self.ag_set, self.ag_op, ag_rhs,
            ag_rhs_null, self.ag_nav, self.ag_navf, ag_vals, ag_nulls, kp.reads_agg,
            kp.pvar, kp.pmatch, kp.pexcl, kp.clo_off, kp.clo_pc, kp.clo_start,
            kp.reads_last, len(kp.variables),
            -1 if self.rule.within_us is None else int(self.rule.within_us), kp.skip,
            kp.skip_set, clock.end, END_OF_TIME, self.rule.prev_depth,
            store["th_off"], store["th_start"], store["th_pc"], store["th_len"],
            store["th_node"], store["th_last"],
            store["fd_off"], store["fd_start"], store["fd_len"], store["fd_node"],
            store["ar_off"], store["ar_var"], store["ar_parent"],
            store["next"], store["resume"], store["number"], store["covered"],
            self.rule.rows == "all" and self.rule.empty == "unmatched")
        (m_key, m_start, m_len, m_number, m_kind, m_row, m_deadline, _, labels, hidden,
         th_off, th_start, th_pc, th_len, th_node, th_last,
         fd_off, fd_start, fd_len, fd_node, ar_off, ar_var, ar_parent,
         o_next, o_resume, o_number, o_keep, o_deadline, o_covered) = result
        # the rows each key keeps: from its first still needed on
        keep = (store["base"][np.repeat(np.arange(n_keys), counts)] + rank
                >= np.repeat(o_keep, counts))
        kept = np.bincount(all_slot[pos][keep], minlength=n_keys)
        after: Store = {
            "keys": store["keys"], "base": o_keep, "next": o_next, "resume": o_resume,
            "number": o_number, "deadline": o_deadline, "covered": o_covered,
            "row_off": np.concatenate([[0], np.cumsum(kept)]).astype(np.int64),
            "th_off": th_off, "th_start": th_start, "th_pc": th_pc.astype(np.int64),
            "th_len": th_len, "th_node": th_node, "th_last": th_last,
            "fd_off": fd_off, "fd_start": fd_start, "fd_len": fd_len, "fd_node": fd_node,
            "ar_off": ar_off, "ar_var": ar_var.astype(np.int64), "ar_parent": ar_parent,
        }
        for name, (values, nulls) in cols.items():
            after[ROW + name] = values[keep]
            after[ROW + name + NULL_SUFFIX] = nulls[keep]
        alive = ((kept > 0) | (np.diff(th_off) > 0) | (np.diff(fd_off) > 0)
                 | ((o_number > 0) & self.numbered) | ((o_next > 0) & self.plan.anchored))
        self.store = after if alive.all() else _take(after, np.flatnonzero(alive))
        if not len(m_key):
            return empty_output()
        matches = with_current(m_start - store["base"][m_key] + seg_lo[m_key], m_len,
                               m_number, labels.astype(np.int64), self.plan.variables,
                               self.rule.rows == "all", self.rule.empty != "omit", hidden)
        stamps, ts = self._stamps(table, cols, src, m_kind, m_row, m_deadline, clock)
        each = matches.match
        return self._output(store["keys"][m_key][each], stamps.take(each),
                            Col(ts.values[each]) if ts is not None else None, matches, cols)

    def _defines(self, cols: dict[str, tuple[np.ndarray, np.ndarray]], rank: np.ndarray
                 ) -> tuple[np.ndarray, ...]:
        """Per row, each variable's row-and-PREV conjuncts (True: none), the left sides
        and fields of the residual comparisons, and the right sides and aggregated fields
        of the aggregate comparisons, as the VM reads them."""
        kp = self.plan
        n = len(rank)
        flags = np.ones((n, len(kp.variables)), np.bool_)
        res_lhs = np.zeros((n, len(kp.residuals)), np.float64)
        res_lhs_null = np.zeros((n, len(kp.residuals)), np.bool_)
        ag_rhs = np.zeros((n, len(kp.aggregates)), np.float64)
        ag_rhs_null = np.zeros((n, len(kp.aggregates)), np.bool_)
        for v, var in enumerate(kp.variables):
            exprs = [*kp.local[v], *(r.lhs for r in kp.residuals if r.var == v),
                     *(a.rhs for a in kp.aggregates if a.var == v and a.rhs is not None)]
            if not exprs:
                continue
            env = Env(n)
            for ref in collect_nodes(exprs, ir.FieldRef):
                values, nulls = cols[ref.name]
                back = 0 if ref.qualifier == var else int(ref.qualifier[6:])
                at = np.maximum(np.arange(n) - back, 0)
                env.columns[(ref.qualifier, ref.name)] = Col(values[at],
                                                             nulls[at] | (rank < back))
            for conjunct in kp.local[v]:
                flags[:, v] &= truth(conjunct, env)
            for k, res in enumerate(kp.residuals):
                if res.var == v:
                    col = evaluate(res.lhs, env)
                    res_lhs[:, k] = col.values
                    res_lhs_null[:, k] = col.null_mask()
            for k, agg in enumerate(kp.aggregates):
                if agg.var == v and agg.rhs is not None:
                    col = evaluate(agg.rhs, env)
                    ag_rhs[:, k] = np.broadcast_to(col.values, n)
                    ag_rhs_null[:, k] = np.broadcast_to(col.null_mask(), n)
        res_col, res_col_null = _float_columns(cols, kp.residual_fields, n)
        ag_vals, ag_nulls = _float_columns(cols, kp.aggregate_fields, n)
        return (flags, res_lhs, res_lhs_null, res_col, res_col_null, ag_rhs, ag_rhs_null,
                ag_vals, ag_nulls)

    def _stamps(self, table: Table, cols: dict, src: np.ndarray, kind: np.ndarray,
                row: np.ndarray, deadline: np.ndarray, clock: Watermark
                ) -> tuple[Stamps, Col | None]:
        """Where each match sits in the reference order, and its time: the deciding
        row's; a WITHIN deadline's (reported at the first event whose watermark reaches
        it); the input's end (with the time of the key's last row)."""
        n = len(kind)
        by_row = kind == BY_ROW
        at_row = src[np.where(by_row, row, 0)] if len(src) else np.zeros(n, np.int64)
        at_row = np.where(by_row, at_row, 0)
        when = np.where(kind == BY_END, END_OF_TIME, deadline)
        reach = np.searchsorted(clock.wm, when, side="left")
        fired = np.where(reach < len(clock.wm),
                         clock.seq[np.minimum(reach, max(len(clock.seq) - 1, 0))]
                         if len(clock.seq) else clock.end_seq, clock.end_seq)
        seq = np.where(by_row, table[RELEASE][at_row] if len(src) and nrows(table) else 0,
                       fired).astype(np.int64)
        times = cols[TIME][0]
        at = np.where(by_row, 2 * times[row] + 1,
                      np.where(kind == BY_END, END_AT, 2 * deadline)).astype(np.int64)
        origin = np.where(by_row, table[SEQ][at_row] if nrows(table) else 0,
                          TIMER).astype(np.int64)
        if not self.stream.timestamp:
            return Stamps(seq, at, origin), None
        ts = np.where(kind == BY_DEADLINE, deadline, cols[self.stream.timestamp][0][row])
        return Stamps(seq, at, origin), Col(ts.astype(np.int64))

    def _output(self, keys: np.ndarray, stamps: Stamps, ts: Col | None, matches: Matches,
                cols: dict) -> Table:
        rule = self.rule
        m = len(keys)
        env = Env(m)
        exprs = [c.expr for c in rule.measures]
        for ref in collect_nodes(exprs, (ir.FieldRef, ir.Agg)):
            if isinstance(ref, ir.FieldRef):
                env.columns[(ref.qualifier, ref.name)] = matches.blank(
                    reference(ref, matches, cols))
        measures = Env(m)
        if rule.rows == "all":
            for name, type_name in self.stream.fields:
                measures.columns[("", name)] = row_fields(name, type_name, matches, cols)
        for column in rule.measures:
            # FINAL is in an aggregate's argument (grammar.row_nav.final_qualifier), as
            # the interpreter reads it
            aggs = {agg: matches.blank(aggregate(agg, matches, cols, self.groups, False))
                    for agg in collect_nodes([column.expr], ir.Agg)}
            measures.columns[("", column.name)] = evaluate(column.expr, env, aggs)
        values = [(c.name, c.expr.type, evaluate(c.expr, measures)) for c in rule.columns]
        return build_output(rule.name, keys, stamps, ts, values)

    # ---- per-key state

    def due_keys(self, until: int) -> list:
        deadline = self.store["deadline"]
        return self.store["keys"][(deadline >= 0) & (deadline <= until)].tolist()

    def keys(self) -> set:
        return set(self.store["keys"].tolist())

    def export(self, keys: list) -> KeyStores:
        """The states of those of ``keys`` this operator holds, in that order, removed
        from it, as one store (see :class:`KeyStores`)."""
        where = {k: n for n, k in enumerate(self.store["keys"].tolist())}
        slots = list(dict.fromkeys(where[k] for k in keys if k in where))
        leaving = np.zeros(len(where), bool)
        leaving[slots] = True
        out = KeyStores(_take(self.store, np.array(slots, np.int64)))
        self.store = _take(self.store, np.flatnonzero(~leaving))
        return out

    def import_states(self, states: Mapping[object, object]) -> None:
        parts = [self.store]
        if isinstance(states, KeyStores):  # one store of keys: taken in whole
            store = dict(states.store)
            self._check(store)
            if type(store.get("keys")) is not np.ndarray:
                raise StateFormatError("MATCH_RECOGNIZE state without its keys")
            self.store = _concat([*parts, store])
            return
        for key, state in states.items():
            if isinstance(state, dict) and set(state) == set(new_state()):
                state = self._from_interpreter(state)
            self._check(state)
            part = dict(state)  # type: ignore[call-overload]
            part["keys"] = _objects([key])
            parts.append(part)
        self.store = _concat(parts)

    def snapshot(self) -> object:
        return dict(self.store)

    def restore(self, state: object) -> None:
        if isinstance(state, list):  # the interpreter's snapshot: [[key, state], ...]
            self.store = self._empty()
            self.import_states({k: s for k, s in state})
            return
        self._check(state)
        # arrays the compiled matcher writes to or reads with one signature: contiguous
        # and writable (a blob's arrays may be read-only views of its bytes)
        self.store = {name: value if value.dtype == object
                      else np.require(value, requirements=["C", "W"])
                      for name, value in state.items()}  # type: ignore[union-attr]
        self.store["keys"] = _objects(list(self.store["keys"]))

    def _from_interpreter(self, state: dict) -> Store:
        """A key's state as the interpreter keeps it (a checkpoint made before the rule
        ran on the kernel) in the kernel's layout: the same rows, threads, held matches
        and counters; each thread's and match's labels a chain of its own."""
        index = {v: n for n, v in enumerate(self.plan.variables)}
        n_vars = len(index)
        out = self._empty(_objects([None]))
        rows = state["rows"]
        for name in self.columns:
            values = [row.get(name) for row in rows]
            nulls = np.array([v is None for v in values], bool)
            column = np.empty(len(values), self.dtypes[name])
            column[:] = [0 if v is None and self.dtypes[name].kind != "O" else v
                         for v in values]
            out[ROW + name], out[ROW + name + NULL_SUFFIX] = column, nulls
        out["row_off"] = np.array([0, len(rows)], np.int64)
        arena_var: list[int] = []
        arena_parent: list[int] = []

        # a node holds the instruction that took its row: any one of its variable and
        # of its exclusion reads back the same
        where = {(int(self.plan.pvar[pc]), bool(self.plan.pexcl[pc])): pc
                 for pc in range(len(self.plan.pvar)) if self.plan.pvar[pc] >= 0}

        def chain(labels: list[str], excluded: list[int]) -> int:
            node = -1
            for k, label in enumerate(labels):
                arena_var.append(where[(index[label], k in excluded)])
                arena_parent.append(node)
                node = len(arena_var) - 1
            return node

        threads = state["threads"]
        last = np.full((len(threads), n_vars), -1, np.int64)
        for t, (_, _, labels, _) in enumerate(threads):
            for k, label in enumerate(labels):
                last[t, index[label]] = k
        out.update(th_start=np.array([t[0] for t in threads], np.int64),
                   th_pc=np.array([t[1] for t in threads], np.int64),
                   th_len=np.array([len(t[2]) for t in threads], np.int64),
                   th_node=np.array([chain(t[2], t[3]) for t in threads], np.int64),
                   th_last=last, th_off=np.array([0, len(threads)], np.int64))
        found = sorted(state["found"].items())
        out.update(fd_start=np.array([s for s, _ in found], np.int64),
                   fd_len=np.array([len(f[0]) for _, f in found], np.int64),
                   fd_node=np.array([chain(*f) for _, f in found], np.int64),
                   fd_off=np.array([0, len(found)], np.int64),
                   ar_var=np.array(arena_var, np.int64),
                   ar_parent=np.array(arena_parent, np.int64),
                   ar_off=np.array([0, len(arena_var)], np.int64))
        deadline = -1
        if threads:
            deadline = (END_OF_TIME if self.rule.within_us is None else
                        rows[threads[0][0] - state["base"]][TIME] + self.rule.within_us)
        for name, value in (("base", state["base"]), ("next", state["next"]),
                            ("resume", state["resume"]), ("number", state["number"]),
                            ("covered", state["covered"]),
                            ("deadline", deadline)):
            out[name] = np.array([value], np.int64)
        del out["keys"]
        return out

    def _empty(self, keys: np.ndarray | None = None) -> Store:
        return _empty_store(self.dtypes, len(self.plan.variables), keys)

    def _check(self, state: object) -> None:
        """Refuse a state of another layout (the interpreter's, or other fields)."""
        wanted = set(self._empty()) - {"keys"}
        if not isinstance(state, dict) or set(state) - {"keys"} != wanted:
            raise StateFormatError("MATCH_RECOGNIZE state of another layout (the "
                                   "interpreter's, or another rule's): start from a new "
                                   "checkpoint")


@dataclass(frozen=True)
class KeyStores(Mapping):
    """Several keys' states as one :data:`Store` (its ``keys`` column names them): what
    :meth:`KernelOperator.export` gives and ``import_states`` takes in one piece, and
    what a batch's change holds of the rule (``Engine.merge_in``), coded as one dict
    of arrays. For whoever reads it key by key (the output rate limiter) it is a
    mapping from each key to that key's own store, made when asked.

    Why: a batch splits off and merges back every key it touches. A dict of arrays per
    key cost a slice of every array per key there and in the state codec: the flights'
    MATCH_RECOGNIZE job spent 9.1 core-seconds restoring and saving the engines' state
    on Spark against 2.7 processing."""

    store: Store

    def _slots(self) -> dict[object, int]:
        return {k: n for n, k in enumerate(self.store["keys"].tolist())}

    def __getitem__(self, key: object) -> Store:
        return _take(self.store, np.array([self._slots()[key]], np.int64))

    def __iter__(self) -> Iterator[object]:
        return iter(self.store["keys"].tolist())

    def __len__(self) -> int:
        return len(self.store["keys"])


codec.register("row_patterns.KeyStores", KeyStores)


def _float_columns(cols: dict[str, tuple[np.ndarray, np.ndarray]], fields: tuple[str, ...],
                   n: int) -> tuple[np.ndarray, np.ndarray]:
    """``fields`` of the rows as float64 (one column each) and their NULLs."""
    values = np.zeros((n, len(fields)), np.float64)
    nulls = np.zeros((n, len(fields)), np.bool_)
    for f, name in enumerate(fields):
        values[:, f] = cols[name][0]
        nulls[:, f] = cols[name][1]
    return values, nulls


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _join(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Two parts of a column, of one dtype (object if either is)."""
    if old.dtype == object or new.dtype == object:
        out = np.empty(len(old) + len(new), dtype=object)
        out[:len(old)] = old
        out[len(old):] = new
        return out
    return np.concatenate([old, new])


def _empty_store(dtypes: dict[str, np.dtype], n_vars: int, keys: np.ndarray | None = None
                 ) -> Store:
    """A store of ``keys`` (none) with nothing in them."""
    keys = _objects([]) if keys is None else keys
    n = len(keys)
    store: Store = {"keys": keys, "base": np.zeros(n, np.int64), "next": np.zeros(n, np.int64),
                    "resume": np.zeros(n, np.int64), "number": np.zeros(n, np.int64),
                    "deadline": np.full(n, -1, np.int64), "covered": np.zeros(n, np.int64),
                    "row_off": np.zeros(n + 1, np.int64)}
    for family, members in FAMILIES.items():
        store[family + "_off"] = np.zeros(n + 1, np.int64)
        for name in members:
            store[name] = (np.zeros((0, n_vars), np.int64) if name == "th_last"
                           else np.zeros(0, np.int64))
    for name, dtype in dtypes.items():
        store[ROW + name] = np.zeros(0, dtype)
        store[ROW + name + NULL_SUFFIX] = np.zeros(0, bool)
    return store


def _families(store: Store) -> dict[str, tuple[str, ...]]:
    rows = tuple(k for k in store if k.startswith(ROW))
    return {**FAMILIES, "row": rows}


def _take(store: Store, slots: np.ndarray) -> Store:
    """The keys ``slots`` of a store, in that order."""
    out: Store = {name: store[name][slots] for name in SCALARS}
    for family, members in _families(store).items():
        off = store[family + "_off"]
        lo, hi = off[slots], off[slots + 1]
        sizes = hi - lo
        index = np.repeat(lo - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        out[family + "_off"] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        for name in members:
            out[name] = store[name][index]
    return out


def _concat(stores: list[Store]) -> Store:
    """Stores of disjoint keys as one."""
    out: Store = {name: _objects([]) if name == "keys" else None for name in SCALARS}
    out["keys"] = _objects([k for s in stores for k in s["keys"].tolist()])
    for name in SCALARS[1:]:
        out[name] = np.concatenate([s[name] for s in stores]).astype(np.int64)
    for family, members in _families(stores[0]).items():
        sizes = np.concatenate([np.diff(s[family + "_off"]) for s in stores])
        out[family + "_off"] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        for name in members:
            parts = [s[name] for s in stores]
            if any(p.dtype == object for p in parts):
                out[name] = _objects([x for p in parts for x in p.tolist()])
            else:
                out[name] = np.concatenate(parts)
    return out
