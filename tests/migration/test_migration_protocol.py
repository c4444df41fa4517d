"""Import/export sets of the one-batch-lag migration protocol."""

from __future__ import annotations

import numpy as np
import pytest

from migration.protocol import exports, imports, owners


def _ids(values: np.ndarray) -> list[int]:
    return [int(v) for v in values]


def test_hand_example() -> None:
    # Keys 0..4, 3 engines. Between M[t-1] and M[t]: key 0 moves 0->1, key 3 moves
    # 0->2. Between M[t] and M[t+1]: key 1 moves 1->0.
    prev = np.array([0, 1, 2, 0, 1])
    cur = np.array([1, 1, 2, 2, 1])
    nxt = np.array([1, 0, 2, 2, 1])
    assert _ids(imports(0, prev, cur)) == []
    assert _ids(imports(1, prev, cur)) == [0]
    assert _ids(imports(2, prev, cur)) == [3]
    assert _ids(exports(0, cur, nxt)) == []
    assert _ids(exports(1, cur, nxt)) == [1]
    assert _ids(exports(2, cur, nxt)) == []
    # What engine 0 exported at the end of t-1 is what 1 and 2 import in t.
    assert _ids(exports(0, prev, cur)) == [0, 3]


def test_batch_zero_imports_nothing() -> None:
    cur = np.array([0, 1, 2])
    for e in range(3):
        assert imports(e, None, cur).size == 0


def test_new_keys_are_padded_with_their_default_owner() -> None:
    default = np.array([0, 1, 0, 1, 0])  # KG engine per dense id
    prev = np.array([0, 1])  # keys 2..4 unknown at t-1: owned by default
    cur = np.array([1, 1, 0, 0])  # key 0 moves 0->1; key 3 overridden 1->0
    assert _ids(imports(0, prev, cur, default)) == [3]
    assert _ids(imports(1, prev, cur, default)) == [0]
    # Key 4 is beyond both maps: default on both sides, so it never moves.
    nxt = np.array([1, 1, 0, 0, 0])
    assert _ids(exports(0, cur, nxt, default)) == []
    assert _ids(exports(0, cur, np.array([1, 1, 0, 0, 1]), default)) == [4]


def test_different_lengths_need_a_default() -> None:
    with pytest.raises(ValueError, match="default"):
        imports(0, np.array([0]), np.array([0, 1]))
    with pytest.raises(ValueError, match="default covers 1"):
        owners(np.array([0]), 3, np.array([0]))


def test_random_maps_exports_of_previous_batch_equal_imports() -> None:
    """Every key exported at the end of t-1 is imported in t by its new owner, once."""
    rng = np.random.default_rng(7)
    n_engines = 5
    for _ in range(200):
        n_keys = int(rng.integers(1, 60))
        default = rng.integers(0, n_engines, size=n_keys)
        len_prev = int(rng.integers(0, n_keys + 1))
        len_cur = int(rng.integers(len_prev, n_keys + 1))
        prev = rng.integers(0, n_engines, size=len_prev)
        cur = rng.integers(0, n_engines, size=len_cur)
        exported = np.concatenate([exports(e, prev, cur, default) for e in range(n_engines)])
        imported = np.concatenate([imports(e, prev, cur, default) for e in range(n_engines)])
        assert sorted(exported.tolist()) == sorted(imported.tolist())
        assert len(set(imported.tolist())) == len(imported)  # one importer per key
        full_prev = owners(prev, n_keys, default)
        full_cur = owners(cur, n_keys, default)
        for e in range(n_engines):
            for k in imports(e, prev, cur, default):
                assert full_cur[k] == e != full_prev[k]
