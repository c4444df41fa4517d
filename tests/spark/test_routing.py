"""owners_of: every row's engine as the router says, each distinct key asked once."""

from __future__ import annotations

import numpy as np

from cep.engine.table import object_array
from migration.hashing import kg_engine
from splitter.routing import key_grouping, owners_of, partial_key_grouping


def _keys(n: int, nulls: bool = False) -> np.ndarray:
    rng = np.random.default_rng(3)
    return object_array([None if nulls and i % 11 == 0 else f"N{k}"
                         for i, k in enumerate(rng.integers(0, 40, n))])


def test_a_per_key_router_is_asked_once_per_distinct_key_and_agrees_row_by_row():
    keys = _keys(5000)
    asked: list[int] = []
    kg = key_grouping(3)

    def router(values: np.ndarray, batch: int) -> np.ndarray:
        asked.append(len(values))
        return kg(values, batch)

    owners, factorized = owners_of(router, keys, 4)
    assert asked == [40]  # each name once
    assert np.array_equal(owners, kg_engine(keys, 3))
    codes, distinct = factorized[id(keys)]
    assert [distinct[c] for c in codes] == keys.tolist()


def test_null_keys_go_to_the_router_as_they_are():
    """A factorize turns None into NaN, which a key map would not know: rows with NULL
    keys make the router see every row, None included."""
    keys = _keys(3000, nulls=True)
    seen: list[np.ndarray] = []
    kg = key_grouping(3)

    def router(values: np.ndarray, batch: int) -> np.ndarray:
        seen.append(values)
        return kg(values, batch)

    owners, factorized = owners_of(router, keys, 0)
    assert factorized is None and seen[0] is keys
    assert np.array_equal(owners, kg_engine(keys, 3))


def test_a_per_row_router_gets_every_row_and_numbers_are_not_factorized():
    keys = _keys(2000)
    owners, factorized = owners_of(partial_key_grouping(3), keys, 0)
    assert factorized is None
    assert np.array_equal(owners, partial_key_grouping(3)(keys, 0))  # same fresh estimates
    numbers = np.arange(1000, dtype=np.int64) % 17
    owners, factorized = owners_of(key_grouping(4), numbers, 0)
    assert factorized is None and np.array_equal(owners, kg_engine(numbers, 4))
