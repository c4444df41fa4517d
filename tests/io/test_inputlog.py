"""The input log: segments, offsets and pieces, without Spark."""

from __future__ import annotations

import json

import pytest

from cep.io.inputlog import (
    GRID_BYTES,
    SEQ_SHIFT,
    InputLog,
    InputLogError,
    last_line_end,
    list_files,
)


def _write(path, lines):
    path.write_text("".join(json.dumps({"i": i}) + "\n" for i in lines))


def test_files_are_segments_in_name_order_hidden_and_unknown_ones_ignored(tmp_path):
    for name in ("b.jsonl", "a.jsonl", ".c.jsonl.tmp", "_SUCCESS", "notes.txt"):
        _write(tmp_path / name, range(3))
    assert [p.rsplit("/", 1)[1] for p in list_files(str(tmp_path), must_exist=True)] == [
        "a.jsonl", "b.jsonl"]
    log = InputLog(None, {"S": str(tmp_path)}, follow=False)
    assert log.discover(first=True) == 2
    a, b = log.segments[0], log.segments[1]
    assert (a.path.endswith("a.jsonl"), b.path.endswith("b.jsonl")) == (True, True)
    assert a.start == 0 and a.end == (tmp_path / "a.jsonl").stat().st_size and a.final
    assert b.seq_base == 1 << SEQ_SHIFT
    assert log.discover() == 0  # nothing new


def test_a_glob_and_a_named_file_follow_the_same_rules(tmp_path):
    """What the older, deleted path lister of the file reader checked, by the input log's
    rules (the ones runs use): a glob's matches in name order, hidden and ``_`` files
    left out; a file named directly must have a known extension."""
    for name in ("b.jsonl", "a.jsonl", ".c.jsonl", "_d.jsonl"):
        _write(tmp_path / name, range(2))
    (tmp_path / "events.txt").write_text('{"i": 5}\n')
    assert [p.rsplit("/", 1)[1] for p in list_files(str(tmp_path / "*.jsonl"), must_exist=True)
            ] == ["a.jsonl", "b.jsonl"]
    with pytest.raises(InputLogError, match=r"cannot tell the format of .*events\.txt from its "
                                            r"extension"):
        list_files(str(tmp_path / "events.txt"), must_exist=True)
    with pytest.raises(InputLogError, match=r"no input files in .*\*\.csv"):
        list_files(str(tmp_path / "*.csv"), must_exist=True)


def test_a_missing_input_is_an_error_unless_followed(tmp_path):
    with pytest.raises(InputLogError, match="input not found"):
        InputLog(None, {"S": str(tmp_path / "nope")}, follow=False).discover(first=True)
    with pytest.raises(InputLogError, match="no input files"):
        InputLog(None, {"S": str(tmp_path)}, follow=False).discover(first=True)
    assert InputLog(None, {"S": str(tmp_path)}, follow=True).discover(first=True) == 0


def test_followed_files_end_at_their_last_newline_and_grow_by_new_segments(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"i": 0}\n{"i": 1}\n{"i"')
    log = InputLog(tmp_path / "log", {"S": str(tmp_path)}, follow=True)
    log.discover(first=True)
    assert (log.segments[0].end, log.segments[0].final) == (18, False)
    with open(path, "ab") as fh:
        fh.write(b': 2}\n{"i": 3}\n')
    assert log.discover() == 1
    assert (log.segments[1].start, log.segments[1].end) == (18, path.stat().st_size)
    again = InputLog(tmp_path / "log", {"S": str(tmp_path)}, follow=True)  # a restart
    assert again.segments == log.segments and again.discover() == 0
    path.write_bytes(b'{"i": 0}\n')
    with pytest.raises(InputLogError, match="shrank"):
        again.discover()


def test_a_line_torn_by_a_crash_is_dropped_from_the_log(tmp_path):
    _write(tmp_path / "a.jsonl", range(5))
    log = InputLog(tmp_path / "log", {"S": str(tmp_path)}, follow=True)
    log.discover(first=True)
    with open(tmp_path / "log" / "segments.jsonl", "a") as fh:
        fh.write('{"ordinal": 1, "stre')
    again = InputLog(tmp_path / "log", {"S": str(tmp_path)}, follow=True)
    assert list(again.segments) == [0] and again.count == 1


def test_advance_takes_about_the_budget_and_never_passes_the_stop(tmp_path):
    _write(tmp_path / "a.jsonl", range(100))
    _write(tmp_path / "b.jsonl", range(100, 150))
    log = InputLog(None, {"S": str(tmp_path)}, follow=False)
    log.discover(first=True)
    unit = log.segments[0].unit
    first = log.advance(0, 0, budget=30)
    assert first[0] == 0 and abs(first[1] - 30 * unit) <= unit
    assert log.advance(0, 0, budget=1000) == log.end_offset() == (2, 0)
    assert log.advance(0, 0, budget=1000, stop=(1, 0)) == (1, 0)
    assert log.advance(1, log.segments[1].end, budget=10) == (1, log.segments[1].end)


def test_pieces_are_cut_on_a_fixed_grid_whatever_the_batch_bounds(tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * (GRID_BYTES * 2 + 10) + b"\n")
    log = InputLog(None, {"S": str(big)}, follow=False)
    log.discover(first=True)
    cuts = [(p.lo, p.hi) for p in log.pieces((0, 5), (0, GRID_BYTES * 2 + 3))]
    assert cuts == [(5, GRID_BYTES), (GRID_BYTES, 2 * GRID_BYTES),
                    (2 * GRID_BYTES, 2 * GRID_BYTES + 3)]


def test_last_line_end_finds_the_newline_far_back(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"a\n" + b"y" * 200_000)
    assert last_line_end(str(path), 0, path.stat().st_size) == 2
    assert last_line_end(str(path), 2, path.stat().st_size) == 2
