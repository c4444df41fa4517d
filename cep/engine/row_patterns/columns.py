"""MATCH_RECOGNIZE's MEASURES column-wise over decided matches, for every output row.

The compiled matcher (:mod:`cep.engine.row_patterns.kernel`) gives each match as the row
index of its first row in the batch's columns, its length and one label (variable
number) per row. The values :mod:`cep.engine.row_patterns.measures` computes one output
row at a time in Python come out here for all output rows at once. An output row is a
match and its current row (RUNNING semantics read up to it): ONE ROW PER MATCH has one
per match, at its last row; ALL ROWS PER MATCH one per row of the match (an empty match
one at -1, where everything but the match number is NULL).

Both reduce to prefixes of each match's labels: a navigation's ``LAST(X)`` is the last
row labelled X up to the current one (a running maximum over the labels, reset at each
match), ``FIRST(X)`` the match's first such row; an aggregate is its running value at
the last row it reads (the current one, or the match's last for FINAL), computed in one
pass over the labels (:func:`running`: sums of doubles as :mod:`cep.engine.row_patterns.exact_sum`
defines them, compiled, so that both paths print the same digits).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

from cep.engine.expr import Col
from cep.engine.row_patterns.exact_sum import add_partial, overflowed, round_partials
from cep.engine.table import DTYPES, PLACEHOLDERS
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, Nav, aggregate_qualifier

Columns = dict[str, tuple[np.ndarray, np.ndarray]]
SUM, MIN, MAX = 0, 1, 2


@dataclass(frozen=True)
class Matches:
    """Decided matches: per match its first row (an index into the columns), length and
    number; ``labels`` one variable number per row of every match, match after match.
    ``match``/``current`` are the output rows: the match of each, and the position in
    it that RUNNING semantics read up to (-1: an empty match, or a row in no match).
    ``unmatched``: per match, whether it is a row in no match (WITH UNMATCHED ROWS:
    its output row's every measure is NULL)."""

    first: np.ndarray
    length: np.ndarray
    number: np.ndarray
    labels: np.ndarray
    variables: tuple[str, ...]
    match: np.ndarray
    current: np.ndarray
    unmatched: np.ndarray

    def blank(self, col: Col) -> Col:
        """``col`` with the output rows of rows in no match NULL."""
        if not self.unmatched.any():
            return col
        nulls = col.null_mask() | self.unmatched[self.match]
        return Col(col.values, nulls if nulls.any() else None)

    @cached_property
    def offset(self) -> np.ndarray:
        """Where each match's labels begin."""
        return np.cumsum(self.length) - self.length

    @cached_property
    def owner(self) -> np.ndarray:
        """The match of each label."""
        return np.repeat(np.arange(len(self.first)), self.length)

    @cached_property
    def rows(self) -> np.ndarray:
        """The column row of each label."""
        return np.repeat(self.first - self.offset, self.length) + np.arange(len(self.labels))

    @cached_property
    def starts(self) -> np.ndarray:
        """Whether each label is its match's first."""
        out = np.zeros(len(self.labels), bool)
        out[self.offset[self.length > 0]] = True
        return out

    def carrying(self, names: tuple[str, ...] | None) -> np.ndarray:
        """Which labels are one of ``names`` (None: every label)."""
        if names is None:
            return np.ones(len(self.labels), bool)
        wanted = [self.variables.index(v) for v in names if v in self.variables]
        return np.isin(self.labels, wanted)

    def label_at(self, upto: np.ndarray) -> np.ndarray:
        """The label index of each output row's position ``upto`` (-1 where < 0)."""
        return np.where(upto >= 0, self.offset[self.match] + upto, -1)

    def last_upto(self, mask: np.ndarray) -> np.ndarray:
        """Per label, the label index of the last label of ``mask`` up to it in its
        match (-1: none)."""
        marked = np.where(mask, np.arange(len(mask)), -1)
        best = np.maximum.accumulate(marked) if len(marked) else marked
        return np.where(best >= self.offset[self.owner] if len(best) else best, best, -1)


def with_current(first: np.ndarray, length: np.ndarray, number: np.ndarray,
                 labels: np.ndarray, variables: tuple[str, ...], every: bool,
                 show_empty: bool, hidden: np.ndarray) -> Matches:
    """The matches with their output rows: one per match at its last row, or (``every``)
    one per row of it that ``{- -}`` does not hide (``hidden``, per label), and one for
    an empty match where ``show_empty``; a length of -1 is a row in no match (one output
    row)."""
    unmatched = length < 0
    length = np.maximum(length, 0)
    if not every:
        return Matches(first, length, number, labels, variables,
                       np.arange(len(first)), length - 1, unmatched)
    rows_of = np.where(length > 0, length, np.where(unmatched | show_empty, 1, 0))
    match = np.repeat(np.arange(len(first)), rows_of)
    current = np.arange(len(match)) - np.repeat(np.cumsum(rows_of) - rows_of, rows_of)
    current = np.where(length[match] > 0, current, -1)
    if hidden.any():
        offset = np.cumsum(length) - length
        shown = (current < 0) | ~hidden[np.where(current >= 0, offset[match] + current, 0)]
        match, current = match[shown], current[shown]
    return Matches(first, length, number, labels, variables, match, current, unmatched)


def row_fields(name: str, type_name: str, matches: Matches, columns: Columns) -> Col:
    """ALL ROWS PER MATCH: the field of each output row's own row (an empty match's:
    its start row)."""
    values, nulls = columns[name]
    at = matches.first[matches.match] + np.maximum(matches.current, 0)
    return _gather(values, nulls, at, np.zeros(len(at), bool), type_name)


def _gather(values: np.ndarray, nulls: np.ndarray, at: np.ndarray, missing: np.ndarray,
            type_name: str) -> Col:
    safe = np.where(missing, 0, at)
    if not len(values):
        out = np.full(len(at), PLACEHOLDERS[type_name], dtype=DTYPES[type_name])
        return Col(out, np.ones(len(at), bool) if len(at) else None)
    null = nulls[safe] | missing
    out = values[safe].copy()
    if null.any():
        out[null] = PLACEHOLDERS[type_name]
    return Col(out.astype(DTYPES[type_name], copy=False), null if null.any() else None)


def reference(ref: ir.FieldRef, matches: Matches, columns: Columns) -> Col:
    """A measure's field reference (outside aggregates), one value per output row."""
    if ref.qualifier == MATCH:
        return Col(matches.number[matches.match].astype(np.int64))
    nav = Nav.parse(ref.qualifier)
    assert nav is not None and nav.physical == 0  # the plan admits nothing else
    label = _position(nav, matches)
    missing = label < 0
    if ref.name == CLASSIFIER:
        names = np.array(matches.variables, dtype=object)
        values = np.empty(len(label), dtype=object)
        values[:] = ""
        values[~missing] = names[matches.labels[label[~missing]]]
        return Col(values, missing if missing.any() else None)
    values, nulls = columns[ref.name]
    return _gather(values, nulls, matches.rows[np.where(missing, 0, label)]
                   if len(matches.rows) else label, missing, ref.type)


def _position(nav: Nav, matches: Matches) -> np.ndarray:
    """The label index ``nav`` names for each output row (-1: none): a logical offset
    from the first or the last row over every row, or a variable's first or last row;
    RUNNING ``LAST`` reads up to the current row, FIRST and FINAL the whole match."""
    length = matches.length[matches.match]
    end = length - 1 if nav.final or not nav.last else matches.current
    if nav.labels is None:
        step = end - nav.logical if nav.last else np.full(len(end), nav.logical)
        return np.where((end >= 0) & (step >= 0) & (step <= end), matches.label_at(step), -1)
    mask = matches.carrying(nav.labels)
    if nav.last:
        last = matches.last_upto(mask)
        at = matches.label_at(end)
        return np.where(at >= 0, last[np.maximum(at, 0)] if len(last) else -1, -1)
    first = np.full(len(matches.first), -1, np.int64)
    hits = np.flatnonzero(mask)[::-1]
    first[matches.owner[hits]] = hits  # reversed: the first label of each match wins
    out = first[matches.match]
    return np.where(end >= 0, out, -1)


def aggregate(agg: ir.Agg, matches: Matches, columns: Columns,
              groups: dict[str, tuple[str, ...]], final: bool) -> Col:
    """One aggregate per output row over its variables' rows (NULLs skipped), up to the
    current row (RUNNING) or over the whole match (``final``)."""
    qualifier, final_arg = ((ALL, False) if agg.arg is None
                            else aggregate_qualifier(agg.arg.qualifier))  # type: ignore[union-attr]
    final = final or final_arg  # FINAL written inside the expression travels here
    length = matches.length[matches.match]
    upto = length - 1 if final else matches.current
    at = matches.label_at(upto)
    valid = at >= 0
    safe = np.maximum(at, 0)
    if agg.arg is None:
        return Col(np.where(valid, upto + 1, 0).astype(np.int64))
    ref = agg.arg
    assert isinstance(ref, ir.FieldRef)
    wanted = None if qualifier == ALL else groups.get(qualifier)
    rows = matches.rows
    keep = matches.carrying(wanted)
    if ref.name == CLASSIFIER:  # count(CLASSIFIER): every row of the variables has a label
        count = _segment_cumsum(keep.astype(np.int64), matches.starts)
        return Col(np.where(valid, count[safe] if len(count) else 0, 0).astype(np.int64))
    values, nulls = columns[ref.name]
    if len(rows):
        keep &= ~nulls[rows]
    count = _segment_cumsum(keep.astype(np.int64), matches.starts)
    n_out = len(at)
    counted = np.where(valid, count[safe] if len(count) else 0, 0)
    if agg.name == "count":
        return Col(counted.astype(np.int64))
    empty = counted == 0
    out = np.full(n_out, PLACEHOLDERS[agg.type], dtype=DTYPES[agg.type])
    picked = values[rows] if len(rows) else values[:0]
    if agg.name in ("first", "last"):
        if agg.name == "last":
            which = matches.last_upto(keep)
        else:
            first = np.full(len(matches.first), -1, np.int64)
            hits = np.flatnonzero(keep)[::-1]
            first[matches.owner[hits]] = hits
            which = first[matches.owner] if len(rows) else np.zeros(0, np.int64)
        chosen = which[safe[~empty]] if len(which) else np.zeros(0, np.int64)
        out[~empty] = picked[chosen]
    elif agg.name in ("min", "max"):
        if picked.dtype == object:
            for k in np.flatnonzero(~empty).tolist():
                lo = matches.offset[matches.match[k]]
                part = [v for v, ok in zip(picked[lo:at[k] + 1].tolist(),
                                           keep[lo:at[k] + 1].tolist(), strict=True) if ok]
                out[k] = min(part) if agg.name == "min" else max(part)
        else:
            kind = MIN if agg.name == "min" else MAX
            done = running(picked.astype(np.float64), keep, matches.starts, kind) \
                if picked.dtype.kind == "f" else running_int(picked.astype(np.int64), keep,
                                                              matches.starts, kind)
            out[~empty] = done[safe[~empty]]
    else:  # sum, avg
        if picked.dtype.kind == "f":
            total = running(picked.astype(np.float64), keep, matches.starts, SUM)
        else:
            total = _segment_cumsum(np.where(keep, picked, 0).astype(np.int64),
                                    matches.starts)
        chosen = total[safe[~empty]] if len(total) else total[:0]
        out[~empty] = chosen if agg.name == "sum" else chosen / counted[~empty]
    return Col(out, empty if empty.any() else None)


def _segment_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """A running sum that starts again at every ``starts`` label."""
    return _reset_cumsum(values.astype(np.int64), starts)


@njit(cache=True, nogil=True)
def _reset_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:  # pragma: no cover
    out = np.empty(len(values), np.int64)
    total = 0
    for i in range(len(values)):
        if starts[i]:
            total = 0
        total += values[i]
        out[i] = total
    return out


@njit(cache=True, nogil=True)
def running_int(values: np.ndarray, keep: np.ndarray, starts: np.ndarray,
                kind: int) -> np.ndarray:  # pragma: no cover - compiled
    """:func:`running`'s MIN/MAX of integers."""
    out = np.zeros(len(values), np.int64)
    best = 0
    seen = False
    for i in range(len(values)):
        if starts[i]:
            seen = False
        if keep[i]:
            x = values[i]
            if not seen or (x < best if kind == MIN else x > best):
                best = x
            seen = True
        out[i] = best
    return out


@njit(cache=True, nogil=True)
def running(values: np.ndarray, keep: np.ndarray, starts: np.ndarray,
            kind: int) -> np.ndarray:  # pragma: no cover - compiled
    """Per label, the SUM (:mod:`cep.engine.row_patterns.exact_sum`'s, the interpreter's),
    MIN or MAX of the ``keep`` values up to it in its match (``starts``: a match's first label).
    Where nothing was kept yet the value is meaningless."""
    n = len(values)
    out = np.zeros(n, np.float64)
    partials = np.empty(64, np.float64)
    m = 0
    plain = 0.0
    special = 0.0
    has_special = False
    over = False
    best = 0.0
    seen = False
    for i in range(n):
        if starts[i]:
            m = 0
            plain = 0.0
            special = 0.0
            has_special = False
            over = False
            seen = False
        if keep[i]:
            x = values[i]
            if kind != SUM:
                if not seen or (x < best if kind == MIN else x > best):
                    best = x
                seen = True
            else:
                plain += x
                if not np.isfinite(x):
                    special += x
                    has_special = True
                elif not over:
                    if m + 1 >= len(partials):
                        grown = np.empty(2 * len(partials), np.float64)
                        grown[:m] = partials[:m]
                        partials = grown
                    m = add_partial(partials, m, x)
                    over = overflowed(partials, m)
        if kind != SUM:
            out[i] = best
        elif has_special:
            out[i] = special
        elif over:
            out[i] = plain
        else:
            out[i] = round_partials(partials, m)
    return out
