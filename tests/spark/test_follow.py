"""``cep run --follow``: an unbounded run over a directory that keeps receiving files
and lines, stopped by SIGTERM after committing the batch in flight, resumed after more
files arrive, and killed with SIGKILL then resumed: always exactly the reference's
events over the input log the run built (the segments it read, in order), none lost,
none twice, and the same rows as the reference over the finished files in name order.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from support.faults import (
    batch_total,
    events,
    finish,
    in_flight,
    kill_group,
    land,
    start,
    wait_until,
)
from support.spark_runs import reference

from cep.engine.output import output_records
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import InputLog
from cep.io.inputs import load_segments
from cep.reference import run_reference
from grammar.compile import compile_file

ROOT = Path(__file__).parent.parent.parent
RULE = ROOT / "rules" / "sensor_average.epl"
LINES = (ROOT / "tests" / "data" / "readings.jsonl").read_text().splitlines(keepends=True)
OPTIONS = ("--batch-size", "15", "--engines", "2", "--master", "local[2]", "--quiet",
           "--trigger-interval", "0.3")


def _command(folder: Path, run: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "cep.cli", "run", str(RULE), "--input", str(folder),
            *OPTIONS, "--checkpoint", str(run), "--output", f"{run}.jsonl",
            "--metrics", f"{run}.metrics", *extra]


def _log_reference(run: Path) -> list[dict]:
    """The reference evaluator over the run's own input log."""
    module = compile_file(RULE)
    log = InputLog(run / "input", {}, follow=True)
    with DeadLetter(None) as dead:
        loaded = load_segments(module, [log.segments[o] for o in sorted(log.segments)], dead)
    return output_records(run_reference(module, loaded.tables))


def _without_seq(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seq"} for r in records]


def test_follow_picks_up_files_and_appends_stops_on_sigterm_and_resumes(tmp_path):
    folder, run = tmp_path / "in", tmp_path / "run"
    folder.mkdir()
    land(folder, "a.jsonl", LINES[:20])
    proc = start(_command(folder, run, "--follow"), tmp_path / "follow")
    wait_until(lambda: batch_total(run, "events_in") >= 20, proc, "the first file's events")
    assert Path(f"{run}.jsonl").read_text(), "events appear while the run goes on"
    with open(folder / "a.jsonl", "a") as fh:  # an append, its last line half written
        fh.write("".join(LINES[20:30]) + LINES[30][:15])
        fh.flush()
        time.sleep(1.5)  # several triggers see the half line
        fh.write(LINES[30][15:])
    land(folder, "b.jsonl", LINES[31:45])
    wait_until(lambda: batch_total(run, "events_in") >= 45, proc,
               "the appended lines and the new file")
    time.sleep(1.0)
    assert batch_total(run, "events_in") == 45, \
        "every line once, the half-written one once whole"
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=120)
    assert proc.returncode == 0, Path(f"{tmp_path}/follow.err").read_text()
    assert not in_flight(run, len(list((run / "metrics").glob("*.json"))))
    land(folder, "c.jsonl", LINES[45:])  # arrives while cep is stopped
    resumed = finish(_command(folder, run), tmp_path / "resumed")  # bounded: ends
    assert resumed.returncode == 0, resumed.stderr
    got = events(Path(f"{run}.jsonl"))
    assert got == _log_reference(run)
    # the log kept the arrival order, which here is the files' name order
    assert _without_seq(got) == _without_seq(reference(compile_file(RULE), folder))


@pytest.mark.parametrize("kill_at_batch", [2])
def test_sigkill_during_follow_then_restart_loses_nothing_and_doubles_nothing(
        tmp_path, kill_at_batch):
    folder, run = tmp_path / "in", tmp_path / "run"
    folder.mkdir()
    land(folder, "a.jsonl", LINES[:45])  # three batches of 15
    proc = start(_command(folder, run, "--follow"), tmp_path / "killed")
    wait_until(lambda: in_flight(run, kill_at_batch), proc, f"batch {kill_at_batch}")
    kill_group(proc)
    land(folder, "b.jsonl", LINES[45:])
    proc = start(_command(folder, run, "--follow"), tmp_path / "resumed")
    wait_until(lambda: batch_total(run, "events_in") >= len(LINES), proc, "every line")
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=120)
    assert proc.returncode == 0
    got = events(Path(f"{run}.jsonl"))
    assert got == _log_reference(run)
    assert _without_seq(got) == _without_seq(reference(compile_file(RULE), folder))
