"""Records as they come in the wild: missing fields are NULL, fields read from nested
objects and alternative names (FROM paths), timestamps in declared formats (FORMAT)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.input_files import read_input

from cep.io import lines
from cep.io.deadletter import DeadLetter
from cep.io.readers.jsonl import JsonLinesReader
from grammar import ir
from grammar.compile import compile_text


def stream(schema: str) -> ir.StreamDef:
    """The stream of a one-schema rule file."""
    module = compile_text(f"CREATE SCHEMA E ({schema}) TIMESTAMP ts; SELECT * FROM E;")
    return module.streams["E"]


def read(path: Path, schema: str) -> tuple[pd.DataFrame, list[dict]]:
    dead_path = path.parent / "dead.jsonl"
    with DeadLetter(str(dead_path)) as dead:
        frame = read_input(path, stream(schema), None, dead)
    letters = ([json.loads(x) for x in dead_path.read_text().splitlines()]
               if dead_path.exists() else [])
    return frame, letters


def us(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1_000_000)


def line_offsets(path: Path) -> list[int]:
    data = path.read_bytes()
    return [0] + [i + 1 for i, b in enumerate(data[:-1]) if b == ord("\n")]


def jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records))
    return path


TWEET = ("id long, ts timestamp FROM 'ts', 'created_at', "
         "user string FROM 'user.screen_name', 'user', text string")


def test_missing_fields_are_null_and_a_missing_timestamp_is_rejected(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "e.jsonl", [
        {"id": 1, "ts": 1000, "n": 5},
        {"ts": 2000},  # everything but the time missing
        {"id": 3, "n": 7},  # the time missing
        {"id": 4, "ts": 4000, "n": "seven"},  # present with the wrong type
        {"id": 5, "ts": None},
    ])
    frame, dead = read(path, "id long, ts timestamp, n int")
    assert frame["id"].tolist() == [1, 0] and frame["id__null"].tolist() == [False, True]
    assert frame["n"].tolist() == [5, 0] and frame["n__null"].tolist() == [False, True]
    at = line_offsets(path)
    assert [(d["offset"], d["kind"]) for d in dead] == [
        (at[2], "null_timestamp"), (at[3], "wrong_type"), (at[4], "null_timestamp")]
    assert "missing or null" in dead[0]["reason"]


@pytest.mark.parametrize("per_line", [False, True])
def test_nested_paths_and_alternatives(tmp_path: Path, per_line: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator's flat shape and Twitter's nested one, in one file, give the same
    fields; the first path with a value wins; a wrong type on it is the record's error."""
    if per_line:
        monkeypatch.setattr(JsonLinesReader, "json_fast", lambda *a: False)
    records = [
        {"id": 1, "ts": "2018-10-10T20:19:24Z", "user": "ann", "text": "flat"},
        {"id": 2, "created_at": "Wed Oct 10 20:19:25 +0000 2018",
         "user": {"screen_name": "bob", "id": 7}, "text": "nested"},
        {"id": 3, "ts": None, "created_at": "Wed Oct 10 22:19:26 +0200 2018",
         "user": {"name": "no screen name"}, "text": "null ts, second path"},
        {"id": 4, "ts": "2018-10-10T20:19:27Z", "user": {"screen_name": None}, "text": "x"},
        {"id": 5, "ts": "2018-10-10T20:19:28Z", "user": {"screen_name": 42}, "text": "bad"},
        {"id": 6, "ts": "2018-10-10T20:19:29Z", "user": ["a list"], "text": "bad"},
        {"id": 7, "ts": 1539202770000, "created_at": "never", "text": "first path wins"},
    ]
    frame, dead = read(jsonl(tmp_path / "t.jsonl", records * 40), TWEET)
    one = frame.iloc[:3]
    assert one["id"].tolist() == [1, 2, 7]
    assert one["ts"].tolist() == [us("2018-10-10T20:19:24"), us("2018-10-10T20:19:25"),
                                  us("2018-10-10T20:19:30")]
    assert one["user"].tolist() == ["ann", "bob", ""]
    assert one["user__null"].tolist() == [False, False, True]
    assert len(frame) == 3 * 40 and len(dead) == 4 * 40
    # no screen_name (or a null one): the next path, 'user', holds an object, which is
    # the value that wins, of the wrong type
    assert [d["reason"] for d in sorted(dead, key=lambda d: d["offset"])[:4]] == [
        'field \'user\': expected string, got object {"name": "no screen name"}',
        'field \'user\': expected string, got object {"screen_name": null}',
        "field 'user': expected string, got number 42",
        'field \'user\': expected string, got array ["a list"]',
    ]


def test_struct_on_a_plain_path_is_wrong_type_in_both_paths(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """``user.screen_name`` absent and ``user`` an object: the object is the value."""
    records = [{"id": i, "ts": 1000 * i, "user": {"name": "n"}, "text": "t"} for i in range(40)]
    records[3]["user"] = "plain"
    path = jsonl(tmp_path / "t.jsonl", records)
    fast, fast_dead = read(path, "id long, ts timestamp, user string FROM 'user', text string")
    monkeypatch.setattr(JsonLinesReader, "json_fast", lambda *a: False)
    slow, slow_dead = read(path, "id long, ts timestamp, user string FROM 'user', text string")
    pd.testing.assert_frame_equal(fast, slow)
    assert fast["user"].tolist() == ["plain"]
    assert fast_dead == slow_dead and len(fast_dead) == 39
    assert fast_dead[0]["reason"] == 'field \'user\': expected string, got object {"name": "n"}'


def random_records(n: int, seed: int) -> list[str]:
    """Tweets of both shapes with every kind of defect, for the fast == per-line test."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        r: dict = {"id": i, "text": f"text {i}"}
        shape = rng.integers(6)
        if shape == 0:
            r |= {"ts": f"2018-10-10T20:{i % 60:02d}:00Z", "user": f"u{i % 7}"}
        elif shape == 1:
            r |= {"created_at": f"Wed Oct 10 20:{i % 60:02d}:00 +0000 2018",
                  "user": {"screen_name": f"u{i % 7}", "followers": i}}
        elif shape == 2:
            r |= {"ts": 1539202764000 + i, "user": {"id": i}}
        elif shape == 3:
            r |= {"created_at": "Wed Oct 10 20:19:24 +0000 2018", "user": None}
        elif shape == 4:
            r |= {"ts": i % 2 and "yesterday", "user": {"screen_name": [i]}}
        else:
            r |= {"user": "no time"}
        if rng.random() < 0.1:
            r.pop("id")
        if rng.random() < 0.05:
            r["id"] = "x"
        out.append(json.dumps(r))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_fast_path_equals_line_by_line_on_nested_records(tmp_path: Path, seed: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    path = jsonl(tmp_path / "t.jsonl", random_records(2000, seed))
    monkeypatch.setattr(lines, "CHUNK_BYTES", 20_000)
    fast, fast_dead = read(path, TWEET)
    monkeypatch.setattr(JsonLinesReader, "json_fast", lambda *a: False)
    slow, slow_dead = read(path, TWEET)
    pd.testing.assert_frame_equal(fast, slow)
    key = lambda d: d["offset"]  # noqa: E731
    assert sorted(fast_dead, key=key) == sorted(slow_dead, key=key)
    assert (len(fast), len(fast_dead)) == {1: (942, 1058), 2: (963, 1037)}[seed]
    assert {d["kind"] for d in fast_dead} == {
        "null_timestamp", "bad_timestamp", "wrong_type"}


@pytest.mark.parametrize(("fmt", "value", "expected"), [
    ("epoch_s", 1539202764, us("2018-10-10T20:19:24")),
    ("epoch_s", 1539202764.25, us("2018-10-10T20:19:24.250000")),
    ("epoch_s", "1539202764", us("2018-10-10T20:19:24")),
    ("epoch_ms", 1539202764123, us("2018-10-10T20:19:24.123000")),
    ("epoch_us", 1539202764123456, us("2018-10-10T20:19:24.123456")),
    ("iso", "2018-10-10T20:19:24Z", us("2018-10-10T20:19:24")),
    ("EEE MMM dd HH:mm:ss Z yyyy", "Wed Oct 10 20:19:24 +0000 2018", us("2018-10-10T20:19:24")),
    ("yyyy-MM-dd HH:mm:ss", " 2018-10-10 20:19:24 ", us("2018-10-10T20:19:24")),
    ("dd/MM/yyyy hh:mm a", "10/10/2018 08:19 PM", us("2018-10-10T20:19:00")),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2018-10-10T22:19:24.5+02:00",
     us("2018-10-10T20:19:24.500000")),
    ("%d.%m.%Y %H:%M", "10.10.2018 20:19", us("2018-10-10T20:19:00")),
    (None, "Wed Oct 10 20:19:24 +0000 2018", us("2018-10-10T20:19:24")),  # Twitter: default
    (None, 1539202764123, us("2018-10-10T20:19:24.123000")),
])
def test_timestamp_formats(tmp_path: Path, fmt: str | None, value: object,
                           expected: int) -> None:
    quoted = (fmt or "").replace("'", "''")  # EPL doubles a quote inside a string
    schema = "id long, ts timestamp" + (f" FORMAT '{quoted}'" if fmt else "")
    frame, dead = read(jsonl(tmp_path / "t.jsonl", [{"id": 1, "ts": value}]), schema)
    assert not dead
    assert frame["ts"].tolist() == [expected]


@pytest.mark.parametrize(("fmt", "value"), [
    ("epoch_s", "2018-10-10T20:19:24Z"),
    ("iso", 1539202764),
    ("iso", "1539202764"),
    ("yyyy-MM-dd HH:mm:ss", "2018-10-10T20:19:24"),
    ("yyyy-MM-dd HH:mm:ss", 1539202764),
    ("EEE MMM dd HH:mm:ss Z yyyy", "Wed Oct 10 20:19:24 2018"),
])
def test_a_value_not_in_the_declared_format_is_a_bad_timestamp(tmp_path: Path, fmt: str,
                                                              value: object) -> None:
    frame, dead = read(jsonl(tmp_path / "t.jsonl", [{"id": 1, "ts": value}]),
                       f"id long, ts timestamp FORMAT '{fmt}'")
    assert len(frame) == 0 and [d["kind"] for d in dead] == ["bad_timestamp"]
    assert "field 'ts'" in dead[0]["reason"]


def test_csv_reads_the_first_paths_column_and_missing_columns_are_null(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,created_at,user,lang\n"
                    '1,Wed Oct 10 20:19:24 +0000 2018,ann,en\n'
                    "2,1539202765000,,en\n")
    frame, dead = read(path, TWEET)
    assert not dead
    assert frame["ts"].tolist() == [us("2018-10-10T20:19:24"), us("2018-10-10T20:19:25")]
    assert frame["user"].tolist() == ["ann", ""] and frame["user__null"].tolist() == [False, True]
    assert frame["text__null"].tolist() == [True, True]  # no text column


def test_parquet_reads_struct_fields_and_missing_columns_are_null(tmp_path: Path) -> None:
    table = pa.table({
        "id": [1, 2],
        "created_at": ["Wed Oct 10 20:19:24 +0000 2018", "2018-10-10T20:19:25Z"],
        "user": pa.array([{"screen_name": "ann"}, None],
                         pa.struct([("screen_name", pa.string())])),
    })
    pq.write_table(table, tmp_path / "t.parquet")
    frame, dead = read(tmp_path / "t.parquet", TWEET)
    assert not dead
    assert frame["ts"].tolist() == [us("2018-10-10T20:19:24"), us("2018-10-10T20:19:25")]
    assert frame["user"].tolist() == ["ann", ""] and frame["user__null"].tolist() == [False, True]
    assert frame["text__null"].tolist() == [True, True]


def test_nested_tweets_load_at_pyarrow_speed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Twitter-shaped JSON goes through pyarrow's reader (nested structs, vectorised
    created_at parsing), not json.loads per line: printed rate, and no line-by-line."""
    n = 50_000
    path = tmp_path / "t.jsonl"
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "id": i, "created_at": f"Wed Oct 10 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:"
                                       f"{i % 60:02d} +0000 2018",
                "user": {"screen_name": f"u{i % 500}", "followers_count": i,
                         "entities": {"url": None}},
                "text": f"some words of tweet {i}", "lang": "en", "entities": {"hashtags": []},
            }) + "\n")
    calls: list[int] = []
    original = JsonLinesReader.json_per_line

    def counting(self, lines, offsets):
        calls.append(len(lines))
        return original(self, lines, offsets)

    monkeypatch.setattr(JsonLinesReader, "json_per_line", counting)
    start = time.perf_counter()
    frame, dead = read(path, TWEET)
    seconds = time.perf_counter() - start
    assert len(frame) == n and not dead and not calls
    with capsys.disabled():
        print(f"\n[readers] {n:,} nested tweets in {seconds:.2f}s: {n / seconds:,.0f} lines/s")


def test_twitter_dates_parse_as_strptime_does() -> None:
    """The fixed-width numpy reader of created_at agrees with pandas' strptime, valid
    dates and invalid ones alike (Feb 29 of a common year, hour 24, bad names)."""
    from cep.io import timeformat

    rng = np.random.default_rng(3)
    seconds = rng.integers(-30_000_000_000, 250_000_000_000, 3000)
    minutes = rng.integers(-14 * 60, 14 * 60, 3000)
    values = [datetime.fromtimestamp(s, timezone(timedelta(minutes=m)))
              .strftime("%a %b %d %H:%M:%S %z %Y")
              for s, m in zip(seconds.tolist(), minutes.tolist(), strict=True)]
    values += ["Thu Feb 29 23:59:59 -0130 2024", "Wed Feb 29 23:59:59 -0130 2023",
               "Wed Oct 10 24:00:00 +0000 2018", "Xyz Oct 10 20:19:24 +0000 2018",
               "Wed Okt 10 20:19:24 +0000 2018", "Wed Oct 1a 20:19:24 +0000 2018",
               "Wed Oct 10 20:19:24 *0000 2018", "Wed Oct 10 20:19:24 +0000 2018 "]
    got, good = timeformat.parse(pa.array(values), timeformat.TWITTER)  # trims, then numpy
    ref = pd.to_datetime(pd.Series(values).str.strip(), format=timeformat.TWITTER,
                         errors="coerce", utc=True)
    assert good.tolist() == (~ref.isna()).tolist()
    assert got[good].tolist() == ref[good].array.as_unit("us").asi8.tolist()
    assert good[:3000].all() and good[3000] and not good[3001:-1].any()
