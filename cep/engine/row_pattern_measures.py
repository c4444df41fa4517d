"""MATCH_RECOGNIZE's MEASURES for one output row: the rows navigation names within a
match (``cep.engine.row_pattern_nav``) and aggregates over a variable's rows, with
RUNNING semantics (up to the output row) or FINAL (the whole match).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cep.engine import row_pattern_matcher as matcher
from cep.engine.event_rows import Row, as_column
from cep.engine.exact_sum import float_sum
from cep.engine.expr import Col
from cep.engine.row_pattern_nav import position
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, Nav, aggregate_qualifier


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
    (``grammar.row_nav.final_qualifier``; the field CLASSIFIER is each row's label);
    NULL for a row in no match."""
    qualifier, final_arg = (aggregate_qualifier(agg.arg.qualifier)  # type: ignore[union-attr]
                            if agg.arg is not None else (ALL, False))
    wanted = groups.get(qualifier)  # None: every row
    out = []
    for row in content:
        if row.labels is None:  # a row in no match: every measure is NULL
            out.append(None)
            continue
        upto = len(row.labels) if final or final_arg else row.current + 1
        labels = row.labels[:upto]
        if agg.arg is None:
            out.append(len(labels))
            continue
        ref = agg.arg
        values = [v if ref.name == CLASSIFIER  # type: ignore[union-attr]
                  else row.rows[row.before + k].get(ref.name)  # type: ignore[union-attr]
                  for k, v in enumerate(labels) if wanted is None or v in wanted]
        values = [x for x in values if x is not None]
        out.append(_reduce(agg.name, values))
    return as_column(out, agg.type)


def _reduce(name: str, values: list) -> object:
    if name == "count":
        return len(values)
    if not values:
        return None
    if name == "first":
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
