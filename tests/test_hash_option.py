"""``--hash {mod,jump}``: key grouping's hash as a run option, recorded in the run
directory so that a restart keeps it (without Spark: the run directory's manifest, the
router and the option). Oracle for the router: ``migration.hashing.kg_engine``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cep.cli.dispatch import build_parser
from cep.cli.run import run_config
from cep.run_config import HASHES, RunConfig
from cep.spark.run_dir import SparkRunError, run_manifest
from migration import hashing
from migration.hashing import kg_engine
from splitter.routing import key_grouping


def _start(run, hash, strategy="kg", engines=3):
    return run_manifest(run, engines, strategy, {"Reading": "in/"}, 2, hash=hash)


def test_a_restart_keeps_the_hash_the_run_started_with(tmp_path):
    run = tmp_path / "run"
    _, _, layout = _start(run, "jump")
    assert layout.hash == "jump"
    assert json.loads((run / "run.json").read_text())["hash"] == "jump"
    assert _start(run, None)[2].hash == "jump"  # no --hash: the run's
    assert _start(run, "jump")[2].hash == "jump"
    with pytest.raises(SparkRunError, match="--hash jump, not mod"):
        _start(run, "mod")


def test_a_run_directory_without_a_hash_is_mod(tmp_path):
    run = tmp_path / "run"
    _start(run, None)
    manifest = json.loads((run / "run.json").read_text())
    del manifest["hash"]  # written before --hash existed
    (run / "run.json").write_text(json.dumps(manifest))
    assert _start(run, None)[2].hash == "mod"
    with pytest.raises(SparkRunError, match="--hash mod, not jump"):
        _start(run, "jump")


def test_pkg_takes_no_jump_hash(tmp_path):
    with pytest.raises(SparkRunError, match="PKG"):
        _start(tmp_path / "run", "jump", strategy="pkg")


def test_key_grouping_routes_by_the_hash():
    keys = np.array([f"s{i}" for i in range(500)], dtype=object)
    for scheme in ("mod", "jump"):
        assert (key_grouping(5, scheme)(keys, 0) == kg_engine(keys, 5, scheme)).all()
    assert (key_grouping(5, "mod")(keys, 0) != key_grouping(5, "jump")(keys, 0)).any()


def test_the_option_reaches_the_run_config():
    args = build_parser("run").parse_args(["run", "rules.epl", "--input", "x.jsonl",
                                      "--hash", "jump"])
    assert run_config(args, "dead.jsonl").hash == "jump"
    args = build_parser("run").parse_args(["run", "rules.epl", "--input", "x.jsonl"])
    assert run_config(args, "dead.jsonl").hash is None
    assert HASHES == hashing.HASHES
    with pytest.raises(ValueError, match="hash"):
        RunConfig(("x.jsonl",), hash="ring")
