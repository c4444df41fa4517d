"""Partial Key Grouping: the per-event routing rule, exactly as defined sequentially."""

from __future__ import annotations

import numpy as np
import pytest

from migration.hashing import stable_hash
from splitter.policies.pkg import PartialKeyGrouping


def test_hand_example() -> None:
    # estimates start [0, 0, 0]; each event goes to its choice with the smaller estimate,
    # ties to the first choice:
    #   (0,1): tie → 0 [1,0,0]   (0,1): 0 < 1 → 1 [1,1,0]   (0,1): tie → 0 [2,1,0]
    #   (2,2): → 2 [2,1,1]       (1,2): tie → 1 [2,2,1]      (1,0): tie → 1 [2,3,1]
    router = PartialKeyGrouping(3)
    out = router.route_candidates(np.array([0, 0, 0, 2, 1, 1]), np.array([1, 1, 1, 2, 2, 0]))
    assert out.tolist() == [0, 1, 0, 2, 1, 1]
    assert np.bincount(out, minlength=3).tolist() == [2, 3, 1]  # the estimates, fresh router
    # the estimates carry over to the next call: (1,2) → est[2] = 1 < 3 → 2
    assert router.route_candidates(np.array([1]), np.array([2])).tolist() == [2]


def _reference(first: np.ndarray, second: np.ndarray, n: int) -> list[int]:
    est = [0] * n
    out = []
    for a, b in zip(first.tolist(), second.tolist(), strict=True):
        pick = b if est[b] < est[a] else a
        est[pick] += 1
        out.append(pick)
    return out


def test_route_matches_sequential_reference_in_chunks() -> None:
    rng = np.random.default_rng(0)
    keys = rng.zipf(1.3, 20_000) % 500
    hashes = stable_hash(keys)
    router = PartialKeyGrouping(7, seed=3)
    first, second = router.candidates(hashes)
    routed = np.concatenate([router.route(chunk) for chunk in np.array_split(hashes, 9)])
    assert routed.tolist() == _reference(first, second, 7)
    # the estimates are the events routed so far: a second pass goes on from them
    both = _reference(np.tile(first, 2), np.tile(second, 2), 7)
    assert router.route(hashes).tolist() == both[len(hashes):]


def test_candidates_depend_on_seed_and_only_on_key() -> None:
    hashes = stable_hash(np.arange(1000))
    a1, a2 = PartialKeyGrouping(8, seed=1).candidates(hashes)
    b1, _ = PartialKeyGrouping(8, seed=2).candidates(hashes)
    assert a1.dtype == np.int32 and a1.min() >= 0 and a1.max() < 8
    assert (a1 != a2).mean() > 0.8  # independent hash functions: equal only ~1/8 of the time
    assert not np.array_equal(a1, b1)
    c1, c2 = PartialKeyGrouping(8, seed=1).candidates(hashes)
    assert np.array_equal(a1, c1) and np.array_equal(a2, c2)


def test_pkg_splits_hot_keys_and_balances() -> None:
    router = PartialKeyGrouping(4, seed=0)
    hashes = stable_hash(np.ones(1000, dtype=np.int64))  # a single hot key, 1
    first, second = router.candidates(hashes[:1])
    assert (int(first[0]), int(second[0])) == (2, 1)  # under seed 0 its two choices differ
    out = router.route(hashes)
    assert np.bincount(out, minlength=4).tolist() == [0, 500, 500, 0]  # split evenly
    # key 0's two choices coincide (both engine 2): such a key never splits
    zeros = stable_hash(np.zeros(10, dtype=np.int64))
    assert [c.tolist() for c in router.candidates(zeros[:1])] == [[2], [2]]
    assert router.route(zeros).tolist() == [2] * 10


def test_bad_choices_rejected() -> None:
    router = PartialKeyGrouping(2)
    with pytest.raises(ValueError, match=r"choices must be engine ids in \[0, 2\)"):
        router.route_candidates(np.array([0, 2]), np.array([0, 1]))
    with pytest.raises(ValueError, match="must have the same shape"):
        router.route_candidates(np.array([0]), np.array([0, 1]))
