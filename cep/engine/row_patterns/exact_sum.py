"""The sum of doubles in MATCH_RECOGNIZE, one definition for Python and compiled loops.

MATCH_RECOGNIZE sums doubles exactly rounded (``math.fsum``, Shewchuk's partials), so
that a sum does not depend on the order its rows were added in, and the interpreter
(:mod:`cep.engine.row_patterns.measures`), the compiled matcher's DEFINE conditions
(:mod:`cep.engine.row_patterns.kernel`) and its MEASURES
(:mod:`cep.engine.row_patterns.columns`) print the same digits. ``math.fsum`` raises
where IEEE arithmetic does not (``inf + -inf``, and a partial sum past the largest
double), and a rule must not stop on its data, so the sum is defined as:

* some value is infinite or NaN: the sum of those values (``inf``, ``-inf``, or NaN for
  a NaN or for both infinities), as ``math.fsum`` gives where it does not raise;
* a partial sum of the finite values overflows: the plain sum in row order (``±inf``,
  what Java's and Esper's ``double`` arithmetic give);
* otherwise: the exactly rounded sum, ``math.fsum``'s.

:func:`float_sum` is that in Python; :func:`add_partial`, :func:`round_partials` and
:func:`sum_of` are its compiled parts, which the kernels call.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


def float_sum(values: list[float]) -> float:
    """The sum of ``values`` as defined above."""
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):
        special = [x for x in values if not math.isfinite(x)]
        total = 0.0
        for x in special or values:
            total += x
        return total


@njit(cache=True, nogil=True)
def add_partial(partials: np.ndarray, m: int, x: float) -> int:  # pragma: no cover
    """Add the finite ``x`` to the ``m`` non-overlapping partials (``partials`` has room
    for ``m + 1``); the new count. The last partial is infinite when the sum overflowed
    (CPython's "intermediate overflow")."""
    i = 0
    for j in range(m):
        y = partials[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            partials[i] = lo
            i += 1
        x = hi
    if x != 0.0:  # an overflowed sum (inf) is kept too, as the last partial
        partials[i] = x
        i += 1
    return i


@njit(cache=True, nogil=True)
def round_partials(partials: np.ndarray, m: int) -> float:  # pragma: no cover
    """The correctly rounded value of the ``m`` partials (CPython's final rounding,
    half-even across partials)."""
    if m == 0:
        return 0.0
    m -= 1
    hi = partials[m]
    lo = 0.0
    while m > 0:
        x = hi
        m -= 1
        y = partials[m]
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            break
    if m > 0 and ((lo < 0.0 and partials[m - 1] < 0.0)
                  or (lo > 0.0 and partials[m - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        if y == x - hi:
            hi = x
    return hi


@njit(cache=True, nogil=True)
def overflowed(partials: np.ndarray, m: int) -> bool:  # pragma: no cover
    """Whether the partials' sum overflowed (:func:`add_partial`)."""
    return m > 0 and not np.isfinite(partials[m - 1])


@njit(cache=True, nogil=True)
def sum_of(values: np.ndarray, n: int) -> float:  # pragma: no cover - compiled
    """:func:`float_sum` of ``values[:n]``."""
    partials = np.empty(n + 1, np.float64)
    m = 0
    special = 0.0
    has_special = False
    plain = 0.0
    over = False
    for k in range(n):
        x = values[k]
        plain += x
        if not np.isfinite(x):
            special += x
            has_special = True
        elif not over:
            m = add_partial(partials, m, x)
            over = overflowed(partials, m)
    if has_special:
        return special
    if over:
        return plain
    return round_partials(partials, m)
