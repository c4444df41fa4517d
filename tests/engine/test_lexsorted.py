"""``lexsorted`` (the identity when the rows are in order already) gives what
``np.lexsort`` gives, for rows in any order and rows sorted beforehand."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.engine.table import lexsorted


@given(n=st.integers(0, 30), width=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       presort=st.booleans())
def test_lexsorted_is_np_lexsort(n, width, seed, presort):
    rng = np.random.default_rng(seed)
    keys = tuple(rng.integers(-2, 3, n) for _ in range(width))
    if presort:
        order = np.lexsort(keys) if n else np.arange(0)
        keys = tuple(key[order] for key in keys)
    expected = np.lexsort(keys) if n else np.arange(0)
    assert lexsorted(keys).tolist() == expected.tolist()
