"""MATCH_RECOGNIZE's MEASURES for ONE ROW PER MATCH, column-wise over decided matches.

The compiled matcher (:mod:`cep.engine.row_pattern_kernel`) gives each match as the row
index of its first row in the batch's columns, its length and one label (variable
number) per row. The values :mod:`cep.engine.row_pattern_measures` computes one match at
a time in Python come out here for all matches at once: a navigation is a gather at the
row it names (the first/last row of a variable: ``np.minimum.at``/``np.maximum.at`` over
the rows carrying its label), an aggregate a ``bincount``/``ufunc.at`` over the rows of
its variables (sums of doubles with :func:`fsum_segments`, CPython's ``math.fsum``
compiled, so that both paths print the same digits). With ONE ROW PER MATCH the current
row is the match's last, so RUNNING and FINAL read the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

from cep.engine.expr import Col
from cep.engine.table import DTYPES, PLACEHOLDERS
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, Nav

Columns = dict[str, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Matches:
    """Decided matches: per match its first row (an index into the columns), length and
    number; ``labels`` one variable number per row of every match, match after match."""

    first: np.ndarray
    length: np.ndarray
    number: np.ndarray
    labels: np.ndarray
    variables: tuple[str, ...]

    @cached_property
    def owner(self) -> np.ndarray:
        """The match of each label."""
        return np.repeat(np.arange(len(self.first)), self.length)

    @cached_property
    def rows(self) -> np.ndarray:
        """The column row of each label."""
        starts = np.repeat(self.first - np.cumsum(self.length) + self.length, self.length)
        return starts + np.arange(len(self.labels))

    def carrying(self, names: tuple[str, ...] | None) -> np.ndarray:
        """Which labels are one of ``names`` (None: every label)."""
        if names is None:
            return np.ones(len(self.labels), bool)
        wanted = [self.variables.index(v) for v in names if v in self.variables]
        return np.isin(self.labels, wanted)


def reference(ref: ir.FieldRef, matches: Matches, columns: Columns) -> Col:
    """A measure's field reference (outside aggregates), one value per match."""
    if ref.qualifier == MATCH:
        return Col(matches.number.astype(np.int64))
    nav = Nav.parse(ref.qualifier)
    assert nav is not None and nav.physical == 0  # the plan admits nothing else
    at = _position(nav, matches)
    missing = at < 0
    safe = np.where(missing, 0, at)
    if ref.name == CLASSIFIER:
        names = np.array(matches.variables, dtype=object)
        label_at = np.full(len(at), -1, np.int64)
        label_at[~missing] = _label_index(matches, at[~missing], ~missing)
        values = np.empty(len(at), dtype=object)
        values[:] = ""
        values[~missing] = names[matches.labels[label_at[~missing]]]
        return Col(values, missing if missing.any() else None)
    values, nulls = columns[ref.name]
    if len(values) == 0:
        values = np.zeros(1, dtype=values.dtype)
        nulls = np.ones(1, bool)
    nulls = nulls[safe] | missing
    out = values[safe].copy()
    if nulls.any():
        out[nulls] = PLACEHOLDERS[ref.type]
    return Col(out.astype(DTYPES[ref.type], copy=False), nulls if nulls.any() else None)


def _label_index(matches: Matches, rows: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The label index of column row ``rows`` in the matches ``which`` selects."""
    offsets = np.cumsum(matches.length) - matches.length
    return offsets[which] + rows - matches.first[which]


def _position(nav: Nav, matches: Matches) -> np.ndarray:
    """The column row ``nav`` names in each match (-1: none): a logical offset from the
    first or last row over every row, or a variable's first or last row."""
    first, length = matches.first, matches.length
    if nav.labels is None:
        step = np.where(nav.last, length - 1 - nav.logical, nav.logical)
        return np.where((step >= 0) & (step < length), first + step, -1)
    mask = matches.carrying(nav.labels)
    out = np.full(len(first), -1 if nav.last else np.iinfo(np.int64).max, np.int64)
    reduce = np.maximum if nav.last else np.minimum
    reduce.at(out, matches.owner[mask], matches.rows[mask])
    out[out == np.iinfo(np.int64).max] = -1
    return out


def aggregate(agg: ir.Agg, matches: Matches, columns: Columns,
              groups: dict[str, tuple[str, ...]]) -> Col:
    """One aggregate per match over its variables' rows (NULLs skipped)."""
    n = len(matches.first)
    if agg.arg is None:
        return Col(matches.length.astype(np.int64))
    ref = agg.arg
    assert isinstance(ref, ir.FieldRef)
    wanted = None if ref.qualifier == ALL else groups.get(ref.qualifier)
    values, nulls = columns[ref.name]
    rows = matches.rows
    mask = matches.carrying(wanted)
    if len(values):
        mask &= ~nulls[rows]
    owner = matches.owner[mask]
    picked = values[rows[mask]] if len(values) else values[:0]
    count = np.bincount(owner, minlength=n)
    if agg.name == "count":
        return Col(count.astype(np.int64))
    empty = count == 0
    out = np.full(n, PLACEHOLDERS[agg.type], dtype=DTYPES[agg.type])
    if agg.name in ("first", "last"):
        at = np.full(n, -1 if agg.name == "last" else len(picked), np.int64)
        reduce = np.maximum if agg.name == "last" else np.minimum
        reduce.at(at, owner, np.arange(len(picked)))
        out[~empty] = picked[at[~empty]]
    elif agg.name in ("min", "max"):
        if picked.dtype == object:
            for m in np.flatnonzero(~empty).tolist():
                part = picked[owner == m].tolist()
                out[m] = min(part) if agg.name == "min" else max(part)
        else:
            held = np.zeros(n, dtype=picked.dtype)
            first_at = np.full(n, len(picked), np.int64)
            np.minimum.at(first_at, owner, np.arange(len(picked)))
            held[~empty] = picked[first_at[~empty]]
            (np.minimum if agg.name == "min" else np.maximum).at(held, owner, picked)
            out[~empty] = held[~empty]
    else:  # sum, avg
        if picked.dtype.kind == "f":
            offsets = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
            total = fsum_segments(picked.astype(np.float64), offsets)
        else:
            total = np.zeros(n, np.int64)
            np.add.at(total, owner, picked.astype(np.int64))
        if agg.name == "sum":
            out[~empty] = total[~empty]
        else:
            out[~empty] = total[~empty] / count[~empty]
    return Col(out, empty if empty.any() else None)


@njit(cache=True, nogil=True)
def fsum_segments(values: np.ndarray, offsets: np.ndarray  # pragma: no cover - compiled
                  ) -> np.ndarray:
    """Per segment ``values[offsets[k]:offsets[k+1]]``, the correctly rounded sum:
    CPython's ``math.fsum`` (Shewchuk's partials, then round-half-even across them);
    a segment holding an infinity or NaN gets the plain sum."""
    n = len(offsets) - 1
    out = np.zeros(n, np.float64)
    partials = np.empty(64, np.float64)
    for k in range(n):
        lo_at = offsets[k]
        hi_at = offsets[k + 1]
        special = False
        for j in range(lo_at, hi_at):
            if not np.isfinite(values[j]):
                special = True
        if special:
            total = 0.0
            for j in range(lo_at, hi_at):
                total += values[j]
            out[k] = total
            continue
        m = 0
        for j in range(lo_at, hi_at):
            x = values[j]
            i = 0
            for q in range(m):
                y = partials[q]
                if abs(x) < abs(y):
                    x, y = y, x
                hi = x + y
                lo = y - (hi - x)
                if lo != 0.0:
                    partials[i] = lo
                    i += 1
                x = hi
            m = i
            if x != 0.0:
                if m >= len(partials):
                    grown = np.empty(2 * len(partials), np.float64)
                    grown[:m] = partials[:m]
                    partials = grown
                partials[m] = x
                m += 1
        hi = 0.0
        lo = 0.0
        if m > 0:
            m -= 1
            hi = partials[m]
            while m > 0:
                x = hi
                m -= 1
                y = partials[m]
                hi = x + y
                yr = hi - x
                lo = y - yr
                if lo != 0.0:
                    break
            if m > 0 and ((lo < 0.0 and partials[m - 1] < 0.0)
                          or (lo > 0.0 and partials[m - 1] > 0.0)):
                y = lo * 2.0
                x = hi + y
                yr = x - hi
                if y == yr:
                    hi = x
        out[k] = hi
    return out
