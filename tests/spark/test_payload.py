"""Payloads give back exactly the tables packed, whichever way each column travels."""

from __future__ import annotations

import numpy as np

from cep.engine.table import object_array
from cep.spark.payload import (
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
    }


def test_every_column_comes_back_equal_and_only_repetitive_strings_are_coded():
    table = _table(3 * SAMPLE)
    columns, values = code_table(table)
    assert sorted(values) == ["__key", "origin", "tailnum"]
    assert columns["tailnum"] is columns["__key"]
    assert columns["tailnum"].dtype == np.int32
    _same(decode_table((columns, values)), table)


def test_a_split_by_engine_and_a_round_trip_through_bytes_keep_every_row():
    table = _table(3 * SAMPLE + 11)
    coded = code_table(table)
    owner = np.arange(len(table["__seq"])) % 3
    passthrough = {"__seq": np.arange(3, dtype=np.int64)}
    for engine in range(3):
        payload = pack_payload(9, {"Flight": take_coded(coded, owner == engine)},
                               passthrough, {"read": 0.5}, None)
        batch, tables, extra, info, truth = unpack_payload(payload)
        assert (batch, info, truth) == (9, {"read": 0.5}, None)
        _same(extra, passthrough)
        _same(tables["Flight"], {n: c[owner == engine] for n, c in table.items()})


def test_small_tables_travel_as_they_are():
    table = {"s": object_array(["a", "b"] * 10)}
    assert code_table(table) == (table, {})
