"""The compiled steps the row pattern kernel (:mod:`cep.engine.row_patterns.kernel`) is
made of besides its loop: aggregate states, comparisons, and growing and trimming the
thread arrays. They live apart from the loop only to keep each module readable; numba
compiles them into ``run_keys``, so calling across modules costs nothing.

Each thread carries, per aggregate conjunct, the aggregate's running state over its
rows (``AG_WIDTH`` floats: the non-NULL rows, the sum, min and max). The candidate row
counts when its variable is in the aggregate's set (the interpreter's rule: the row
labelled as the variable tried). ``sum`` and ``avg`` are those of the interpreter, which
adds floats exactly rounded (:mod:`cep.engine.row_patterns.exact_sum`, independent of the order):
the state keeps the exact sum as two floats (``hi + lo``, ``hi`` the rounded sum), and
when two floats cannot hold it (values far apart in magnitude, or not finite) the sum
is taken again over the thread's rows (:func:`cep.engine.row_patterns.exact_sum.sum_of`). The
states are not part of the key's state: they are rebuilt from the key's buffered rows
and its threads' labels when a call starts, so a key moves,
restarts and continues from the interpreter's checkpoint with the same arrays as
before. Int fields are read as float64 (exact within ±2**53, as the residuals).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cep.engine.row_patterns.exact_sum import sum_of


@njit(cache=True, nogil=True)
def compare(a: float, op: int, b: float) -> bool:  # pragma: no cover - compiled
    if op == 0:
        return a < b
    if op == 1:
        return a <= b
    if op == 2:
        return a > b
    if op == 3:
        return a >= b
    if op == 4:
        return a == b
    return a != b


#: a thread's running state of one aggregate: non-NULL rows, the exact sum as an
#: unevaluated sum of two floats (``SUM_HI`` the correctly rounded sum, what
#: ``math.fsum`` gives), min, max, and whether two floats no longer hold the sum exactly
AG_COUNT, SUM_HI, SUM_LO, AG_MIN, AG_MAX, AG_INEXACT = range(6)
AG_WIDTH = 6


@njit(cache=True, nogil=True)
def two_sum(a: float, b: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """``a + b`` as the rounded sum and its exact error (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True, nogil=True)
def fold(st: np.ndarray, x: float) -> None:  # pragma: no cover - compiled
    """Add a non-NULL value to an aggregate's running state. The sum stays exact
    (``hi + lo``, ``hi`` its correct rounding) while two floats hold it; else the state
    says so, and the sum is taken from the thread's rows (:func:`chain_sum`)."""
    # min and max as Python's min() and max() take values in order (a NaN first stays)
    if st[AG_COUNT] == 0.0:
        st[AG_MIN] = x
        st[AG_MAX] = x
    else:
        if x < st[AG_MIN]:
            st[AG_MIN] = x
        if x > st[AG_MAX]:
            st[AG_MAX] = x
    st[AG_COUNT] += 1.0
    if st[AG_INEXACT] != 0.0:
        return
    s, e = two_sum(st[SUM_HI], x)
    t, f = two_sum(e, st[SUM_LO])
    hi, lo = two_sum(s, t)
    if f != 0.0 or not (np.isfinite(x) and np.isfinite(s) and np.isfinite(hi)):
        st[AG_INEXACT] = 1.0
        return
    st[SUM_HI] = hi
    st[SUM_LO] = lo


@njit(cache=True, nogil=True)
def fresh(st: np.ndarray) -> None:  # pragma: no cover - compiled
    """An aggregate's state over no rows."""
    st[AG_COUNT] = 0.0
    st[SUM_HI] = 0.0
    st[SUM_LO] = 0.0
    st[AG_MIN] = 0.0
    st[AG_MAX] = 0.0
    st[AG_INEXACT] = 0.0


@njit(cache=True, nogil=True)
def chain_sum(node, length, row0, col, members, pvar, wa_var, wa_parent, ag_vals,
               ag_nulls, extra, with_extra):  # pragma: no cover - compiled
    """The exact sum (``math.fsum``) of field ``col`` over a thread's rows labelled one
    of ``members`` (its labels the arena chain ending at ``node``, ``length`` rows from
    row ``row0``), and, ``with_extra``, ``extra`` (the candidate row's value)."""
    values = np.empty(length + 1, np.float64)
    n = 0
    if with_extra:
        values[0] = extra
        n = 1
    for k in range(length - 1, -1, -1):
        if members[pvar[wa_var[node]]] and not ag_nulls[row0 + k, col]:
            values[n] = ag_vals[row0 + k, col]
            n += 1
        node = wa_parent[node]
    return sum_of(values, n)


@njit(cache=True, nogil=True)
def nav_row(nav: int, v: int, r: int, last: np.ndarray, start: int) -> int:  # pragma: no cover
    """The row a condition of variable ``v`` on candidate row ``r`` reads for variable
    ``nav``: ``r`` itself, else ``nav``'s last row in the thread (``last``, relative to
    the thread's first row ``start``), or -1 before ``nav`` matched (the comparison is
    then NULL, so false)."""
    if nav == v:
        return r
    if last[nav] < 0:
        return -1
    return start + last[nav]


@njit(cache=True, nogil=True)
def grow1(a: np.ndarray, need: int) -> np.ndarray:  # pragma: no cover - compiled
    if need <= len(a):
        return a
    out = np.empty(max(need, 2 * len(a)), a.dtype)
    out[:len(a)] = a
    return out


@njit(cache=True, nogil=True)
def grow2(a: np.ndarray, need: int) -> np.ndarray:  # pragma: no cover - compiled
    if need <= a.shape[0]:
        return a
    out = np.empty((max(need, 2 * a.shape[0]), a.shape[1]), a.dtype)
    out[:a.shape[0]] = a
    return out


@njit(cache=True, nogil=True)
def threads_with_room(ts_, tp_, tl_, tn_, tlast_, tag_, cur, n, cap):  # pragma: no cover - compiled
    """The thread arrays with room for ``cap`` threads, the first ``n`` of row ``cur``
    kept."""
    out_s = np.empty((2, cap), np.int64)
    out_p = np.empty((2, cap), np.int32)
    out_l = np.empty((2, cap), np.int64)
    out_n = np.empty((2, cap), np.int64)
    out_last = np.empty((2, cap, tlast_.shape[2]), np.int64)
    out_ag = np.empty((2, cap, tag_.shape[2], AG_WIDTH), np.float64)
    out_s[cur, :n] = ts_[cur, :n]
    out_p[cur, :n] = tp_[cur, :n]
    out_l[cur, :n] = tl_[cur, :n]
    out_n[cur, :n] = tn_[cur, :n]
    out_last[cur, :n] = tlast_[cur, :n]
    out_ag[cur, :n] = tag_[cur, :n]
    return out_s, out_p, out_l, out_n, out_last, out_ag


@njit(cache=True, nogil=True)
def drop_first(ts_, tp_, tl_, tn_, tlast_, tag_, cur, cut, n):  # pragma: no cover - compiled
    """Drop the first ``cut`` of the ``n`` threads in row ``cur`` of the thread arrays
    (those WITHIN ended), keeping the others' order."""
    for k in range(cut, n):
        ts_[cur, k - cut] = ts_[cur, k]
        tp_[cur, k - cut] = tp_[cur, k]
        tl_[cur, k - cut] = tl_[cur, k]
        tn_[cur, k - cut] = tn_[cur, k]
        for x in range(tlast_.shape[2]):
            tlast_[cur, k - cut, x] = tlast_[cur, k, x]
        tag_[cur, k - cut] = tag_[cur, k]
