"""MATCH_RECOGNIZE's sum of doubles (:mod:`cep.engine.row_patterns.exact_sum`): ``math.fsum``
where it answers, IEEE's answer where it raises, and the compiled parts equal to the Python one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine.row_patterns.columns import SUM, running
from cep.engine.row_patterns.exact_sum import float_sum, sum_of

INF = math.inf
doubles = st.lists(st.one_of(
    st.floats(width=64),
    st.sampled_from([1e308, -1e308, 1.7e308, INF, -INF, 1e17, -1e17, 0.1, 5e-324])),
    max_size=12)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@settings(max_examples=500, deadline=None)
@given(values=doubles)
def test_it_is_math_fsum_where_fsum_answers(values):
    try:
        expected = math.fsum(values)
    except (OverflowError, ValueError):
        return
    assert _same(float_sum(values), expected)


@pytest.mark.parametrize(("values", "expected"), [
    ([INF, -INF], math.nan),  # fsum: ValueError
    ([1e308, 1e308], INF),  # fsum: OverflowError
    ([1e308, 1e308, -1e308], INF),  # the plain sum in row order
    ([1e308, 1e308, -INF], -INF),  # an infinity decides
    ([-1e308, -1e308, 1.0], -INF),
])
def test_where_fsum_raises_the_sum_is_ieees(values, expected):
    assert _same(float_sum(values), expected)


@settings(max_examples=500, deadline=None)
@given(values=doubles)
def test_the_compiled_sum_is_the_python_one(values):
    assert _same(sum_of(np.array(values, np.float64), len(values)), float_sum(values))


@settings(max_examples=300, deadline=None)
@given(values=doubles, starts=st.lists(st.booleans(), max_size=12),
       keep=st.lists(st.booleans(), max_size=12))
def test_running_sums_of_a_match_are_the_python_ones(values, starts, keep):
    # MEASURES' running SUM: per label, the sum of the kept values so far in its match
    n = len(values)
    starts = (starts + [False] * n)[:n]
    keep = (keep + [True] * n)[:n]
    if n:
        starts[0] = True
    got = running(np.array(values, np.float64), np.array(keep, bool), np.array(starts, bool),
                  SUM)
    kept: list[float] = []
    for i in range(n):
        if starts[i]:
            kept = []
        if keep[i]:
            kept.append(values[i])
        if kept:
            assert _same(got[i], float_sum(kept)), (i, kept)
