"""Restart: ``cep run … --checkpoint DIR`` killed with SIGKILL (the whole process group:
driver, JVM, Python workers, embedded MongoDB) while keys move between engines, then
run again with the same command, gives exactly the events of an uninterrupted run: the
same rows in the same order, none lost, none twice.

The default test kills once, in the batch that imports the first moved keys, and
compares with the reference evaluator (which an uninterrupted Spark run equals, see
test_balancing.py). The slow test kills a longer run repeatedly at different points
(while listing the input, inside a batch, between a batch's output and its commit, the
driver alone) and compares with an uninterrupted Spark run of the same command.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from support.faults import (
    INPUT,
    RULE,
    appended,
    cep_run,
    committed,
    events,
    finish,
    in_flight,
    kill_group,
    metrics,
    reading,
    start,
    wait_group_gone,
    wait_until,
)

from cep.engine.output import output_records
from cep.io.inputs import load_inputs, parse_input_specs
from cep.reference import run_reference
from cep.run import run
from cep.run_config import RunConfig
from cep.servers.mongo import EmbeddedMongo
from cep.spark.runtime import SparkRunError
from grammar.compile import compile_file


def _reference(source: str) -> list[dict]:
    module = compile_file(RULE)
    return output_records(run_reference(module, load_inputs(module, [source], None).tables))


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory) -> dict:
    """One run SIGKILLed inside batch 2 (which imports the keys batch 1 exported), then
    the same command again; what the tests below look at."""
    tmp = tmp_path_factory.mktemp("restart")
    run = tmp / "run"
    command = cep_run(run)
    proc = start(command, tmp / "killed")
    wait_until(lambda: reading(run, 2), proc, "batch 2's input tasks at work")
    kill_group(proc)
    at_kill = {
        "batch_2_committed": committed(run, 2),
        "exported_in_batch_1": json.loads((run / "metrics" / "batch-0000001.json")
                                          .read_text())["exported_keys"],
    }
    resumed = finish(command, tmp / "resumed")
    return {"run": run, "command": command, "at_kill": at_kill, "resumed": resumed}


def test_sigkill_while_keys_move_then_restart_gives_the_uninterrupted_events(
        killed_and_resumed):
    run, resumed = killed_and_resumed["run"], killed_and_resumed["resumed"]
    assert not killed_and_resumed["at_kill"]["batch_2_committed"], "the kill came too late"
    assert killed_and_resumed["at_kill"]["exported_in_batch_1"] > 0, \
        "keys must be in transit into the killed batch"
    assert resumed.returncode == 0, resumed.stderr
    expected = _reference(str(INPUT))
    assert events(Path(f"{run}.jsonl")) == expected  # none twice, none lost


def test_every_key_exported_before_or_after_the_restart_is_imported(killed_and_resumed):
    rows = metrics(Path(f"{killed_and_resumed['run']}.metrics"))
    assert [m["batch"] for m in rows] == list(range(len(rows)))
    assert len(rows) >= 4
    assert rows[2]["imported_keys"] == rows[1]["exported_keys"] > 0  # the replayed batch
    assert sum(m["exported_keys"] for m in rows[2:]) > 0, "keys must move after the restart"
    assert sum(m["imported_keys"] for m in rows) == sum(m["exported_keys"] for m in rows[:-1])


def test_a_restart_with_another_strategy_is_refused(killed_and_resumed):
    """Key grouping after a key-moving strategy would route moved keys to engines
    without their state. (Another --engines is a scale change now, no longer refused:
    tests/spark/test_rescale_restart.py.)"""
    module = compile_file(RULE)
    sources = parse_input_specs(module, [str(INPUT)])
    with pytest.raises(SparkRunError, match="strategy dlb-h, not kg"):
        run(module, RunConfig(sources, checkpoint=str(killed_and_resumed["run"]),
                              progress=False, engines=3, strategy="kg"))


def test_a_restart_against_a_mongodb_without_the_run_is_refused(killed_and_resumed):
    """The maps and documents of a key-moving run live in its MongoDB: a restart that
    points elsewhere must stop before Spark starts, not fail (or worse) mid-batch."""
    module = compile_file(RULE)
    sources = parse_input_specs(module, [str(INPUT)])
    batches = len(metrics(Path(f"{killed_and_resumed['run']}.metrics")))
    missing = f"holds no key map {batches}"  # the batch after the last committed one
    with EmbeddedMongo() as other, pytest.raises(SparkRunError, match=missing):
        run(module, RunConfig(sources, engines=3, strategy="dlb-h", mongo_uri=other.uri,
                              checkpoint=str(killed_and_resumed["run"]), progress=False))


# -- slow: many kills at different points of a longer run ---------------------------

SLOW_SOURCE = "tweets:n=20000"
# seconds the JVM, workers and MongoDB of a driver killed alone may take to notice and
# go (a bound on a poll, generous for a loaded machine: passing never waits for it)
ORPHANS_GONE_S = 120
SLOW_OPTIONS = ("--batch-size", "2000", "--threshold", "1")


def _kill_when(command: list[str], logs: Path, ready, *, group: bool = True) -> None:
    """Start ``command``, SIGKILL it as soon as ``ready()``; with ``group`` False only
    the driver process, whose JVM, workers and MongoDB must then go by themselves."""
    proc = start(command, logs)
    wait_until(ready, proc, f"kill point of {logs.name}")
    if group:
        kill_group(proc)
        return
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_group_gone(proc, ORPHANS_GONE_S, "the driver's children outlived it")


@pytest.mark.slow
def test_repeated_sigkills_give_the_events_of_an_uninterrupted_run(tmp_path):
    reference_dir, run = tmp_path / "uninterrupted", tmp_path / "killed"
    uninterrupted = finish(cep_run(reference_dir, *SLOW_OPTIONS, source=SLOW_SOURCE),
                           tmp_path / "uninterrupted")
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    expected = events(Path(f"{reference_dir}.jsonl"))
    assert expected == _reference(SLOW_SOURCE)

    command = cep_run(run, *SLOW_OPTIONS, source=SLOW_SOURCE)
    segments = run / "input" / "segments.jsonl"
    kill_points = [  # (name, when, the whole group?); a point missed is the next moment
        ("listing", segments.exists, True),
        ("batch-1", lambda: in_flight(run, 1), True),
        # the window between a batch's append to the output and its commit: the replay
        # truncates the output back and appends again
        ("after-output", lambda: appended(run, 3) and not committed(run, 3), True),
        ("batch-5-driver-only", lambda: in_flight(run, 5), False),
        ("batch-7", lambda: in_flight(run, 7), True),
    ]
    for name, ready, group in kill_points:
        _kill_when(command, tmp_path / name, ready, group=group)
    final = finish(command, tmp_path / "final")
    assert final.returncode == 0, final.stderr
    assert events(Path(f"{run}.jsonl")) == expected
    rows = metrics(Path(f"{run}.metrics"))
    assert [m["batch"] for m in rows] == list(range(len(rows)))
    assert len(rows) >= 9
    assert sum(m["imported_keys"] for m in rows) == sum(m["exported_keys"] for m in rows[:-1])
    assert sum(m["exported_keys"] for m in rows) > 0


@pytest.mark.parametrize("layout", [None, "per-key-1"])
def test_a_checkpoint_of_an_old_state_layout_is_refused_not_resumed(tmp_path, layout):
    """A run directory of a cep that kept each engine's state in one blob (no layout
    named), or each key's in one blob (``per-key-1``): Spark itself would resume it and
    silently start every key from nothing."""
    module = compile_file(RULE)
    sources = parse_input_specs(module, [str(INPUT)])
    old = {"run_id": "0123456789abcdef", "engines": 3, "strategy": "kg", "inputs": sources,
           **({"state_layout": layout} if layout else {})}
    (tmp_path / "run.json").write_text(json.dumps(old) + "\n")
    with pytest.raises(SparkRunError, match=r"written by an older cep.*new checkpoint"):
        run(module, RunConfig(sources, checkpoint=str(tmp_path), engines=3, strategy="kg",
                              progress=False))
    assert not (tmp_path / "checkpoint").exists()  # refused before Spark started
