"""The sorts that skip sorting where the rows allow give what numpy's full sorts give:
``lexsorted`` (the rows as they are, a candidate order, or a plain argsort of the
primary key, each checked) equals ``np.lexsort``, ``code_order`` (a radix sort of
16-bit codes) equals a stable ``np.argsort``, and rate limiting's ``_grouped`` puts
the items in the groups a lexsort does."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.engine.rate_intervals import _grouped
from cep.engine.table import code_order, lexsorted


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
