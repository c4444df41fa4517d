"""A rate-limited rule's keys of a batch (``rate_limit.batch_keys``), hashing only each
run of equal neighbouring keys of its grouped parts, number them as one ``factorize``
of all the values does (first appearance first; None and NaN one key, 1, 1.0 and True
one key, as there), for keys of every kind, in runs or scattered, and for ints alone
(hashed as int64 where they fit), given as objects or as int64 columns.

Oracle: ``cep.engine.table.factorize`` over all the values, which ``batch_keys`` itself
calls on the runs' heads: shared code, so a wrong ``factorize`` would pass; what is
checked is the run-finding and the mapping back. Draws with no key at all compare
nothing: their share is measured and bounded."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note

from cep.engine.rate.limit import batch_keys
from cep.engine.table import factorize, object_array

KEY = st.one_of(st.integers(-3, 3), st.booleans(), st.none(), st.just(float("nan")),
                st.sampled_from([1.0, 0.5, "1", "x", "é"]), st.integers(-2**70, 2**70),
                st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"])))
INT = st.integers(-3, 3) | st.integers(-2**63, 2**63 - 1) | st.integers(2**63, 2**64)


def part(key: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(st.tuples(key, st.integers(1, 4)), max_size=12).map(
        lambda runs: object_array([k for k, n in runs for _ in range(n)]))


def typed(part: np.ndarray, as_int64: bool) -> np.ndarray:
    """The part as an int64 column (as a typed key column comes) where it fits one."""
    if not as_int64 or not all(type(k) is int and -2**63 <= k < 2**63 for k in part):
        return part
    return np.asarray(part.tolist(), dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(part(KEY), min_size=1, max_size=4)
       | st.lists(part(INT), min_size=1, max_size=4),
       grouped=st.integers(0, 4), as_int64=st.lists(st.booleans(), min_size=4, max_size=4))
def _codes_and_keys_are_factorize_s(parts, grouped, as_int64):
    keys, codes = batch_keys([typed(p, t) for p, t in zip(parts, as_int64, strict=False)],
                             grouped)
    every = np.concatenate(parts) if parts else object_array([])
    note(every)
    expected = factorize(every) if len(every) else np.empty(0, np.int64)
    assert codes.tolist() == expected.tolist()
    first = [every[codes.tolist().index(c)] for c in range(len(keys))]
    assert [repr(k) for k in keys.tolist()] == [repr(k) for k in first]


def test_codes_and_keys_are_factorize_s():
    with bounded("batch keys"):
        _codes_and_keys_are_factorize_s()


def test_no_parts_and_empty_parts_have_no_keys():
    for parts in ([], [object_array([])], [object_array([]), np.empty(0, np.int64)]):
        keys, codes = batch_keys(parts, 1)
        assert keys.tolist() == [] and codes.tolist() == []
