"""Inserted rows' values read back from their JSON text (``cep.engine.insert_into``):
orjson where it reads them, ``json.loads`` where the text holds what orjson refuses;
the same values either way, on the texts output rows are written as. A batch's texts
read together by Arrow give the typed columns those rows give read one by one.

Oracles: ``json.loads`` (the standard library: no code shared with ``_load``) for the
values; for Arrow's columns, the rows read one by one (``_row_fields``: cep's own
``_load``, so shared with the first test but not with Arrow's path). A batch Arrow
declines (far years) compares nothing: that share is measured and bounded."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note

from cep.engine.expr import Col
from cep.engine.insert_into import _arrow_fields, _load, _row_fields
from cep.engine.json_rows import json_texts
from grammar.ir import StreamDef

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


TYPED = {
    "long": st.integers(-2**63, 2**63 - 1),
    "double": st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(allow_nan=False, allow_infinity=False),
    "string": st.text(max_size=6),
    "boolean": st.booleans(),
    "timestamp": st.integers(-2**62, 2**62) | st.integers(0, 2**52),
}


@st.composite
def batches(draw):
    """A stream's fields and the value texts of a few rows of them (NULLs, NaN, any
    float, any text, timestamps in and far outside Arrow's years), some fields left
    out of the rows."""
    kinds = draw(st.lists(st.sampled_from(sorted(TYPED)), min_size=1, max_size=4))
    n = draw(st.integers(1, 6))
    columns = []
    for i, kind in enumerate(kinds):
        values = draw(st.lists(TYPED[kind], min_size=n, max_size=n))
        array = np.array(values, dtype=object if kind == "string" else
                         {"long": np.int64, "timestamp": np.int64, "double": np.float64,
                          "boolean": bool}[kind])
        nulls = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        columns.append((f"f{i}", kind, Col(array, nulls)))
    fields = [(name, kind) for name, kind, _ in columns]
    stream = StreamDef("T", (*fields, ("absent", "double")), None, derived=True)
    return stream, json_texts(columns, n).tolist()


@settings(max_examples=300, deadline=None)
@given(batch=batches())
def _arrow_reads_the_rows_as_each_row_is_read(batch):
    stream, texts = batch
    rows = _row_fields(stream, texts)
    arrow = _arrow_fields(stream, texts)
    note([] if arrow is None else texts)
    if arrow is None:  # years Arrow does not read, text that is not UTF-8: the rows' way
        return
    assert arrow.keys() == rows.keys()
    for name, (values, nulls) in rows.items():
        assert arrow[name][1].tolist() == nulls.tolist()
        assert arrow[name][0].dtype == values.dtype
        same = arrow[name][0] == values
        if values.dtype.kind == "f":
            same |= np.isnan(values) & np.isnan(arrow[name][0])
            assert (np.signbit(arrow[name][0]) == np.signbit(values)).all()
        assert same.all()


def test_arrow_reads_the_rows_as_each_row_is_read():
    with bounded("arrow rows (declined by Arrow)"):
        _arrow_reads_the_rows_as_each_row_is_read()


def test_arrow_reads_nan_and_leaves_far_years_to_the_rows():
    cols = [("v", "double", Col(np.array([0.1, float("nan"), -float("inf")]), None)),
            ("t", "timestamp", Col(np.array([0, 1_767_225_600_123_456, -1]), None))]
    stream = StreamDef("T", (("v", "double"), ("t", "timestamp")), None, derived=True)
    arrow = _arrow_fields(stream, json_texts(cols, 3).tolist())
    assert arrow is not None and arrow["t"][0].tolist() == [0, 1_767_225_600_123_456, -1]
    assert str(arrow["v"][0].tolist()) == "[0.1, nan, -inf]"
    far = [("v", "double", Col(np.array([1.0]), None)),
           ("t", "timestamp", Col(np.array([2**62]), None))]  # year 148108
    assert _arrow_fields(stream, json_texts(far, 1).tolist()) is None
