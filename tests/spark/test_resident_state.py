"""The resident-state path on real Spark (``cep.spark.engines.resident``, ``engine_log``): engines
kept in the Python workers from batch to batch, the state store's changelog as the truth.

Each case compares the events with the reference evaluator's, event for event: engines
alternating between workers (caught up from the log), keys moving between engines, a
batch replayed by a restart whose log was folded (rebuilt from a base and its deltas),
and a task that fails after its worker's copy advanced and before it commits, retried
by Spark (``local[2,2]``): the retry must not trust the advanced copy. A restart after
``kill -9`` is ``test_restart.py``'s (it rebuilds every engine from the log); here, one
whose engines' log entries are in many parts (issue 51: state rows of a bounded size).
The folded cases run with parts of ``PART_BYTES`` too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.faults import (
    INPUT,
    RULE,
    cep_run,
    events,
    finish,
    kill_group,
    metrics,
    reading,
    start,
    wait_until,
)
from support.spark_runs import reference, run_and_read

from grammar.compile import compile_file

# a small fold floor and few deltas per base: the skewed tweets' few kilobytes of
# state fold every few batches, so rebuilds read a base and deltas
# state rows of 256 bytes: each entry of those few kilobytes is written in parts
PART_BYTES = 256
FOLDING = {"CEP_STATE_FOLD_FLOOR": "1", "CEP_STATE_MAX_DELTAS": "2",
           "CEP_STATE_PART_BYTES": str(PART_BYTES)}


@pytest.fixture(scope="module")
def expected() -> list[dict]:
    return reference(compile_file(RULE), str(INPUT))


def _origins(rows: list[dict]) -> dict[str, int]:
    total: dict[str, int] = {}
    for m in rows:
        for name, n in m["keys_restored"].items():
            total[name] = total.get(name, 0) + n
    return total


def test_engines_alternating_between_workers_catch_up_from_the_log(spark, expected):
    run, records = run_and_read(compile_file(RULE), str(INPUT), engines=5, batch_size=12)
    assert records == expected
    origins = _origins(run.metrics)
    assert origins["new"] > 0 and origins["resident"] > 0
    assert origins["caught_up"] + origins["rebuilt"] > 0, "no batch found a stale copy"
    assert all(m["keys_held"] > 0 and m["state_bytes"] > 0 for m in run.metrics)


def test_moved_keys_give_the_reference(spark, expected):
    run, records = run_and_read(compile_file(RULE), str(INPUT), engines=3, batch_size=24,
                                strategy="dlb-h", threshold=5.0, moves="always")
    assert records == expected
    assert sum(m["imported_keys"] for m in run.metrics) > 0


def test_a_replayed_batch_rebuilt_from_a_folded_log_gives_the_reference(tmp_path, expected):
    run = tmp_path / "run"
    command = cep_run(run, "--batch-size", "24")
    first = finish(command, tmp_path / "first", FOLDING)
    assert first.returncode == 0, first.stderr
    done = metrics(Path(f"{run}.metrics"))
    last = done[-1]["batch"]
    assert sum(m["state_saved"]["base"] for m in done[1:]) > 0, "the log never folded"
    (run / "checkpoint" / "commits" / str(last)).unlink()  # as if killed before its commit
    again = finish(command, tmp_path / "again", FOLDING)
    assert again.returncode == 0, again.stderr
    replayed = [m for m in metrics(Path(f"{run}.metrics")) if m["batch"] == last][-1]
    restored = replayed["keys_restored"]
    assert restored["rebuilt"] > 0 and restored["resident"] == restored["caught_up"] == 0
    assert restored["log_entries"] > restored["rebuilt"], "a rebuild read no delta"
    assert events(Path(f"{run}.jsonl")) == expected


def test_a_task_retried_after_its_copy_advanced_does_not_trust_that_copy(tmp_path,
                                                                          expected):
    run, marker = tmp_path / "run", tmp_path / "failed-once"
    fault = {"CEP_FAULT_AFTER_SAVE": f"3,1,{marker}", **FOLDING}
    done = finish(cep_run(run, "--batch-size", "24", "--master", "local[2,2]"),
                  tmp_path / "retried", fault)
    assert done.returncode == 0, done.stderr
    assert marker.exists(), "the fault was not injected"
    assert events(Path(f"{run}.jsonl")) == expected
    rows = metrics(Path(f"{run}.metrics"))
    assert [m["batch"] for m in rows] == list(range(len(rows)))
    assert rows[3]["keys_restored"]["new"] == 0  # the retry found the engine's state


def test_a_run_killed_with_its_state_in_parts_resumes_with_the_reference_events(tmp_path,
                                                                                 expected):
    """Oracle: the reference evaluator. SIGKILLed inside batch 3, the run starts again
    with nothing in its workers: every engine is read back from the state store's log,
    base and deltas, each put together from its parts."""
    run = tmp_path / "run"
    command = cep_run(run, "--batch-size", "24")
    proc = start(command, tmp_path / "killed", FOLDING)
    wait_until(lambda: reading(run, 3), proc, "batch 3's input tasks at work")
    kill_group(proc)
    again = finish(command, tmp_path / "resumed", FOLDING)
    assert again.returncode == 0, again.stderr
    rows = metrics(Path(f"{run}.metrics"))
    assert max(m["state_bytes"] for m in rows) > 4 * PART_BYTES, "no entry had parts"
    resumed = [m for m in rows if m["batch"] == 3][-1]["keys_restored"]
    assert resumed["rebuilt"] > 0 and resumed["resident"] == resumed["caught_up"] == 0
    assert events(Path(f"{run}.jsonl")) == expected
