"""Payloads give back exactly the tables packed, whichever way each column travels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cep.engine.table import object_array
from splitter.payload import (
    SAMPLE,
    _in_steps,
    _narrow_parts,
    _own_values,
    _widen_parts,
    code_table,
    decode_table,
    pack_payload,
    take_coded,
    unpack_payload,
)
from splitter.routing import split_by_engine


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


def test_one_sort_by_engine_gives_each_engine_the_rows_a_mask_gives_it_in_order():
    """Oracle: the boolean mask per engine (how the rows were split before), over drawn
    owners, engines without rows and a stream with no rows."""
    rng = np.random.default_rng(11)
    for n_rows, engines in ((3 * SAMPLE + 5, 5), (40, 7), (0, 3)):
        table = {name: column[:n_rows] for name, column in _table(max(n_rows, 1)).items()}
        owner = rng.choice([0, 2, engines - 1], n_rows) if n_rows else np.empty(0, np.int32)
        coded = code_table(table)
        split = split_by_engine({"Flight": coded}, {"Flight": owner}, engines)
        assert len(split) == engines
        for engine in range(engines):
            got = decode_table(split[engine]["Flight"])
            _same(got, {n: c[owner == engine] for n, c in table.items()})


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


def test_columns_in_time_order_travel_as_steps_and_come_back_exactly():
    """Oracle: the column itself, after a split by engine and a round trip through
    bytes. Steps are taken modulo 2**64, so columns that wrap around the int64 and
    uint64 ranges come back too; a column that mostly falls travels as it is, one with a
    few wide steps (nights, a row back in time) keeps those whole."""
    n = 3 * SAMPLE
    rng = np.random.default_rng(3)
    rising = 1_357_035_300_000_000 + np.cumsum(rng.integers(0, 60_000_000, n))
    table = {
        "ts": rising.astype(np.int64),  # spans far over 2**32 in small steps
        "unsigned": np.uint64(2**64 - 1000) + np.arange(n, dtype=np.uint64) * np.uint64(7),
        "falls": rising[::-1].copy(),
        "nights": rising + np.arange(n) // 200 * 2**40,  # a wide step every 200 rows
        "back": rising.copy(),
    }
    table["back"][::500] -= 10**9  # a row back in time every 500
    with np.errstate(over="ignore"):  # passes int64's top, wrapping to its bottom
        table["wraps"] = np.int64(2**63 - 5_000) + np.arange(n, dtype=np.int64)
    coded = code_table(table)
    assert all(d is None for d in coded[1].values())  # no steps before the split
    columns, decoders = _in_steps(coded)
    kinds = {name: d[0] if d else None for name, d in decoders.items()}
    assert kinds == {"ts": "delta", "unsigned": "delta", "falls": None, "nights": "delta",
                     "back": "delta", "wraps": "delta"}
    assert columns["ts"].dtype == np.uint32  # steps of up to a minute in µs
    owner = np.arange(n) % 2
    for engine in range(2):
        payload = pack_payload(0, {"S": take_coded(coded, owner == engine)}, None, {}, None)
        _same(unpack_payload(payload)[1]["S"], {k: c[owner == engine] for k, c in table.items()})


def test_the_clock_and_the_late_candidates_come_back_as_they_were_packed():
    """Oracle: the values packed (every array equal and of its dtype, tuples and lists
    kept as such)."""
    n = 3 * SAMPLE
    seq = np.arange(n, dtype=np.int64) * 147 + (3 << 36)
    ts = np.cumsum(np.full(n, 60_000_000, np.int64))
    time_info = ("pieces", [(3, 0, "files", False, seq, ts, False),
                            (4, 9, "files", True, seq[:5], ts[:5], True)], True, 77, 2)
    late = (seq[::2].copy(), ts[::-1].copy(), np.ones(n // 2, bool), ["seg"])
    payload = pack_payload(1, {}, None, {}, None, time_info, late)
    *_, got_time, got_late, _ = unpack_payload(payload)

    def plain(value):
        if isinstance(value, np.ndarray):
            return ("array", value.dtype.str, value.tolist())
        if isinstance(value, tuple | list):
            return (type(value).__name__, [plain(v) for v in value])
        return value

    assert plain(got_time) == plain(time_info)
    assert plain(got_late) == plain(late)


def test_each_engine_carries_only_the_distinct_values_its_rows_use():
    """Oracle: the rows themselves (each engine's decoded rows equal the mask's) and the
    set of values among them (its payload's distinct values are exactly those). Why it
    matters: the split shares the task's distinct values, and with them each engine's
    pickle carried every value of the task (35.0 MB for 4 engines where one engine's
    was 13.2 MB, on periodic-Zipf tweets)."""
    rng = np.random.default_rng(5)
    n, engines = 6 * SAMPLE, 4
    vocabulary = [rng.bytes(40).hex() for _ in range(n // 4)]  # LZ4 cannot shrink them
    drawn = rng.integers(0, n // 4, n)
    words = object_array([vocabulary[i] for i in drawn])
    table = {"__seq": np.arange(n, dtype=np.int64), "text": words}
    owner = drawn % engines  # equal texts on one engine, as equal keys are
    coded = code_table(table)
    assert coded[1]["text"][0] == "values"
    split = split_by_engine({"S": coded}, {"S": owner}, engines)
    sizes = []
    for engine in range(engines):
        mine = split[engine]["S"]
        payload = pack_payload(0, {"S": mine}, None, {}, None)
        sizes.append(len(payload))
        _same(unpack_payload(payload)[1]["S"], {k: c[owner == engine] for k, c in table.items()})
        _, decoders = _own_values(mine)
        assert set(decoders["text"][1].tolist()) == set(words[owner == engine].tolist())
        assert len(decoders["text"][1]) == len(set(words[owner == engine].tolist()))
    whole = len(pack_payload(0, {"S": coded}, None, {}, None))
    assert sum(sizes) < 1.2 * whole  # not the engines times the shared values


def test_an_engine_without_rows_carries_no_values():
    table = {"text": object_array(["a", "b", "c"] * SAMPLE)}
    coded = code_table(table)
    columns, decoders = _own_values(take_coded(coded, slice(0, 0)))
    assert len(decoders["text"][1]) == 0 and len(columns["text"]) == 0
    assert decode_table((columns, decoders))["text"].tolist() == []


def test_the_clock_s_rises_travel_as_steps_where_steps_are_narrower():
    """Oracle: the arrays themselves after the round trip, and the narrow form's width.
    Rises of a generated stream (seq +1, ts about a millisecond in µs) are 1 and 2 bytes
    as steps, where offsets from their least value took 4; a column of scattered values
    still travels as offsets."""
    n = 3 * SAMPLE
    rng = np.random.default_rng(9)
    seq = (5 << 36) + np.arange(n, dtype=np.int64) + np.cumsum(rng.random(n) < 0.01)
    ts = 1_700_000_000_000_000 + np.cumsum(rng.integers(500, 1_500, n))
    scattered = rng.integers(0, 1 << 30, n)
    parts = _narrow_parts((seq, ts, scattered))
    assert [p.decoder[0] for p in parts] == ["delta", "delta", "offset"]
    assert [p.values.dtype for p in parts] == [np.uint8, np.uint16, np.uint32]
    back = _widen_parts(parts)
    for got, want in zip(back, (seq, ts, scattered), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
