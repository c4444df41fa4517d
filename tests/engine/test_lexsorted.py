"""The sorts that skip sorting where the rows allow give what numpy's full sorts give:
``lexsorted`` (the rows as they are, a candidate order, or a plain argsort of the
primary key, each checked) equals ``np.lexsort``, ``code_order`` (a radix sort of
16-bit codes) equals a stable ``np.argsort``, ``count_before`` by one binary search
equals its lexsort, and rate limiting's ``_grouped`` puts
the items in the groups a lexsort does."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.engine.rate.intervals import _grouped
from cep.engine.table import code_order, lexsorted
from cep.engine.windows.keyed_window import count_before


@given(n=st.integers(0, 30), width=st.integers(1, 4), spread=st.sampled_from([2, 3, 50]),
       seed=st.integers(0, 2**32 - 1), presort=st.booleans(),
       candidate=st.sampled_from(["none", "random", "right"]), by_primary=st.booleans())
def test_lexsorted_is_np_lexsort(n, width, spread, seed, presort, candidate, by_primary):
    rng = np.random.default_rng(seed)
    keys = tuple(rng.integers(-2, spread, n) for _ in range(width))
    expected = np.lexsort(keys) if n else np.arange(0)
    if presort:
        keys = tuple(key[expected] for key in keys)
        expected = np.arange(n)
    given_order = {"none": None, "random": rng.permutation(n), "right": expected}[candidate]
    assert lexsorted(keys, given_order, by_primary).tolist() == expected.tolist()


@given(codes=st.lists(st.integers(0, 5) | st.integers(0, 2**16 + 5), max_size=40))
def test_code_order_is_a_stable_argsort(codes):
    array = np.array(codes, dtype=np.int64)
    assert code_order(array).tolist() == np.argsort(array, kind="stable").tolist()


@given(items=st.lists(st.tuples(st.integers(0, 6), st.integers(-2**40, 2**40)
                                | st.integers(-3, 3)), max_size=40))
def test_grouped_makes_the_groups_of_a_lexsort(items):
    keys = np.array([k for k, _ in items], dtype=np.int64)
    buckets = np.array([b for _, b in items], dtype=np.int64)
    mine, theirs = _grouped(keys, buckets), np.lexsort((buckets, keys))
    assert keys[mine].tolist() == keys[theirs].tolist()
    assert buckets[mine].tolist() == buckets[theirs].tolist()


@given(rows=st.lists(st.tuples(st.integers(0, 4), st.integers(-5, 5)), min_size=1,
                     max_size=20),
       queries=st.lists(st.tuples(st.integers(0, 5), st.integers(-8, 8)), min_size=1,
                        max_size=8),
       scale=st.sampled_from([1, 10**6, 10**15, 2**60]), inclusive=st.booleans())
def test_count_before_by_one_search_is_the_lexsort_count(rows, queries, scale, inclusive):
    """One value column goes by one binary search (or, past an int64, the lexsort);
    the same column with a constant second one always goes by the lexsort."""
    rows = sorted(rows)
    codes = np.array([c for c, _ in rows], dtype=np.int64)
    values = np.array([v for _, v in rows], dtype=np.int64) * scale
    q_codes = np.array([c for c, _ in queries], dtype=np.int64)
    q_values = np.array([v for _, v in queries], dtype=np.int64) * scale
    zeros, q_zeros = np.zeros(len(rows), np.int64), np.zeros(len(queries), np.int64)
    one = count_before(codes, (values,), q_codes, (q_values,), inclusive)
    two = count_before(codes, (values, zeros), q_codes, (q_values, q_zeros), inclusive)
    assert one.tolist() == two.tolist()
