"""A three-stage INSERT INTO chain run (``cep run … --checkpoint DIR``, dlb-h moving stage
0's keys) SIGKILLed twice, with its whole process group, and run again with the same
command gives exactly the reference evaluator's events: once in the middle of the input
(chain rows of the batch before wait on disk for the killed batch), once in a batch that
reads no input and only drains the later stages.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.faults import (
    cep_run,
    committed,
    events,
    finish,
    kill_group,
    metrics,
    reading,
    start,
    wait_until,
)
from support.stock_ticks import RULES, TICKS, write_ticks

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from cep.spark.chains.stages import drained
from grammar.compile import compile_file


def _draining(run: Path) -> int | None:
    """The batch in flight if it reads no input (it only drains later stages)."""
    offsets = run / "checkpoint" / "offsets"
    planned = max((int(p.name) for p in offsets.glob("*") if p.name.isdigit()), default=-1)
    if planned < 0 or committed(run, planned):
        return None
    try:
        return planned if drained(offsets / str(planned), 1) else None
    except (OSError, ValueError, IndexError):  # being written
        return None


@pytest.fixture(scope="module")
def killed_twice(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("chain-restart")
    rule = tmp / "chain.epl"
    rule.write_text(RULES["three_stages"])
    source = write_ticks(tmp / "ticks.jsonl", TICKS)
    run = tmp / "run"
    command = cep_run(run, rule=rule, source=str(source))
    proc = start(command, tmp / "killed-1")
    wait_until(lambda: reading(run, 3), proc, "batch 3's input tasks at work")
    kill_group(proc)
    first = committed(run, 3)
    proc = start(command, tmp / "killed-2")
    wait_until(lambda: _draining(run) is not None, proc, "a draining batch in flight")
    drain_batch = _draining(run)
    kill_group(proc)
    assert drain_batch is not None
    second = committed(run, drain_batch)
    resumed = finish(command, tmp / "resumed")
    module = compile_file(rule)
    expected = output_records(run_reference(module, load_inputs(module, [str(source)],
                                                                None).tables))
    return {"run": run, "resumed": resumed, "expected": expected,
            "committed_at_kills": (first, second), "drain_batch": drain_batch}


def test_sigkills_mid_input_and_while_draining_give_the_reference_events(killed_twice):
    run, resumed = killed_twice["run"], killed_twice["resumed"]
    assert killed_twice["committed_at_kills"] == (False, False), "a kill came too late"
    assert resumed.returncode == 0, resumed.stderr
    expected = killed_twice["expected"]
    assert {r["rule"] for r in expected} == {"drop", "hot", "heating"}
    assert events(Path(f"{run}.jsonl")) == expected  # none lost, none twice, same order


def test_every_batch_once_and_the_chain_files_cleaned_up(killed_twice):
    run = killed_twice["run"]
    rows = metrics(Path(f"{run}.metrics"))
    assert [m["batch"] for m in rows] == list(range(len(rows)))
    assert sum(m["events_in"] for m in rows) == TICKS
    assert rows[-1]["batch"] >= killed_twice["drain_batch"]
    assert [m["events_in"] for m in rows[-2:]] == [0, 0]  # two later stages drained
    assert sum(m["exported_keys"] for m in rows) > 0, "dlb-h must move stage 0's keys"
    assert sum(m["imported_keys"] for m in rows) == sum(m["exported_keys"] for m in rows[:-1])
    left = sorted(p.name for p in (run / "chain").glob("batch-*"))
    assert len(left) <= 2, left  # only what the last batches' readers had not committed
