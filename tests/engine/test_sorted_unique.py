"""``sorted_unique`` (one sort) gives what ``np.unique`` gives, for the int64 columns
the engine dedupes (seqs, times)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.engine.table import sorted_unique


@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-3, 3), max_size=50))
def test_sorted_unique_is_np_unique(values):
    array = np.array(values, dtype=np.int64)
    assert sorted_unique(array).tolist() == np.unique(array).tolist()
