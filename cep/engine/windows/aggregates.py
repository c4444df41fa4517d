"""Aggregates over window segments, vectorised across all triggers and keys at once.

A window operator lays the rows of every key's window out in one array and describes each
triggering event's window as a half-open segment ``[lo, hi)`` of it. Each aggregate is
then one numpy call for the whole batch.

Exactness across runtimes matters more than a few cycles: the Spark runtime cuts the
stream into different batches than the reference evaluator, yet must produce the same
bits. So floating-point sums are computed with ``ufunc.reduceat`` over exactly the rows
of each segment (the result depends only on the window's contents, not on where the batch
started), while integer sums and counts use prefix sums (exact). Semantics: empty window →
count 0 and NULL for the rest; NULL values are skipped; ``stddev`` is the sample standard
deviation (NULL below two values); ``first``/``last`` are the oldest/newest non-NULL value.
"""

from __future__ import annotations

import numpy as np

from cep.engine.expr import Col, Env, evaluate
from cep.engine.table import DTYPES, PLACEHOLDERS
from grammar import ir


def segment_reduce(ufunc: np.ufunc, values: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   fill: object) -> np.ndarray:
    """``ufunc.reduce(values[lo[i]:hi[i]])`` for every i; ``fill`` for empty segments."""
    m = len(lo)
    if m == 0:
        return np.empty(0, dtype=values.dtype)
    padded = np.append(values, np.array([fill], dtype=values.dtype))
    index = np.empty(2 * m, dtype=np.int64)
    index[0::2] = lo
    index[1::2] = hi
    out = ufunc.reduceat(padded, index)[0::2]
    out[lo >= hi] = fill
    return out


def _prefix_count(mask: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    prefix = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
    return prefix[hi] - prefix[lo]


def compute_aggregates(
    aggs: list[ir.Agg], rows: Env, row_mask: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> dict[ir.Agg, Col]:
    """Every aggregate for every segment; ``row_mask`` marks rows that feed aggregates
    (the rule's WHERE)."""
    return {agg: _aggregate(agg, rows, row_mask, lo, hi) for agg in aggs}


def _aggregate(agg: ir.Agg, rows: Env, row_mask: np.ndarray, lo: np.ndarray,
               hi: np.ndarray) -> Col:
    if agg.arg is None:  # count(*)
        return Col(_prefix_count(row_mask, lo, hi))
    col = evaluate(agg.arg, rows)
    valid = row_mask & ~col.null_mask()
    count = _prefix_count(valid, lo, hi)
    if agg.name == "count":
        return Col(count)
    empty = count == 0
    values = col.values
    if agg.name in ("first", "last"):
        return _first_last(agg, values, valid, lo, hi, empty)
    if agg.name in ("min", "max"):
        return _min_max(agg, values, valid, lo, hi, empty)
    if agg.arg.type in ("int", "long"):
        ints = np.where(valid, values, 0).astype(np.int64)
        prefix = np.concatenate(([0], np.cumsum(ints)))
        total = prefix[hi] - prefix[lo]
        if agg.name == "sum":
            return _nullable(total, empty)
        floats = total.astype(np.float64)
    else:
        floats = segment_reduce(np.add, np.where(valid, values, 0.0).astype(np.float64),
                                lo, hi, 0.0)
        if agg.name == "sum":
            return _nullable(floats, empty)
    n = np.maximum(count, 1)
    if agg.name == "avg":
        return _nullable(floats / n, empty)
    # stddev (sample): sqrt((Σx² − (Σx)²/n) / (n − 1))
    x = np.where(valid, values, 0).astype(np.float64)
    squares = segment_reduce(np.add, x * x, lo, hi, 0.0)
    with np.errstate(all="ignore"):
        var = (squares - floats * floats / n) / np.maximum(count - 1, 1)
    return _nullable(np.sqrt(np.maximum(var, 0.0)), count < 2)


def _min_max(agg: ir.Agg, values: np.ndarray, valid: np.ndarray, lo: np.ndarray,
             hi: np.ndarray, empty: np.ndarray) -> Col:
    is_min = agg.name == "min"
    if values.dtype == np.float64:
        neutral: object = np.inf if is_min else -np.inf
    else:
        info = np.iinfo(np.int64)
        neutral = info.max if is_min else info.min
        values = values.astype(np.int64, copy=False)
    masked = np.where(valid, values, neutral).astype(values.dtype)
    out = segment_reduce(np.minimum if is_min else np.maximum, masked, lo, hi, neutral)
    return _nullable(out.astype(DTYPES[agg.type], copy=False), empty, agg.type)


def _first_last(agg: ir.Agg, values: np.ndarray, valid: np.ndarray, lo: np.ndarray,
                hi: np.ndarray, empty: np.ndarray) -> Col:
    positions = np.flatnonzero(valid)
    if agg.name == "first":
        k = np.searchsorted(positions, lo, side="left")
    else:
        k = np.searchsorted(positions, hi, side="left") - 1
    k = np.clip(k, 0, max(len(positions) - 1, 0))
    picked = values[positions[k]] if len(positions) else np.empty(len(lo), values.dtype)
    return _nullable(np.asarray(picked), empty, agg.type)


def _nullable(values: np.ndarray, nulls: np.ndarray, t: str = "double") -> Col:
    if not nulls.any():
        return Col(values)
    values = values.copy()
    values[nulls] = PLACEHOLDERS.get(t, 0)
    return Col(values, nulls)
