"""``factorize`` numbers keys as ``pd.factorize`` does (order of first appearance),
whichever path it takes: the lookup table of small-range integers, pandas' hash for
wide ranges and other dtypes, and object keys, where None is a key of its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from cep.engine.table import factorize

WIDE = st.integers(-2**63, 2**63 - 1)
SMALL = st.integers(-5, 40)


DTYPES = st.sampled_from([np.int64, np.int32, np.uint8, np.uint64])


@given(st.lists(SMALL | WIDE, max_size=60), DTYPES)
def test_integer_keys_are_numbered_as_pandas_numbers_them(values, dtype):
    info = np.iinfo(dtype)  # clipped into the dtype's range
    array = np.array([min(max(v, info.min), info.max) for v in values], dtype=dtype)
    assert factorize(array).tolist() == pd.factorize(array)[0].tolist()


@given(st.lists(SMALL, min_size=1, max_size=60))
def test_integer_and_object_keys_group_alike(values):
    ints = np.array(values, dtype=np.int64)
    objects = np.array(values, dtype=object)
    assert factorize(ints).tolist() == factorize(objects).tolist()


def test_none_is_a_key_of_its_own():
    codes = factorize(np.array([None, 3, None, "a", 3], dtype=object))
    assert codes.tolist() == [2, 0, 2, 1, 0]
