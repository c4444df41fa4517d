"""Inserted rows' values read back from their JSON text (``cep.engine.insert_into``):
orjson where it reads them, ``json.loads`` where the text holds what orjson refuses;
the same values either way, on the texts output rows are written as."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine.expr import Col
from cep.engine.insert_into import _load
from cep.engine.json_rows import json_texts

VALUES = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(lambda v: ("long", np.array([v], np.int64))),
    st.floats(allow_nan=True, allow_infinity=True).map(
        lambda v: ("double", np.array([v], np.float64))),
    st.text(max_size=6).map(lambda v: ("string", np.array([v], dtype=object))),
    st.booleans().map(lambda v: ("boolean", np.array([v]))))


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(columns=st.lists(VALUES, min_size=1, max_size=4), null=st.booleans())
def test_inserted_values_read_back_as_json_loads_reads_them(columns, null):
    cols = [(f"f{i}", kind, Col(values, np.array([null and i == 0])))
            for i, (kind, values) in enumerate(columns)]
    [text] = json_texts(cols, 1).tolist()
    loaded, reference = _load(text), json.loads(text)
    assert loaded.keys() == reference.keys()
    assert all(_same(loaded[k], reference[k]) for k in reference)
