"""Reading files by byte (Parquet: row) ranges: any cut of a file into consecutive ranges
reads every record exactly once, with the same values and the same dead letters as the
whole file (cep.io.readers.ranges.read_range, cep.io.lines)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.input_files import join_frames, read_input

from cep.engine.table import NULL_SUFFIX
from cep.io import lines
from cep.io.deadletter import DeadLetter
from cep.io.readers.ranges import read_range
from grammar import ir

STREAM = ir.StreamDef("E", (("id", "long"), ("ts", "timestamp"), ("s", "string"),
                            ("x", "double")), "ts")
LIMIT = 150  # max_record_bytes: the oversized lines below stay small files


def rec(i: int, **over: object) -> bytes:
    base = {"id": i, "ts": f"2024-05-01T12:00:{i:02d}Z", "s": f"text {i}", "x": i / 2}
    return json.dumps({**base, **over}).encode()


JSON_LINES = [
    rec(1),
    b"",
    rec(2, s=None),
    b"not json",
    b"   ",
    rec(3, x="bad"),
    rec(4, s="y" * 400),  # over LIMIT, and over the tiny chunks below
    rec(5, s="y" * 110),  # over LIMIT only with the rest of the record
    b'{"id": 6, "ts": "2024-05-01T12:00:06Z", "s": "caf\xe9", "x": 1}',  # not UTF-8
    rec(7, ts=1714564807000),
    b"\r",
    rec(8, ts=None),
    b"  " + rec(9),
    rec(10),  # the file ends here without a newline
]
JSON_KINDS = ["not_json", "wrong_type", "too_large", "too_large", "invalid_utf8",
              "null_timestamp"]

CSV_LINES = [
    b"x,id,ts,s,extra",
    b"1.5,1,2024-05-01T12:00:01Z,a,q",
    b'2.5,2,2024-05-01T12:00:02Z,"b, with a comma",q',
    b"",
    b"3.5,3,2024-05-01T12:00:03Z,c",  # a cell short
    b'4.5,4,2024-05-01T12:00:04Z,"two',  # a quoted value spanning two lines
    b'lines",q',
    b"5.5,5,2024-05-01T12:00:05Z," + b"y" * 200 + b",q",  # over LIMIT
    b"oops,6,2024-05-01T12:00:06Z,f,q",
    b"7.5,7,,g,q",
    b"8.5,8,2024-05-01T12:00:08Z,caf\xe9,q",
    b'9.5,9,1714564809000,"say ""hi""",q\r',
    b"10.5,10,2024-05-01T12:00:10Z,,q",  # no newline after this one
]
CSV_KINDS = ["bad_row", "bad_row", "bad_row", "too_large", "wrong_type", "null_timestamp",
             "invalid_utf8"]


def letters(path: Path) -> list[dict]:
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return sorted(entries, key=lambda d: d["offset"])  # written as found, not in file order


def read_cut(path: Path, fmt: str, bounds: list[int], tmp: Path,
             final: bool = True) -> tuple[pd.DataFrame, list[dict], int]:
    """The concatenated frames of the ranges between consecutive ``bounds``, the dead
    letters and the number of skipped blank lines."""
    dead_path = tmp / "dead.jsonl"
    with DeadLetter(str(dead_path)) as dead:
        frames = [read_range(str(path), fmt, a, b, STREAM, dead, max_record_bytes=LIMIT,
                             final=final)
                  for a, b in itertools.pairwise(bounds)]
    return join_frames(frames, STREAM), letters(dead_path), dead.skipped


def no_empty_masks(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as read_range would return it: a null mask only where there is a null."""
    empty = [c for c in frame if c.endswith(NULL_SUFFIX) and not frame[c].any()]
    return frame.drop(columns=empty).reset_index(drop=True)


def cuts(size: int, line_starts: list[int], rng: np.random.Generator) -> list[list[int]]:
    """Ways to cut ``[0, size)``: a single cut at every point within two bytes of a line
    start (where an off-by-one reads a line twice or not at all) and at every third
    point elsewhere, at every line start and every newline at once, runs of ranges of
    length 0 and 1, and random cuts into 3..8. (A cut at every point read each input
    1,100 times over: a minute and a half of the suite for what the third adds.)"""
    out = [[0, size], [0, size + 100]]
    near = {start + d for start in line_starts for d in range(-2, 3)}
    out += [[0, p, size] for p in range(size + 1) if p % 3 == 0 or p in near]
    out.append(sorted({0, size, *line_starts}))
    out.append(sorted({0, size, *(p - 1 for p in line_starts if p)}))  # at each newline
    for p in range(0, size, max(1, size // 25)):
        out.append([0, p, p, p + 1, p + 2, size])  # empty and one-byte ranges
    for _ in range(60):
        k = int(rng.integers(2, 8))
        out.append([0, *sorted(rng.integers(0, size + 1, size=k).tolist()), size])
    return out


def starts_of(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, b in enumerate(data) if b == ord("\n") and i + 1 < len(data)]


@pytest.fixture(params=["default chunks", "tiny chunks"])
def chunking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Also run with chunks smaller than a line, so lines cross chunk boundaries and the
    over-long line is read past block by block."""
    if request.param == "tiny chunks":
        monkeypatch.setattr(lines, "CHUNK_BYTES", 64)
        monkeypatch.setattr(lines, "TAIL_BYTES", 16)
    return request.param


@pytest.mark.parametrize(("fmt", "rows", "kinds", "ids"), [
    ("json", JSON_LINES, JSON_KINDS, [1, 2, 7, 9, 10]),
    ("csv", CSV_LINES, CSV_KINDS, [1, 2, 9, 10]),
])
def test_every_cut_reads_each_line_once(tmp_path: Path, chunking: str, fmt: str,
                                        rows: list[bytes], kinds: list[str],
                                        ids: list[int]) -> None:
    data = b"\n".join(rows)  # no newline after the last line
    path = tmp_path / f"in.{fmt}"
    path.write_bytes(data)
    whole, whole_dead, whole_skipped = read_cut(path, fmt, [0, len(data)], tmp_path)
    assert [d["kind"] for d in whole_dead] == kinds
    line_at = dict(zip(starts_of(data), rows, strict=True))
    assert all(line_at[d["offset"]].decode("utf-8", "replace").startswith(d["record"][:20])
               for d in whole_dead if d["kind"] != "too_large")
    assert whole["id"].tolist() == ids
    for offset, i in zip(whole["offset"], ids, strict=True):  # each row's offset is its line
        line = line_at[offset]
        assert (json.loads(line)["id"] if fmt == "json" else int(line.split(b",")[1])) == i
    events = read_input(path, STREAM, None, DeadLetter(None), max_record_bytes=LIMIT)
    pd.testing.assert_frame_equal(events.drop(columns=["seq"]), whole)  # as a run reads it

    for bounds in cuts(len(data), starts_of(data), np.random.default_rng(7)):
        got, dead, skipped = read_cut(path, fmt, bounds, tmp_path)
        pd.testing.assert_frame_equal(got, whole, obj=f"cut at {bounds}")
        assert dead == whole_dead, bounds
        assert skipped == whole_skipped, bounds


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_final_false_leaves_an_unterminated_last_line_out(tmp_path: Path, chunking: str,
                                                         fmt: str) -> None:
    rows = JSON_LINES if fmt == "json" else CSV_LINES
    data = b"\n".join(rows)
    path = tmp_path / f"in.{fmt}"
    path.write_bytes(data)
    whole, whole_dead, _ = read_cut(path, fmt, [0, len(data)], tmp_path)
    for bounds in ([0, len(data)], [0, len(data) // 2, len(data)], [0, len(data) - 3, len(data)]):
        got, dead, _ = read_cut(path, fmt, bounds, tmp_path, final=False)
        pd.testing.assert_frame_equal(got, no_empty_masks(whole.iloc[:-1]), obj=f"cut {bounds}")
        assert dead == whole_dead
    path.write_bytes(data + b"\n")  # once terminated, the line is read
    got, _, _ = read_cut(path, fmt, [0, len(data) + 1], tmp_path, final=False)
    pd.testing.assert_frame_equal(got, whole)
    # a half-written over-long last line is neither read nor dead-lettered
    path.write_bytes(data + b"\n" + rows[1] + b"z" * 500)
    got, dead, _ = read_cut(path, fmt, [0, len(data) + 600], tmp_path, final=False)
    pd.testing.assert_frame_equal(got, whole)
    assert dead == whole_dead
    got, dead, _ = read_cut(path, fmt, [0, len(data) + 600], tmp_path, final=True)
    assert dead[-1]["kind"] == "too_large" and dead[-1]["offset"] == len(data) + 1


def test_csv_header_is_read_when_the_range_starts_later(tmp_path: Path) -> None:
    data = b"\n".join(CSV_LINES)
    path = tmp_path / "in.csv"
    path.write_bytes(data)
    tail = data.index(b"9.5,")
    got, dead, _ = read_cut(path, "csv", [tail, len(data)], tmp_path)
    assert got["id"].tolist() == [9, 10] and got["x"].tolist() == [9.5, 10.5]
    assert got["s"].tolist() == ['say "hi"', ""] and not dead
    got, _, _ = read_cut(path, "csv", [0, 5], tmp_path)  # the header alone: no records
    assert len(got) == 0


def test_parquet_row_ranges(tmp_path: Path) -> None:
    n = 14
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "ts": pa.array([None if i == 5 else 1000 * i for i in range(n)], pa.timestamp("ms")),
        "s": ["y" * 300 if i == 8 else (None if i == 2 else f"t{i}") for i in range(n)],
        "x": pa.array([float(i) for i in range(n)]),
    })
    path = tmp_path / "in.parquet"
    pq.write_table(table, path, row_group_size=4)
    whole, whole_dead, _ = read_cut(path, "parquet", [0, n], tmp_path)
    assert [(d["offset"], d["kind"]) for d in whole_dead] == [(5, "null_timestamp"),
                                                               (8, "too_large")]
    assert whole["offset"].tolist() == [i for i in range(n) if i not in (5, 8)]
    assert whole["s" + NULL_SUFFIX].tolist() == [i == 2 for i in range(n) if i not in (5, 8)]
    for a in range(n + 1):
        for b in range(a, n + 2):
            got, dead, _ = read_cut(path, "parquet", [0, a, b, n], tmp_path)
            pd.testing.assert_frame_equal(got, whole, obj=f"cut at {a}, {b}")
            assert dead == whole_dead
    got, _, _ = read_cut(path, "parquet", [6, 10], tmp_path)
    assert got["id"].tolist() == [6, 7, 9]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_files_and_cuts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               seed: int) -> None:
    """Random mixes of the lines above (thousands, so pyarrow blocks are bisected around
    bad lines) in small chunks, cut at random places: the same rows and dead letters."""
    monkeypatch.setattr(lines, "CHUNK_BYTES", 2048)
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(JSON_LINES), size=3000, p=[0.6] + [0.4 / 13] * 13)
    rows = [rec(i % 60, id=i) if k == 0 else JSON_LINES[k] for i, k in enumerate(picks.tolist())]
    data = b"\n".join(rows) + (b"\n" if seed % 2 else b"")
    path = tmp_path / "in.json"
    path.write_bytes(data)
    whole, whole_dead, whole_skipped = read_cut(path, "json", [0, len(data)], tmp_path)
    assert (len(whole), len(whole_dead), whole_skipped) == {
        1: (2197, 555, 248), 2: (2143, 582, 275), 3: (2172, 547, 281)}[seed]
    for _ in range(5):
        bounds = [0, *sorted(rng.integers(0, len(data), size=20).tolist()), len(data)]
        got, dead, skipped = read_cut(path, "json", bounds, tmp_path)
        pd.testing.assert_frame_equal(got, whole)
        assert (dead, skipped) == (whole_dead, whole_skipped)
