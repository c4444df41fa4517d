"""Reading inputs with dead letters (cep.io.readers, cep.io.deadletter), each file read
whole the way a run reads it (support.input_files)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.input_files import read_input
from support.shares import bounded, note

from cep.engine.table import NULL_SUFFIX
from cep.io import lines
from cep.io.deadletter import DeadLetter
from cep.io.jsonl_writer import write_events_jsonl
from cep.io.readers import convert, ranges
from cep.io.readers.jsonl import PER_LINE_MAX, JsonLinesReader

FIELDS = [
    ("id", "long"),
    ("ts", "timestamp"),
    ("n", "int"),
    ("x", "double"),
    ("ok", "boolean"),
    ("s", "string"),
]


def us(text: str) -> int:
    """Epoch microseconds of an ISO string (naive = UTC)."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def rec(i: int, **over: object) -> str:
    base = {"id": i, "ts": "2024-05-01T12:00:00Z", "n": 1, "x": 1.5, "ok": True, "s": "a"}
    base.update(over)
    return json.dumps(base)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read(path: Path | str, fields=FIELDS) -> tuple[pd.DataFrame, DeadLetter]:
    dead = DeadLetter(None)
    return read_input(path, fields, "ts", dead), dead


def entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def line_offsets(data: bytes) -> dict[int, int]:
    """1-based line number → byte offset of the line's first byte."""
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    return {k + 1: start for k, start in enumerate(starts)}


# ---------------------------------------------------------------- representation


def test_types_and_null_masks(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "e.jsonl",
        [
            rec(1, s="héllo"),
            rec(2, n=None, s=None, x=2),
            rec(3, ok=False, n=-(2**31), x=-0.25),
        ],
    )
    df, dead = read(path)
    assert dead.count == 0
    assert list(df.columns) == ["offset", "id", "ts", "n", "n__null", "x", "ok", "s", "s__null",
                                "seq"]
    assert {c: str(t) for c, t in df.dtypes.items()} == {
        "offset": "int64", "id": "int64",
        "ts": "int64", "n": "int64", "n__null": "bool",
        "x": "float64", "ok": "bool", "s": "object", "s__null": "bool", "seq": "int64",
    }  # fmt: skip
    assert df["offset"].tolist() == list(line_offsets(path.read_bytes()).values())[:3]
    assert df["seq"].tolist() == df["offset"].tolist()  # the log's first segment: seq = offset
    assert df["n"].tolist() == [1, 0, -(2**31)]  # placeholder 0 behind the null
    assert df["n__null"].tolist() == [False, True, False]
    assert df["s"].tolist() == ["héllo", "", "a"]
    assert all(type(v) is str for v in df["s"])
    assert df["x"].tolist() == [1.5, 2.0, -0.25]
    assert df["ok"].tolist() == [True, True, False]
    assert df["ts"].tolist() == [us("2024-05-01T12:00:00Z")] * 3
    assert NULL_SUFFIX == ranges.NULL_SUFFIX  # what the engine reads


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01T12:00:00Z", us("2024-05-01T12:00:00Z")),
        ("2024-05-01T14:00:00+02:00", us("2024-05-01T12:00:00Z")),
        ("2024-05-01T12:00:00", us("2024-05-01T12:00:00Z")),  # naive = UTC
        ("2024-05-01 12:00:00.25", us("2024-05-01T12:00:00.250000Z")),
        ("2024-05-01", us("2024-05-01T00:00:00Z")),
        ("2024-05-01T12:00:00.1234567Z", us("2024-05-01T12:00:00.123456Z")),  # cut
        ("  2024-05-01T12:00:00Z ", us("2024-05-01T12:00:00Z")),
        ("1969-12-31T23:59:59.5Z", -500_000),
        (1714564800000, us("2024-05-01T12:00:00Z")),  # epoch milliseconds
        (1714564800000.5, us("2024-05-01T12:00:00Z") + 500),
        (-1, -1000),
        ("1714564800000", us("2024-05-01T12:00:00Z")),  # numeric string = number
    ],
)
def test_timestamps(tmp_path: Path, value: object, expected: int) -> None:
    df, dead = read(write_lines(tmp_path / "t.jsonl", [rec(1, ts=value)]))
    assert dead.count == 0
    assert df["ts"].tolist() == [expected]


def test_mixed_timestamp_shapes_in_one_file(tmp_path: Path) -> None:
    values = ["2024-05-01T12:00:00Z", 1714564800000, "2024-05-01T12:00:00", "2024-05-01T14:00+02"]
    df, dead = read(write_lines(tmp_path / "t.jsonl", [rec(i, ts=v) for i, v in enumerate(values)]))
    assert dead.count == 0
    assert df["ts"].tolist() == [us("2024-05-01T12:00:00Z")] * 4


# ---------------------------------------------------------------- dead letters

MESSY = [
    (rec(1), None),
    ("", "blank"),
    ("not json", "not_json"),
    ("[1, 2]", "not_object"),
    ('{"id": 3} {"id": 4}', "not_json"),
    (rec(5, n=3_000_000_000), "out_of_range"),
    (rec(6, id=2**63), "out_of_range"),
    (rec(7, n=1.5), "wrong_type"),
    (rec(8, n="12"), "wrong_type"),
    (rec(9, x="1.5"), "wrong_type"),
    (rec(10, ok=1), "wrong_type"),
    (rec(11, s=5), "wrong_type"),
    (rec(12, s={"a": 1}), "wrong_type"),
    (rec(13, ts="yesterday"), "bad_timestamp"),
    (rec(14, ts="2024-02-30T00:00:00Z"), "bad_timestamp"),
    (rec(15, ts=None), "null_timestamp"),
    ('{"id": 16, "ts": "2024-05-01T12:00:00Z", "n": 1, "x": 1.5, "s": "a"}', None),  # ok: NULL
    ("   \t", "blank"),
    (rec(17, n=2.0, x=3, extra=[1, {"y": None}]), None),  # integral float, int for double
    (rec(18, s=None, n=None), None),
    (
        '{"id": 19, "ts": "2024-05-01T12:00:00Z", "n": 1, "x": 1.5, "ok": true, "s": "\\ud800"}',
        "invalid_utf8",
    ),
    ("  " + rec(20), None),  # indented: parsed line by line, still fine
    ('{"id": 21,', "not_json"),
    (rec(22, x=float("nan")), None),  # NaN: a JSON extension both parsers accept
    (rec(23, n="x" * 500), "wrong_type"),  # reason quotes at most 80 characters
]


def messy_bytes() -> bytes:
    lines = [line.encode() for line, _ in MESSY]
    lines.insert(3, b'{"id": 2, "s": "\xff\xfe"}')  # not UTF-8
    return b"\n".join(lines) + b"\n"


def test_messy_file_every_line_accounted_for(tmp_path: Path) -> None:
    path = tmp_path / "messy.jsonl"
    data = messy_bytes()
    path.write_bytes(data)
    dl_path = tmp_path / "dead.jsonl"
    with DeadLetter(str(dl_path)) as dead:
        df = read_input(path, FIELDS, "ts", dead)
    n_lines = len(MESSY) + 1
    assert len(df) + dead.count + dead.skipped == n_lines
    assert dead.skipped == 2
    assert df["id"].tolist() == [1, 16, 17, 18, 20, 22]
    assert df["n"].tolist() == [1, 1, 2, 0, 1, 1]
    assert df["s__null"].tolist() == [False, False, False, True, False, False]
    assert df["ok__null"].tolist() == [False, True, False, False, False, False]  # missing
    assert np.isnan(df["x"].iloc[5])

    at = line_offsets(data)
    got = {line: e for line, offset in at.items() for e in entries(dl_path)
           if e["offset"] == offset}
    expected = {i + 1: kind for i, (_, kind) in enumerate(MESSY) if kind not in (None, "blank")}
    expected = {(k + 1 if k >= 4 else k): v for k, v in expected.items()}  # the inserted line
    expected[4] = "invalid_utf8"
    assert {line: e["kind"] for line, e in got.items()} == expected
    assert dead.reasons == pd.Series(expected).value_counts().to_dict()
    for e in got.values():
        assert set(e) == {"source", "offset", "kind", "reason", "record"}
        assert e["source"] == str(path)
    assert got[7]["reason"] == "field 'n': 3000000000 out of range for int (32-bit)"
    assert got[9]["reason"] == "field 'n': expected int, got non-integral number 1.5"
    assert got[10]["reason"] == "field 'n': expected int, got string \"12\""
    assert got[17]["reason"] == "field 'ts': the TIMESTAMP field is missing or null"
    assert got[15]["reason"] == "field 'ts': unparseable timestamp \"yesterday\""
    assert got[3]["record"] == "not json"
    assert len(got[26]["reason"]) < 120 and got[26]["reason"].endswith("...")
    assert "2 blank line(s) skipped" in dead.summary()
    assert f"{dead.count} record(s) rejected" in dead.summary()


def test_first_error_in_schema_order(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "e.jsonl", [rec(1, n="bad", s=7, ts="never")])
    dead_path = tmp_path / "dead.jsonl"
    with DeadLetter(str(dead_path)) as dead:
        read_input(path, FIELDS, "ts", dead)
    assert [e["reason"] for e in entries(dead_path)] == [
        "field 'ts': unparseable timestamp \"never\""
    ]


def test_record_is_truncated_and_dead_letter_replaces_an_earlier_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "e.jsonl", [rec(1, s="y" * 5000, n="no")])
    dead_path = tmp_path / "dead.jsonl"
    dead_path.write_text('{"earlier": true}\n', encoding="utf-8")
    with DeadLetter(str(dead_path)) as dead:
        read_input(path, FIELDS, "ts", dead)
    lines = entries(dead_path)
    assert len(lines) == 1
    assert len(lines[0]["record"]) == 1000


def test_dead_letter_without_path_counts_only() -> None:
    dead = DeadLetter(None)
    dead.add("f", 3, "not_json", "not JSON", "x")
    dead.skip(2)
    dead.close()
    assert (dead.count, dead.skipped, dict(dead.reasons)) == (1, 2, {"not_json": 1})
    assert dead.summary() == "1 record(s) rejected (not_json: 1); 2 blank line(s) skipped"
    with pytest.raises(ValueError, match="unknown dead-letter kind 'whatever'"):
        dead.add("f", 1, "whatever", "", "")


# ---------------------------------------------------------------- fast path vs line by line


def random_lines(n: int, seed: int) -> list[bytes]:
    """Mostly good records with every kind of problem sprinkled in."""
    rng = np.random.default_rng(seed)
    bad = [
        b"", b"  ", b"garbage", b"[]", b'{"id": 1}', b'{"id": 1} {"id": 2}',
        rec(0, n="1").encode(), rec(0, n=2**40).encode(), rec(0, n=2.5).encode(),
        rec(0, ts="2024-13-01").encode(), rec(0, ts=None).encode(), rec(0, s=None).encode(),
        rec(0, ts=1714564800123).encode(), rec(0, x=None, ok=None).encode(),
        b'{"id": 1, "s": "\xc3"}', rec(0, ok="true").encode(), b"\t" + rec(0).encode(),
        rec(0, ts="2024-05-01T12:00:00+05:30").encode(), rec(0, ts="2024-05-01").encode(),
    ]  # fmt: skip
    out = []
    for i in range(n):
        if rng.random() < 0.03:
            out.append(bad[rng.integers(len(bad))])
        else:
            ts = f"2024-05-01T12:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000:03d}Z"
            out.append(rec(i, ts=ts, n=int(rng.integers(-100, 100)), x=float(rng.random()),
                           s=f"text {i}").encode())  # fmt: skip
    return out


def dead_entries(path: Path) -> list[tuple]:
    return sorted((e["offset"], e["kind"], e["reason"], e["record"]) for e in entries(path))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_path_equals_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """pyarrow chunks + bisection give exactly what json.loads line by line gives.

    Oracle: the reader's own line-by-line path (``json.loads``, then the same
    conversion and dead-letter code: shared past the parse). 3000 lines, about 3%
    broken: neither side can be empty (asserted by the count below)."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(random_lines(3000, seed)) + b"\n")
    monkeypatch.setattr(lines, "CHUNK_BYTES", 40_000)  # many chunks, lines cut across
    with DeadLetter(str(tmp_path / "fast.jsonl")) as dead:
        fast = read_input(path, FIELDS, "ts", dead)
    monkeypatch.setattr(JsonLinesReader, "json_fast", lambda *a: False)
    with DeadLetter(str(tmp_path / "slow.jsonl")) as slow_dead:
        slow = read_input(path, FIELDS, "ts", slow_dead)
    pd.testing.assert_frame_equal(fast, slow)
    assert dead_entries(tmp_path / "fast.jsonl") == dead_entries(tmp_path / "slow.jsonl")
    assert dead.skipped == slow_dead.skipped
    assert len(fast) + dead.count + dead.skipped == 3000


def test_one_bad_line_costs_only_a_few_hundred_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [rec(i) for i in range(20_000)]
    lines[12_345] = "oops"
    path = write_lines(tmp_path / "in.jsonl", lines)
    per_line: list[int] = []
    original = JsonLinesReader.json_per_line

    def counting(self, chunk_lines, offsets):
        per_line.append(len(chunk_lines))
        return original(self, chunk_lines, offsets)

    monkeypatch.setattr(JsonLinesReader, "json_per_line", counting)
    df, dead = read(path)
    assert len(df) == 19_999 and dead.count == 1
    assert sum(per_line) <= PER_LINE_MAX


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)).map(
                lambda d: d.isoformat()
            ),
            st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)).map(
                lambda d: d.isoformat(sep=" ", timespec="milliseconds") + "Z"
            ),
            st.dates().map(lambda d: d.isoformat()),
            st.sampled_from(
                [
                    "2024-02-30",
                    "2024-01-01T25:00",
                    "x",
                    "",
                    " 2024-01-01 ",
                    "2024-01-01T00:00:00.1234567Z",
                    "2024-01-01T01:00+01:00",
                ]
            ),
        ),
        min_size=1,
        max_size=40,
    )
)
def _iso_value_does_not_depend_on_the_batch(values: list[str]) -> None:
    """Oracles: each value parsed alone (the same ``parse_iso``: shared code; what is
    checked is that the batch changes nothing) and, for the values read as good,
    ``datetime.fromisoformat`` (:func:`us`, the standard library: independent). An
    example none of whose values reaches the second oracle is counted as empty."""
    together = convert.parse_iso(pa.array(values))
    alone = [convert.parse_iso(pa.array([v])) for v in values]
    assert together[1].tolist() == [g[0] for _, g in alone]
    assert together[0].tolist() == [u[0] for u, _ in alone]
    checked = []
    for v, u, good in zip(values, *together, strict=True):
        if good and v.strip()[:4].isdigit() and len(v.strip()) >= 10:
            assert u == us(v.strip().replace(" ", "T").replace("1234567", "123456"))
            checked.append(v)
    note(checked)


def test_iso_value_does_not_depend_on_the_batch() -> None:
    with bounded("iso values (none checked against datetime)"):
        _iso_value_does_not_depend_on_the_batch()


# ---------------------------------------------------------------- CSV and Parquet


def test_csv(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_bytes(
        b"id,extra,ts,n,x,ok,s\n"
        b'1,q,2024-05-01T12:00:00Z,5,1.5,true,"a, b"\n'
        b"2,q,1714564800000,+7,1e3,0,\n"
        b"\n"
        b'3,q,2024-05-01,3.0,-2,TRUE,""\n'
        b"4,q,2024-05-01,3.5,1,true,a\n"
        b"5,q,2024-05-01,1,abc,true,a\n"
        b"6,q,2024-05-01,1,1,yes,a\n"
        b"7,q,,1,1,true,a\n"
        b"8,q,2024-05-01,1,1\n"
        b"9,q,2024-05-01,99999999999999999999,1,true,a\n"
        b"10,q,2024-05-01,1,1,true,\xff\n"
        b"11,q,2024-05-01,1,1,1,z\n"
    )
    dead_path = tmp_path / "dead.jsonl"
    with DeadLetter(str(dead_path)) as dead:
        df = read_input(path, FIELDS, "ts", dead)
    assert df["id"].tolist() == [1, 2, 3, 11]
    assert df["s"].tolist() == ["a, b", "", "", "z"]
    assert df["s__null"].tolist() == [False, True, False, False]  # "" quoted is a value
    assert df["n"].tolist() == [5, 7, 3, 1]
    assert df["x"].tolist() == [1.5, 1000.0, -2.0, 1.0]
    assert df["ok"].tolist() == [True, False, True, True]
    assert df["ts"].tolist()[:2] == [us("2024-05-01T12:00:00Z")] * 2
    at = line_offsets(path.read_bytes())
    kinds = {e["offset"]: e["kind"] for e in entries(dead_path)}
    assert kinds == {at[line]: kind for line, kind in {
        6: "wrong_type", 7: "wrong_type", 8: "wrong_type", 9: "null_timestamp",
        10: "bad_row", 11: "out_of_range", 12: "invalid_utf8",
    }.items()}  # fmt: skip
    assert dead.skipped == 1
    assert len(df) + dead.count + dead.skipped == 13 - 1  # minus the header


def test_csv_values_spanning_lines_are_bad_rows(tmp_path: Path) -> None:
    """A record is one line (files are read by byte range): a quoted value spanning lines
    makes its lines bad rows, and the lines around them are unaffected."""
    path = tmp_path / "e.csv"
    path.write_text(
        "id,ts,n,x,ok,s\n"
        '1,2024-05-01,1,1,true,"two\nlines"\n'
        "2,2024-05-01,x,1,true,a\n"
        '3,2024-05-01,1,1,true,"b ""quoted"", c"\n',
        encoding="utf-8",
    )
    dead_path = tmp_path / "dead.jsonl"
    with DeadLetter(str(dead_path)) as dead:
        df = read_input(path, FIELDS, "ts", dead)
    assert df["s"].tolist() == ['b "quoted", c']
    at = line_offsets(path.read_bytes())
    got = [(e["offset"], e["kind"]) for e in entries(dead_path)]
    assert got == [(at[2], "bad_row"), (at[3], "bad_row"), (at[4], "wrong_type")]
    assert "quoted value spanning lines" in entries(dead_path)[0]["reason"]


def test_csv_missing_column_is_null_in_every_record(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("id,ts,n,x,s\n1,2024-05-01,1,1,a\n2,2024-05-01,1,1,a\n", encoding="utf-8")
    df, dead = read(path)
    assert dead.count == 0 and df["id"].tolist() == [1, 2]
    assert df["ok__null"].tolist() == [True, True] and df["ok"].tolist() == [False, False]
    path.write_text("id,n,x,ok,s\n1,1,1,true,a\n2,1,1,true,a\n", encoding="utf-8")
    df, dead = read(path)  # without the TIMESTAMP column every record is rejected
    assert len(df) == 0 and dead.reasons == {"null_timestamp": 2}
    assert list(df.columns) == ["offset", "id", "ts", "n", "x", "ok", "s", "seq"]
    assert df["s"].dtype == object and df["ts"].dtype == np.int64


def test_parquet(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "ts": pa.array([0, 1500, None, 7], pa.timestamp("ms")),
            "n": pa.array([1.0, 2.5, 3.0, 2.0**40]),
            "x": pa.array([1, 2, 3, 4], pa.int32()),
            "ok": [True, None, False, True],
            "s": pa.array(["a", "b", "c", "d"]).dictionary_encode(),
        }
    )
    pq.write_table(table, tmp_path / "e.parquet")
    dead_path = tmp_path / "dead.jsonl"
    with DeadLetter(str(dead_path)) as dead:
        df = read_input(tmp_path / "e.parquet", FIELDS, "ts", dead)
    assert df["id"].tolist() == [1]
    assert df["ts"].tolist() == [0]
    assert df["x"].dtype == np.float64 and df["s"].tolist() == ["a"]
    assert {e["offset"]: e["kind"] for e in entries(dead_path)} == {
        1: "wrong_type", 2: "null_timestamp", 3: "out_of_range",
    }  # fmt: skip
    assert json.loads(entries(dead_path)[0]["record"])["id"] in (2, 3, 4)


# ---------------------------------------------------------------- a directory


def test_a_directorys_files_are_read_in_name_order_with_sequence_numbers(tmp_path: Path) -> None:
    """Which files count is the input log's rule (tests/io/test_inputlog.py); here, that
    each file's records follow in name order, numbered by segment and offset."""
    d = tmp_path / "in"
    d.mkdir()
    write_lines(d / "b.jsonl", [rec(3), rec(4)])
    write_lines(d / "a.jsonl", [rec(1), "bad", rec(2)])
    write_lines(d / "_SUCCESS", ["not data"])
    write_lines(d / ".hidden.jsonl", [rec(99)])
    df, dead = read(d)
    assert df["id"].tolist() == [1, 2, 3, 4]
    second_a, second_b = len(rec(1)) + len("bad") + 2, len(rec(3)) + 1
    assert df["seq"].tolist() == [0, second_a, 1 << 36, (1 << 36) + second_b]
    assert dead.count == 1
    df, _ = read(str(d / "*.jsonl"))
    assert df["id"].tolist() == [1, 2, 3, 4]


def test_schema_errors(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "e.jsonl", [rec(1)])
    with pytest.raises(ValueError, match="unknown type"):
        read_input(path, [("id", "float")], None, DeadLetter(None))
    with pytest.raises(ValueError, match="TIMESTAMP field 'when'"):
        read_input(path, FIELDS, "when", DeadLetter(None))


def test_write_events_round_trip(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "e.jsonl",
        [rec(1, ts="2024-05-01T12:00:00.5Z", s="ü"), rec(2, s=None, n=None), rec(3, x=1e-300)],
    )
    df, _ = read(path)
    write_events_jsonl(df, str(tmp_path / "out.jsonl"), timestamp_fields=["ts"])
    again, dead = read(tmp_path / "out.jsonl")
    assert dead.count == 0
    pd.testing.assert_frame_equal(df.drop(columns=["offset", "seq"]),
                                  again.drop(columns=["offset", "seq"]))
    first = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["ts"] == "2024-05-01T12:00:00.500000Z"
    # datetime columns are written as ISO strings too
    frame = pd.DataFrame({"id": [1], "ts": pd.to_datetime(["2024-05-01T12:00:00Z"])})
    write_events_jsonl(frame, str(tmp_path / "dt.jsonl"))
    assert json.loads((tmp_path / "dt.jsonl").read_text())["ts"] == "2024-05-01T12:00:00.000000Z"
