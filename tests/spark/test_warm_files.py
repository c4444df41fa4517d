"""The files an engine's batch leaves for its next batch, whichever worker runs it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from cep.engine import codec
from cep.spark.warm_files import STALE_S, WarmFiles, remove_start


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "warm"


def _blob(n: int) -> bytes:
    return codec.encode({"rule": [n, "x" * n]}, "key")


def test_the_next_batch_reads_what_the_last_one_wrote(root: Path) -> None:
    WarmFiles("q", 3, root).write(7, ['"a"', "2"], [_blob(1), _blob(2)], ["{}", '{"s": 2}'])
    other_worker = WarmFiles("q", 3, root)
    got = other_worker.read(7)
    assert set(got) == {'"a"', "2"}
    assert codec.decode(got["2"][0], "key", "k") == {"rule": [2, "xx"]}
    assert got["2"][1] == '{"s": 2}'  # the key's layout in the state store
    assert WarmFiles("q", 4, root).read(7) == {}  # another engine
    assert WarmFiles("other", 3, root).read(7) == {}  # another start of the query
    assert other_worker.read(6) == {}  # no file of that batch


def test_a_batch_keeps_its_file_and_the_one_before(root: Path) -> None:
    files = WarmFiles("q", 0, root)
    neighbour = WarmFiles("q", 1, root)
    neighbour.write(1, ["k"], [_blob(1)], ["{}"])
    for batch in range(5):
        files.write(batch, ["k"], [_blob(batch)], ["{}"])
    names = sorted(os.listdir(root / "q"))
    assert names == ["0-3.arrow", "0-4.arrow", "1-1.arrow"]  # a retried batch 4 reads 3
    assert codec.decode(files.read(3)["k"][0], "key", "k") == {"rule": [3, "xxx"]}


def test_a_directory_others_may_write_to_is_never_trusted(root: Path) -> None:
    WarmFiles("q", 0, root).write(1, ["k"], [_blob(1)], ["{}"])
    os.chmod(root / "q", 0o777)
    assert WarmFiles("q", 0, root).read(1) == {}
    WarmFiles("q", 0, root).write(2, ["k"], [_blob(2)], ["{}"])  # nor written to
    assert not (root / "q" / "0-2.arrow").exists()


def test_a_file_that_does_not_read_is_ignored(root: Path) -> None:
    files = WarmFiles("q", 0, root)
    files.write(1, ["k"], [_blob(1)], ["{}"])
    path = root / "q" / "0-1.arrow"
    path.write_bytes(b"\x80\x04not arrow")  # a pickle's opening, or any junk
    assert files.read(1) == {}
    other = pa.table({"key": ["k"], "state": [1]})  # Arrow, but not key → blob, layout
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, other.schema) as out:
        out.write_table(other)
    assert files.read(1) == {}


def test_the_run_removes_its_files(root: Path) -> None:
    WarmFiles("q", 0, root).write(1, ["k"], [_blob(1)], ["{}"])
    WarmFiles("r", 0, root).write(1, ["k"], [_blob(1)], ["{}"])
    remove_start("q", root)
    assert sorted(os.listdir(root)) == ["r"]


def test_a_new_start_deletes_the_files_of_runs_long_gone(root: Path) -> None:
    WarmFiles("killed", 0, root).write(1, ["k"], [_blob(1)], ["{}"])
    WarmFiles("running", 0, root).write(1, ["k"], [_blob(1)], ["{}"])
    long_ago = time.time() - STALE_S - 60
    os.utime(root / "killed", (long_ago, long_ago))
    WarmFiles("new", 0, root).write(0, ["k"], [_blob(1)], ["{}"])
    assert sorted(os.listdir(root)) == ["new", "running"]
