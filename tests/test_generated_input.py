"""--input tweets: the built-in workload feeds rules directly and is scored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from cep.io.inputs import InputError, load_inputs
from cep.quality import precision_recall
from grammar.compile import compile_file, compile_text

RULES = Path(__file__).parent.parent / "rules"


def test_tweets_generator_feeds_the_fsd_schema():
    module = compile_file(RULES / "fsd.epl")
    loaded = load_inputs(module, ["tweets:n=3000,seed=3"], None)
    assert loaded.accepted == 3000
    assert loaded.truth_ids is not None and 0 < len(loaded.truth_ids) < 3000


def test_generator_errors_are_input_errors():
    module = compile_file(RULES / "fsd.epl")
    for spec in ("tweets:n=abc", "tweets:colour=red"):
        try:
            load_inputs(module, [spec], None)
        except InputError as err:
            assert spec in str(err)
        else:
            raise AssertionError(f"{spec} should be refused")
    other = compile_text("CREATE SCHEMA S (k string, nope int);\nSELECT k FROM S;")
    try:
        load_inputs(other, ["tweets:n=10"], None)
    except InputError as err:
        assert "no field k, nope" in str(err)
    else:
        raise AssertionError("a schema the generator cannot fill must be refused")


def test_precision_recall():
    records = [{"rule": "r", "id": i} for i in (1, 2, 3, 4)] + [{"rule": "q", "x": 1}]
    got = precision_recall(records, np.array([2, 3, 9, 10, 11]))
    assert got == {"r": {"detected": 4, "truth": 5, "precision": 0.5, "recall": 0.4}}


def test_cli_prints_quality_for_tweets(tmp_path):
    metrics = tmp_path / "m.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "cep.cli", "run", str(RULES / "fsd.epl"), "--input",
         "tweets:n=4000", "--runner", "local", "--output", str(tmp_path / "o.jsonl"),
         "--metrics", str(metrics)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "first_story vs ground truth: precision" in result.stderr
    quality = json.loads(metrics.read_text().splitlines()[-1])["quality"]["first_story"]
    assert 0.3 < quality["precision"] <= 1 and 0.3 < quality["recall"] <= 1
