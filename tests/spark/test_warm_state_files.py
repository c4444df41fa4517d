"""The files an engine's batch leaves for its next batch, whichever worker runs it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from cep.engine import codec
from cep.engine.table import SEQ, SUB
from cep.spark.engine_batch import KeyStates
from cep.spark.key_layout import Layout, pack
from cep.spark.warm_state_files import STALE_S, WarmFiles, remove_start


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "warm"


def _blob(n: int) -> bytes:
    return codec.encode({"rule": [n, "x" * n]}, "key")


def test_the_next_batch_reads_what_the_last_one_wrote(root: Path) -> None:
    WarmFiles("q", 3, root).write(7, _blob(2))
    other_worker = WarmFiles("q", 3, root)
    assert codec.decode(other_worker.read(7), "key", "k") == {"rule": [2, "xx"]}
    assert WarmFiles("q", 4, root).read(7) is None  # another engine
    assert WarmFiles("other", 3, root).read(7) is None  # another start of the query
    assert other_worker.read(6) is None  # no file of that batch


def test_a_batch_keeps_its_file_and_the_one_before(root: Path) -> None:
    files = WarmFiles("q", 0, root)
    neighbour = WarmFiles("q", 1, root)
    neighbour.write(1, _blob(1))
    for batch in range(5):
        files.write(batch, _blob(batch))
    names = sorted(os.listdir(root / "q"))
    assert names == ["0-3.state", "0-4.state", "1-1.state"]  # a retried batch 4 reads 3
    assert codec.decode(files.read(3), "key", "k") == {"rule": [3, "xxx"]}


def test_a_directory_others_may_write_to_is_never_trusted(root: Path) -> None:
    WarmFiles("q", 0, root).write(1, _blob(1))
    os.chmod(root / "q", 0o777)
    assert WarmFiles("q", 0, root).read(1) is None
    WarmFiles("q", 0, root).write(2, _blob(2))  # nor written to
    assert not (root / "q" / "0-2.state").exists()


def test_a_file_that_does_not_decode_as_key_states_is_ignored(root: Path) -> None:
    states = KeyStates(None, None, "q", 0)  # no MapState needed to read a file
    states.files = WarmFiles("q", 0, root)
    rows = {SEQ: np.arange(2, dtype=np.int64), SUB: np.zeros(2, np.int64), "v": np.ones(2)}
    layout = Layout([("rule", 1)], [1], [[2]], [0])
    states.files.write(1, codec.encode(pack(['"k"'], [{"rule": [rows]}], [layout]), "warm"))
    (state, got_layout), = states._read_file(1).values()
    assert got_layout == layout and np.array_equal(state["rule"][0]["v"], rows["v"])
    path = root / "q" / "0-1.state"
    for junk in (b"\x80\x04not a state",  # a pickle's opening, or any junk
                 codec.encode({"keys": 5}, "warm"),  # data, but not packed key states
                 codec.encode(pack([], [], []), "key")):  # another kind of blob
        path.write_bytes(junk)
        assert states._read_file(1) == {}


def test_the_run_removes_its_files(root: Path) -> None:
    WarmFiles("q", 0, root).write(1, _blob(1))
    WarmFiles("r", 0, root).write(1, _blob(1))
    remove_start("q", root)
    assert sorted(os.listdir(root)) == ["r"]


def test_a_new_start_deletes_the_files_of_runs_long_gone(root: Path) -> None:
    WarmFiles("killed", 0, root).write(1, _blob(1))
    WarmFiles("running", 0, root).write(1, _blob(1))
    long_ago = time.time() - STALE_S - 60
    os.utime(root / "killed", (long_ago, long_ago))
    WarmFiles("new", 0, root).write(0, _blob(1))
    assert sorted(os.listdir(root)) == ["new", "running"]
