"""Output rows' JSON text, built column by column (Arrow string arrays joined row-wise,
or a template where Arrow cannot hold a text), is exactly what ``json.dumps`` of each
row's dict gives (the way it was built before, kept here as the oracle): any floats
(NaN, infinities, -0.0, tiny and huge, float32/16), ints of every width, booleans,
strings that need escapes or hold lone surrogates, timestamps, NULLs, mixed object
values, odd and repeated names."""

from __future__ import annotations

import json
import math
from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine import json_rows
from cep.engine.expr import Col
from cep.engine.json_rows import distinct_texts, float_texts, format_timestamps, json_texts
from cep.engine.table import object_array


def oracle(columns: list[tuple[str, str, Col]], n: int) -> list[str]:
    """The row-at-a-time build: Python values (NULL → None, timestamps → ISO text),
    one ``json.dumps`` per row."""
    per_column = []
    for _, type_name, col in columns:
        values = (format_timestamps(col.values) if type_name == "timestamp"
                  else col.values).tolist()
        if col.nulls is not None:
            for i in np.flatnonzero(col.nulls).tolist():
                values[i] = None
        per_column.append(values)
    names = [name for name, _, _ in columns]
    if not per_column:
        return ["{}"] * n
    return [json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False,
                       separators=(",", ":")) for row in zip(*per_column, strict=True)]


FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e16, 1e-5, 1e-4, 0.1,
     123456789012345678.0, 5e-324, 1.7976931348623157e308]) | st.builds(
    lambda m, e: m * 10.0 ** e, st.floats(-10, 10), st.integers(-30, 30))  # both exponent ends
TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from('"\\\n\t\x00\x1f\x7fé€😀'),
               max_size=6)
SURROGATE = st.text(st.characters(categories=["Cs"]) | st.sampled_from('a"'), min_size=1,
                    max_size=3)  # what json.loads('"\\ud800"') gives; Arrow cannot hold it
MIXED = st.one_of(st.none(), st.integers(-10**20, 10**20), st.floats(allow_nan=False),
                  st.text(max_size=4), st.booleans(),
                  st.lists(st.integers(0, 9) | st.text(max_size=2), max_size=3))


@st.composite
def column(draw: st.DrawFn, n: int) -> tuple[str, str, Col]:
    kind = draw(st.sampled_from(["long", "double", "boolean", "string", "timestamp", "mixed"]))
    if kind == "long":
        dtype = draw(st.sampled_from([np.int64, np.int32, np.int8, np.uint64, np.uint16]))
        info = np.iinfo(dtype)
        values = np.array(draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=n,
                                        max_size=n)), dtype=dtype)
    elif kind == "double":
        dtype = draw(st.sampled_from([np.float64, np.float64, np.float32, np.float16]))
        with np.errstate(over="ignore"):
            values = np.array(draw(st.lists(FLOATS, min_size=n, max_size=n)), dtype=dtype)
        if n > 1 and draw(st.booleans()):
            values = np.repeat(values, 2)[::2]  # a strided view, as a window's column can be
    elif kind == "boolean":
        values = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif kind == "string":
        values = object_array(draw(st.lists(st.sampled_from(["a", 'q"b', "\\", "é\n\x00"])
                                            | TEXT, min_size=n, max_size=n)))
    elif kind == "timestamp":
        values = np.array(draw(st.lists(st.integers(-10**15, 10**16), min_size=n,
                                        max_size=n)), dtype=np.int64)
    else:
        values = object_array(draw(st.lists(MIXED, min_size=n, max_size=n)))
    nulls = draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
    name = draw(st.sampled_from(["a", "b", "a%s", '"q"', "é", "100%", "\\", "\x01"])
                | st.text(max_size=3))
    return name, kind, Col(values, None if nulls is None else np.array(nulls, dtype=bool))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(0, 6), width=st.integers(0, 5))
def test_template_texts_equal_json_dumps(data, n, width):
    columns = [data.draw(column(n)) for _ in range(width)]
    assert json_texts(columns, n).tolist() == oracle(columns, n)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.sampled_from([0, 1, 7, 64, 300]), width=st.integers(1, 8))
def test_longer_and_wider_rows_equal_json_dumps(data, n, width):
    """Many rows and columns, names drawn from few so that they repeat, built in blocks
    of any size."""
    columns = []
    for _ in range(width):
        _, kind, col = data.draw(column(n))
        columns.append((data.draw(st.sampled_from(["a", "b", "c", "é"])), kind, col))
    with mock.patch.object(json_rows, "BLOCK", data.draw(st.sampled_from([1, 7, 64, 1 << 16]))):
        texts = json_texts(columns, n)
    assert texts.dtype == object and texts.shape == (n,)
    assert texts.tolist() == oracle(columns, n)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(0, 6), where=st.sampled_from(["value", "name", "both"]))
def test_texts_arrow_cannot_hold_are_written_as_json_dumps_writes_them(data, n, where):
    """A lone surrogate (in a string value or a column name) makes the build fall back to
    the template; the text is still json.dumps's."""
    columns = [data.draw(column(n)) for _ in range(data.draw(st.integers(0, 3)))]
    strings = object_array(data.draw(st.lists(SURROGATE | TEXT, min_size=n, max_size=n)))
    nulls = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    odd_name = data.draw(SURROGATE) if where != "value" else "s"
    if where != "name" and n:
        strings[0] = data.draw(SURROGATE)
        nulls[0] = False
    columns.insert(data.draw(st.integers(0, len(columns))),
                   (odd_name, "string", Col(strings, nulls)))
    assert json_texts(columns, n).tolist() == oracle(columns, n)


def test_rows_of_more_than_arrow_holds_fall_back_to_the_template(monkeypatch):
    """Arrow's row join refuses more than 2 GiB of text; the template writes it then."""
    def refuse(*args: object) -> None:
        raise pa.ArrowCapacityError("array cannot contain more than 2147483646 bytes")

    columns = [("x", "long", Col(np.array([1, 2]))),
               ("y", "double", Col(np.array([0.5, 1e-7]), np.array([True, False])))]
    monkeypatch.setattr(json_rows.pc, "binary_join_element_wise", refuse)
    assert json_texts(columns, 2).tolist() == ['{"x":1,"y":null}', '{"x":2,"y":1e-07}']


def test_a_repeated_name_keeps_its_first_place_and_last_value():
    one, two = Col(np.array([1, 2])), Col(np.array([3.5, 4.5]))
    assert json_texts([("x", "long", one), ("y", "double", two), ("x", "double", two)],
                      2).tolist() == ['{"x":3.5,"y":3.5}', '{"x":4.5,"y":4.5}']


def test_non_finite_floats_and_nulls_are_written_as_json_dumps_writes_them():
    values = Col(np.array([np.nan, np.inf, -np.inf, -0.0, 1e16, 2.5]),
                 np.array([False, False, False, False, False, True]))
    flags = Col(np.array([True, False, True, False, True, False]))
    assert json_texts([("v", "double", values), ("f", "boolean", flags)], 6).tolist() == [
        '{"v":NaN,"f":true}', '{"v":Infinity,"f":false}', '{"v":-Infinity,"f":true}',
        '{"v":-0.0,"f":false}', '{"v":1e+16,"f":true}', '{"v":null,"f":false}']


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_float_texts_are_repr_for_any_float64_bit_pattern(seed):
    """orjson's digits with repr's exponent form, on every finite float64: random bit
    patterns (every exponent), values near the 1e-4 and 1e16 switches, zeros, and a
    strided view."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**64, 20_000, dtype=np.uint64).view(np.float64)
    near = np.array([1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 0.0, -0.0])
    scaled = rng.random(20_000) * 10.0 ** rng.integers(-20, 20, 20_000)
    values = np.concatenate([bits[np.isfinite(bits)], near, -near, scaled])
    assert float_texts(values).to_pylist() == [repr(v) for v in values.tolist()]
    strided = values[::3]  # a view, not C-contiguous (a window's column can be one)
    assert float_texts(strided).to_pylist() == [repr(v) for v in strided.tolist()]


@given(st.lists(st.integers(-120, 120) | st.integers(-2**70, 2**70), max_size=40))
def test_distinct_texts_of_ints_are_json_dumps(values):
    for dumps in (None, json.dumps):
        codes, texts = distinct_texts(object_array(values), dumps)
        assert [texts[c] for c in codes.tolist()] == [json.dumps(v) for v in values]


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.sampled_from([0, 1, 2, 5, 40]),
       block=st.sampled_from([1, 3, 1 << 16]))
def test_event_lines_are_the_merged_dicts_dumped(data, n, block):
    """Each line is json.dumps of {rule, key, seq, ts} merged with the payload's fields,
    whichever texts (escapes, lone surrogates, empty payloads) and block size."""
    names = st.sampled_from(["r", 'r"1', "é\n"]) | SURROGATE
    rules = [data.draw(names) for _ in range(n)]
    keys = [data.draw(st.none() | st.integers(-2**70, 2**70) | TEXT | SURROGATE)
            for _ in range(n)]
    seq = np.array(data.draw(st.lists(st.integers(0, 2**62), min_size=n, max_size=n)),
                   dtype=np.int64)
    ts = np.array(data.draw(st.lists(st.integers(-10**15, 10**16), min_size=n,
                                     max_size=n)), dtype=np.int64)
    ts_null = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    fields = st.dictionaries(st.sampled_from(["a", "b", '"q"']) | SURROGATE,
                             st.none() | st.floats() | TEXT | SURROGATE, max_size=3)
    payloads = [data.draw(fields) for _ in range(n)]
    with mock.patch.object(json_rows, "BLOCK", block):
        text = json_rows.event_lines_text(
            object_array(rules), object_array([dumps(k) for k in keys]), seq, ts, ts_null,
            object_array([dumps(p) for p in payloads]))
    iso = format_timestamps(ts).tolist()
    assert text == "".join(
        dumps({"rule": rules[i], "key": keys[i], "seq": int(seq[i]),
               "ts": None if ts_null[i] else iso[i], **payloads[i]}) + "\n" for i in range(n))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-10**12, 10**12)
                | st.builds(lambda d, r: d * 86_400_000_000 + r, st.integers(-10**6, 10**6),
                            st.sampled_from([0, 1, 999, 1000, 999_999, 86_399_999_999])),
                max_size=30),
       st.data())
def test_timestamp_texts_are_numpys_iso_text_quoted(us, data):
    """Dates once per day and times of day from integer digits: numpy's text (NaT
    included), quoted, at every range and near day and millisecond edges."""
    values = np.array(us, dtype=np.int64)
    nulls = np.array(data.draw(st.lists(st.booleans(), min_size=len(us), max_size=len(us))),
                     dtype=bool)
    texts = json_rows.timestamp_texts(values, nulls).to_pylist()
    assert texts == ["null" if null else f'"{text}"'
                     for text, null in zip(format_timestamps(values).tolist(), nulls.tolist(),
                                           strict=True)]
