"""``S#lastevent AS LE, W#groupwin(k)#win AS TW WHERE LE.k = TW.k``: an arriving event
against the window rows of its key that came before it.

Semantics: every event of the trigger stream that passes its filter and the WHERE
conjuncts that only read ``LE`` is evaluated once. Its window is the key's ``W`` window as
it stood just before the event (rows strictly earlier in processing order: effective
time, then (seq, sub); for ``#length(H)`` the last H of them; for ``#time(T)`` those with
effective time above the trigger's time − T), so an event never meets itself. The
remaining WHERE conjuncts filter the (trigger, window row) pairs that feed the
aggregates; an empty window still produces a row (count 0, other aggregates NULL) for
HAVING to judge.

Pairs are materialised in chunks so memory stays bounded for large windows.
"""

from __future__ import annotations

import itertools

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.emit import emit, timestamp_col
from cep.engine.expr import Col, Env, collect_aggregates, truth
from cep.engine.functions import text_module
from cep.engine.output import empty_output, event_stamps
from cep.engine.table import KEY, NULL_SUFFIX, RELEASE, SEQ, TIME, Table, concat, nrows, take
from cep.engine.windows.aggregates import compute_aggregates
from cep.engine.windows.keyed_window import (
    KeyedWindow,
    Merged,
    WindowState,
    count_before,
    order_value,
    processing_order,
)
from grammar import ir

PAIRS_PER_CHUNK = 2_000_000


class JoinOperator(WindowState):
    """Runs one :class:`ir.JoinRule` for all keys of an engine."""

    def __init__(self, rule: ir.JoinRule, trigger_stream: ir.StreamDef,
                 window_stream: ir.StreamDef) -> None:
        self.rule = rule
        self.trigger_stream = trigger_stream
        self.window_stream = window_stream
        self.window = KeyedWindow(rule.window)
        self.aggs = collect_aggregates([rule.having, *(c.expr for c in rule.columns)])
        # aggregates with a vectorised kernel that needs no (trigger, row) pairs
        self.fast = {agg: spec for agg in self.aggs
                     if (spec := _fast_spec(agg, rule)) is not None}
        # window texts the fast similarity kernel reads are kept as term rows
        self.term_fields = sorted({w for t, w in self.fast.values() if w})
        self.window_fields = _window_fields(rule, window_stream, set(self.fast))

    def process(self, trigger_rows: Table, window_rows: Table, clock: Watermark) -> Table:
        """One batch: both tables have every column of their stream (maybe no rows);
        the window's rows also leave by the watermark (``clock``)."""
        rule = self.rule
        window_rows = _filtered(window_rows, rule.window_filter, ())
        window_rows = _projected(_with_terms(window_rows, self.term_fields),
                                 self.window_fields)
        trigger_rows = _filtered(trigger_rows, rule.trigger_filter, (rule.trigger_alias,),
                                 rule.trigger_where)
        if (nrows(trigger_rows) == 0 and nrows(window_rows) == 0
                and not (self.window.rows and nrows(self.window.rows))):
            return empty_output()
        merged = self.window.merge(window_rows, trigger_rows[KEY])
        out = self._evaluate(merged, trigger_rows) if nrows(trigger_rows) else empty_output()
        self.window.retain(merged, clock.end)
        return out

    def due_keys(self, until: int) -> list:
        return self.window.due_keys(until)

    def _evaluate(self, merged: Merged, triggers: Table) -> Table:
        codes = merged.query_codes
        start = np.searchsorted(merged.codes, codes)  # each key's first row: codes are sorted
        hi = count_before(merged.codes, processing_order(merged.table), codes,
                          processing_order(triggers), inclusive=False)
        lo = self.window.sliding_segments(merged, codes, hi, start, triggers[TIME])
        fast = self._fast_values(merged, triggers, lo, hi)
        slow = [agg for agg in self.aggs if agg not in fast]
        if not slow:
            return self._emit(triggers, fast)
        parts = []
        for a, b in _chunks(hi - lo, PAIRS_PER_CHUNK):
            window = slice(a, b)
            aggs = self._pair_aggregates(slow, merged, take(triggers, window), lo[window],
                                         hi[window])
            aggs.update({agg: _slice(col, window) for agg, col in fast.items()})
            parts.append(self._emit(take(triggers, window), aggs))
        return concat(parts)

    def _fast_values(self, merged: Merged, triggers: Table, lo: np.ndarray,
                     hi: np.ndarray) -> dict[ir.Agg, Col]:
        out = {}
        for agg, (trigger_field, window_field) in self.fast.items():
            if agg.name == "count":
                out[agg] = Col(hi - lo)
                continue
            best = text_module().max_similarity_in_segments(
                self._trigger_terms(merged, triggers, hi, trigger_field, window_field),
                merged.query_codes,
                (merged.table[TERMS + window_field], merged.table[NORM2 + window_field]),
                lo, hi, having_cap(self.rule.having, agg))
            empty = np.isnan(best)
            out[agg] = Col(np.where(empty, 0.0, best), empty if empty.any() else None)
        return out

    def _trigger_terms(self, merged: Merged, triggers: Table, hi: np.ndarray,
                       trigger_field: str, window_field: str) -> tuple[np.ndarray, np.ndarray]:
        """The triggers' term rows. In a self-join on one field (FSD: a tweet against
        earlier tweets) each trigger's own row sits in the merged window right after its
        segment, already tokenised: reuse it rather than tokenise the batch twice."""
        rows = merged.table
        if (self.rule.trigger_stream == self.rule.window_stream
                and trigger_field == window_field and nrows(rows)):
            own = np.minimum(hi, nrows(rows) - 1)
            if np.array_equal(order_value(rows)[own], order_value(triggers)):
                return rows[TERMS + window_field][own], rows[NORM2 + window_field][own]
        return text_module().term_rows(_texts(triggers, trigger_field))

    def _pair_aggregates(self, aggs: list[ir.Agg], merged: Merged, triggers: Table,
                         lo: np.ndarray, hi: np.ndarray) -> dict[ir.Agg, Col]:
        """Aggregates over explicit (trigger, window row) pairs, for any expression."""
        rule = self.rule
        lengths = hi - lo
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        pair_trigger = np.repeat(np.arange(len(lo)), lengths)
        pair_row = np.repeat(lo - offsets[:-1], lengths) + np.arange(offsets[-1])
        pairs = Env(int(offsets[-1]))
        pairs.bind_table(rule.trigger_alias, take(triggers, pair_trigger))
        pairs.bind_table(rule.window_alias, take(merged.table, pair_row))
        pair_mask = truth(rule.pair_where, pairs)
        return compute_aggregates(aggs, pairs, pair_mask, offsets[:-1], offsets[1:])

    def _emit(self, triggers: Table, aggs: dict[ir.Agg, Col]) -> Table:
        rule = self.rule
        trig_env = Env(nrows(triggers))
        trig_env.bind_table(rule.trigger_alias, triggers)
        return emit(rule.name, rule.columns, rule.having, triggers[KEY], trig_env, aggs,
                    timestamp_col(triggers, self.trigger_stream.timestamp),
                    event_stamps(triggers[RELEASE], triggers[TIME], triggers[SEQ]))


def _chunks(lengths: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Split triggers into runs whose pair counts add up to about ``budget``."""
    if len(lengths) == 0:
        return []
    total = np.cumsum(lengths)
    bounds = [0]
    while bounds[-1] < len(lengths):
        base = total[bounds[-1] - 1] if bounds[-1] else 0
        nxt = int(np.searchsorted(total, base + budget, side="right"))
        bounds.append(max(nxt, bounds[-1] + 1))
    return list(itertools.pairwise(bounds))


def _fast_spec(agg: ir.Agg, rule: ir.JoinRule) -> tuple[str, str] | None:
    """``count(*)`` or ``max(similarity(LE.a, TW.b))`` with no pair filter: computed from
    window segments directly (the First Story Detection shape)."""
    if rule.pair_where is not None:
        return None
    if agg.name == "count" and agg.arg is None:
        return ("", "")
    arg = agg.arg
    if agg.name != "max" or not (isinstance(arg, ir.Func) and arg.name == "similarity"):
        return None
    refs = {a.qualifier: a.name for a in arg.args if isinstance(a, ir.FieldRef)}
    if len(arg.args) != 2 or set(refs) != {rule.trigger_alias, rule.window_alias}:
        return None
    return refs[rule.trigger_alias], refs[rule.window_alias]


def having_cap(having: ir.TExpr | None, agg: ir.Agg) -> float:
    """A value above which ``agg`` cannot pass HAVING, or infinity.

    When HAVING is a conjunction with a conjunct ``agg <= c`` or ``agg < c`` (also written
    ``c >= agg``, or with ``coalesce(agg, ...)`` in place of ``agg``) and ``c`` a numeric
    constant, a trigger whose aggregate exceeds ``c`` is dropped whatever the exact value
    (``false AND x`` is false), so the similarity kernel may stop looking once it has
    found a value above ``c``. FSD's ``coalesce(MAX(similarity(...)), 0) <= tau`` is the
    case that matters: a tweet of a big story stops at its first similar tweet."""
    if isinstance(having, ir.Op) and having.op == "and":
        return min(having_cap(arg, agg) for arg in having.args)
    if not isinstance(having, ir.Op) or len(having.args) != 2:
        return np.inf
    sides = {"<=": having.args, "<": having.args, ">=": having.args[::-1],
             ">": having.args[::-1]}.get(having.op)
    if sides is None:
        return np.inf
    bounded, bound = sides
    if isinstance(bounded, ir.Coalesce) and bounded.args:
        bounded = bounded.args[0]
    if (bounded != agg or not isinstance(bound, ir.Const) or isinstance(bound.value, bool)
            or not isinstance(bound.value, int | float)):
        return np.inf
    return float(bound.value)


TERMS = "__terms:"  # window columns of term_rows(field): packed term columns ...
NORM2 = "__norm2:"  # ... and squared norms (NaN for NULL), computed once per row


def _window_fields(rule: ir.JoinRule, stream: ir.StreamDef,
                   fast: set[ir.Agg]) -> frozenset[str]:
    """The window stream's fields the rule reads once a row is in the window (its filter
    has already run), outside the fast aggregates (which read term rows instead): only
    these are kept, because the retained rows are the engine's state, written every batch
    and shipped when a key moves (FSD keeps 500 tweets per key and needs none of their
    fields, only their term rows)."""
    names = {stream.timestamp} if stream.timestamp else set()
    stack = [e for e in (rule.pair_where, rule.having, *(c.expr for c in rule.columns)) if e]
    while stack:
        expr = stack.pop()
        if isinstance(expr, ir.FieldRef) and expr.qualifier == rule.window_alias:
            names.add(expr.name)
        if expr not in fast:
            stack.extend(ir.children(expr))
    return frozenset(names)


def _with_terms(rows: Table, fields: list[str]) -> Table:
    """``rows`` plus the term-row columns of ``fields`` (NULL texts get NaN norms)."""
    if not fields:
        return rows
    out = dict(rows)
    for field in fields:
        out[TERMS + field], out[NORM2 + field] = text_module().term_rows(_texts(rows, field))
    return out


def _texts(rows: Table, field: str) -> np.ndarray:
    """A text column with its NULLs as ``None`` (what :func:`term_rows` expects)."""
    mask = rows.get(field + NULL_SUFFIX)
    return rows[field] if mask is None else np.where(mask, None, rows[field])


def _projected(rows: Table, fields: frozenset[str]) -> Table:
    """``rows`` without the fields nobody reads (internal ``__`` columns always stay)."""
    return {name: col for name, col in rows.items()
            if name.startswith("__") or name.removesuffix(NULL_SUFFIX) in fields}


def _slice(col: Col, window: slice) -> Col:
    return Col(col.values[window], None if col.nulls is None else col.nulls[window])


def _filtered(rows: Table, condition: ir.TExpr | None, aliases: tuple[str, ...],
              also: ir.TExpr | None = None) -> Table:
    """Rows passing a stream filter (unqualified names) and an alias-qualified condition."""
    if condition is None and also is None:
        return rows
    env = Env(nrows(rows))
    env.bind_table("", rows)
    for alias in aliases:
        env.bind_table(alias, rows)
    return take(rows, truth(condition, env) & truth(also, env))
