"""Payloads give back exactly the tables packed, whichever way each column travels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cep.engine.table import object_array
from splitter.payload import (
    SAMPLE,
    code_table,
    decode_table,
    pack_payload,
    take_coded,
    unpack_payload,
)


def _same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert [(type(x), x) for x in a[name].tolist()] == \
            [(type(x), x) for x in b[name].tolist()], name


def _table(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    few = object_array([f"N{i}" for i in rng.integers(0, 50, n)])
    return {
        "__seq": np.arange(n, dtype=np.int64),
        "tailnum": few,
        "__key": few,  # the same array as a field: coded once
        "origin": object_array([str(x) for x in rng.choice(["EWR", "JFK", "LGA"], n)]),
        "text": object_array([f"text {i}" for i in range(n)]),  # all distinct
        "maybe": object_array([None if i % 7 == 0 else "x" for i in range(n)]),  # NULLs
        "mixed": object_array([1 if i % 3 == 0 else "1" for i in range(n)]),  # not str
        "pairs": object_array([(i % 5, "a") for i in range(n)]),  # tuples (composite keys)
        "lists": object_array([[i % 2] for i in range(n)]),  # unhashable
        "delay": rng.normal(size=n),
        "__sub": np.zeros(n, dtype=np.int64),  # one value: one byte a row
        "ts": 1_700_000_000_000 + rng.integers(0, 3 * 10**10, n),  # spans over 2**32
        "small": rng.integers(-2**63, -2**63 + 70_000, n),  # near the bottom of int64
        "unsigned": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
    }


def test_every_column_comes_back_equal_and_travels_as_narrow_as_it_can():
    table = _table(3 * SAMPLE)
    columns, decoders = code_table(table)
    assert {n: d[0] for n, d in decoders.items() if d is not None} == {
        "__seq": "offset", "tailnum": "values", "__key": "same", "origin": "values",
        "__sub": "offset", "small": "offset"}
    assert "__key" not in columns  # sent once, as tailnum
    assert {n: columns[n].dtype for n in ("__seq", "tailnum", "origin", "__sub", "small")} \
        == {"__seq": np.uint16, "tailnum": np.uint8, "origin": np.uint8,
            "__sub": np.uint8, "small": np.uint32}
    decoded = decode_table((columns, decoders))
    _same(decoded, table)
    assert decoded["__key"] is decoded["tailnum"]


def test_a_split_by_engine_and_a_round_trip_through_bytes_keep_every_row():
    table = _table(3 * SAMPLE + 11)
    coded = code_table(table)
    owner = np.arange(len(table["__seq"])) % 3
    passthrough = {"__seq": np.arange(3, dtype=np.int64)}
    for engine in range(3):
        payload = pack_payload(9, {"Flight": take_coded(coded, owner == engine)},
                               passthrough, {"read": 0.5}, None)
        batch, tables, extra, info, truth, *_ = unpack_payload(payload)
        assert (batch, info, truth) == (9, {"read": 0.5}, None)
        _same(extra, passthrough)
        _same(tables["Flight"], {n: c[owner == engine] for n, c in table.items()})


def test_small_tables_travel_as_they_are():
    table = {"s": object_array(["a", "b"] * 10), "i": np.arange(20)}
    assert code_table(table) == (table, {"s": None, "i": None})


def test_known_codes_are_used_and_rejected_where_a_factorize_would_be():
    """Codes handed in by routing (``factorized``) code the column just as a factorize
    of its own would, and NULLs or non-strings among the known values still travel as
    they are."""
    table = _table(3 * SAMPLE)
    known = {id(table[n]): pd.factorize(table[n], use_na_sentinel=n != "maybe")
             for n in ("__key", "maybe", "mixed")}
    columns, decoders = code_table(table, known)
    plain_columns, plain_decoders = code_table(table)
    assert {n: d and d[0] for n, d in decoders.items()} == \
        {n: d and d[0] for n, d in plain_decoders.items()}
    assert decoders["tailnum"][0] == "values" and decoders["__key"] == ("same", "tailnum")
    assert decoders["maybe"] is None and decoders["mixed"] is None
    codes, distinct = known[id(table["__key"])]
    assert np.array_equal(columns["tailnum"], codes)  # the known codes, not new ones
    assert list(decoders["tailnum"][1]) == list(distinct)
    _same(decode_table((columns, decoders)), table)
    _same(decode_table((plain_columns, plain_decoders)), table)
