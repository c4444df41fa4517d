"""MATCH_RECOGNIZE's MEASURES for one output row: the rows navigation names within a
match (``cep.engine.row_patterns.navigation``) and aggregates over a variable's rows, with
RUNNING semantics (up to the output row) or FINAL (the whole match).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cep.engine.event_rows import Row, as_column
from cep.engine.expr import Col, Env, collect_nodes, evaluate
from cep.engine.row_patterns import interpreter as matcher
from cep.engine.row_patterns.exact_sum import float_sum
from cep.engine.row_patterns.navigation import position
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, MATCH_NUMBER, Nav, aggregate_rows


@dataclass(frozen=True)
class MatchRow:
    """One output row's content: the match's labels (None: a row in no match), its
    rows preceded by ``before`` rows of the partition (what PREV in MEASURES may read),
    its number, the current row (RUNNING semantics: the row ALL ROWS PER MATCH outputs;
    ONE ROW PER MATCH: the last) and the row whose fields ALL ROWS PER MATCH outputs (an
    empty match's: its start row)."""

    rows: list[Row]
    before: int
    labels: list[str] | None
    number: int
    current: int
    row: Row


def measure_value(ref: ir.FieldRef, row: MatchRow) -> object:
    """A measure's field reference for one output row: the match number, or the row a
    navigation names: within the match, or (PREV, NEXT) the partition's rows before or
    after it (``rows`` holds those NEXT can reach; NULL past the partition's last row);
    CLASSIFIER is NULL outside the match, and every measure NULL for a row in no match."""
    if row.labels is None:
        return None
    if ref.qualifier == MATCH:
        return row.number
    nav = Nav.parse(ref.qualifier)
    if nav is None:
        return None
    at = position(nav, row.labels, row.current)
    if at is None or not -row.before <= at < len(row.rows) - row.before:
        return None
    if ref.name == CLASSIFIER:
        return row.labels[at] if 0 <= at < len(row.labels) else None
    return row.rows[row.before + at].get(ref.name)


def aggregate(agg: ir.Agg, content: list[MatchRow], final: bool,
              groups: dict[str, tuple[str, ...]]) -> Col:
    """One aggregate per output row over its variable's rows of the match (``__all``:
    every row; a SUBSET's name: its variables' rows; NULLs skipped), up to the current
    row unless ``final`` or its argument's qualifier says FINAL
    (``grammar.row_nav.final_qualifier``); NULL for a row in no match. Its arguments are
    evaluated on each of those rows, for the whole batch at once: a field is the row's,
    CLASSIFIER the row's label, MATCH_NUMBER the match's number."""
    qualifier, final_arg = aggregate_rows(agg) if agg.arg is not None else (ALL, False)
    wanted = groups.get(qualifier)  # None: every row
    covered: list[tuple[MatchRow, list[int]] | None] = []
    for row in content:
        if row.labels is None:  # a row in no match: every measure is NULL
            covered.append(None)
            continue
        upto = len(row.labels) if final or final_arg else row.current + 1
        covered.append((row, [k for k, v in enumerate(row.labels[:upto])
                              if wanted is None or v in wanted]))
    if agg.arg is None:
        return as_column([None if c is None else len(c[1]) for c in covered], agg.type)
    args = [_per_row(x, covered) for x in (agg.arg, agg.by) if x is not None]
    out, at = [], 0
    for c in covered:
        if c is None:
            out.append(None)
            continue
        n = len(c[1])
        out.append(_reduce(agg.name, *(a[at:at + n] for a in args)))
        at += n
    return as_column(out, agg.type)


def _per_row(expr: ir.TExpr, covered: list[tuple[MatchRow, list[int]] | None]) -> list:
    """``expr`` on every row each output row's aggregate covers, one after the other
    (None for NULL)."""
    flat = [(row, k) for c in covered if c is not None for row in (c[0],) for k in c[1]]
    env = Env(len(flat))
    for ref in collect_nodes([expr], ir.FieldRef):
        if ref.name == CLASSIFIER:
            values = [row.labels[k] for row, k in flat]  # type: ignore[index]
        elif ref.name == MATCH_NUMBER:
            values = [row.number for row, _ in flat]
        else:
            values = [row.rows[row.before + k].get(ref.name) for row, k in flat]
        env.columns[(ref.qualifier, ref.name)] = as_column(values, ref.type)
    col = evaluate(expr, env)
    values = col.values.tolist()
    if col.nulls is not None:
        for i in np.flatnonzero(col.nulls).tolist():
            values[i] = None
    return values


def _reduce(name: str, values: list, by: list | None = None) -> object:
    """The aggregate of one output row's values (None for NULL); ``by`` is max_by's
    and min_by's ordering values, row by row."""
    if by is not None:  # x of the first row with the largest (smallest) non-null y
        pairs = [(y, x) for x, y in zip(values, by, strict=True) if y is not None]
        if not pairs:
            return None
        pick = max if name == "max_by" else min
        best = pick(y for y, _ in pairs)
        return next(x for y, x in pairs if y == best)
    values = [x for x in values if x is not None]
    if name == "count":
        return len(values)
    if not values:
        return None
    if name in ("first", "arbitrary"):  # arbitrary: the first non-null in match order
        return values[0]
    if name == "last":
        return values[-1]
    if name in ("min", "max"):
        return min(values) if name == "min" else max(values)
    total = float_sum(values) if isinstance(values[0], float) else sum(values)
    if name == "sum":
        return total
    if name == "avg":
        return total / len(values)
    if len(values) < 2:  # stddev (sample)
        return None
    mean = float_sum(values) / len(values)
    return math.sqrt(float_sum([(x - mean) * (x - mean) for x in values]) / (len(values) - 1))


def first_waiting(state: dict, skip: str, skip_to: tuple[str, ...], after: int
                  ) -> float:
    """The start of the first match the partition could decide now that lacks the
    ``after`` rows following its last row (what NEXT in MEASURES reads past it), or
    infinity: that match's report, and those after it, wait for the rows (or the end of
    the input), as a match that could still grow does. The matcher's decision is tried
    on a copy of the state it changes."""
    trial = {**state, "threads": list(state["threads"]), "found": dict(state["found"])}
    # rows 0 .. arrived - 1 are here (fed, or waiting for the rows NEXT in DEFINE reads)
    arrived = state["base"] + len(state["rows"]) + len(state.get("ahead", ()))
    return next((d.start for d in matcher.decide(trial, skip, skip_to)
                 if d.labels and d.start + len(d.labels) + after > arrived), math.inf)
