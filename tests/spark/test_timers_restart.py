"""Timers across the end of a process (docs/semantics-event-time.md): a run SIGKILLed
while keys with pending timers move between engines, then restarted, gives the
reference's events; a ``--follow`` run reports a key that went silent while it goes on,
fires nothing more on SIGTERM, and a later bounded run over its checkpoint fires what
was pending, once."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from support.beats import RULES, beats
from support.faults import (
    batch_total,
    cep_run,
    events,
    finish,
    kill_group,
    land,
    reading,
    start,
    wait_until,
)
from support.spark_runs import reference

from grammar.compile import compile_file

END_OF_INPUT = 1 << 36  # the seq of what fires when the input ends (one segment here)

SILENT = """CREATE SCHEMA Beat (device string, ts timestamp) TIMESTAMP ts;
@Name('silent')
SELECT a.device AS device FROM PATTERN [every a=Beat -> (timer:interval(5 min) and not b=Beat)]
PARTITION BY device;
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _beats(devices: list[str], minutes: range) -> list[str]:
    """A beat per device per minute (at 30 s past), as JSON lines in time order."""
    return [json.dumps({"device": d, "ts": m * 60_000 + 30_000}) + "\n"
            for m in minutes for d in devices]


def test_sigkill_with_timers_pending_on_moving_keys_then_restart(tmp_path):
    rule = _write(tmp_path / "timers.epl", RULES)
    source = _write(tmp_path / "beats.jsonl",
                    "".join(json.dumps(e) + "\n" for e in beats()))
    run = tmp_path / "run"
    command = cep_run(run, rule=rule, source=str(source))
    proc = start(command, tmp_path / "killed")
    wait_until(lambda: reading(run, 2), proc, "batch 2's input tasks at work")
    kill_group(proc)
    resumed = finish(command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    got = events(Path(f"{run}.jsonl"))
    assert got == reference(compile_file(rule), source)  # none lost, none twice
    assert any(r["rule"] == "silent" and r["seq"] < END_OF_INPUT for r in got)
    assert batch_total(run, "exported_keys") > 0, "keys must move"


def test_follow_reports_the_silent_key_live_and_its_end_waits_for_a_bounded_run(tmp_path):
    rule = _write(tmp_path / "silent.epl", SILENT)
    folder, run = tmp_path / "in", tmp_path / "run"
    folder.mkdir()
    command = [sys.executable, "-m", "cep.cli", "run", str(rule), "--input", str(folder),
               "--batch-size", "20", "--engines", "2", "--master", "local[2]", "--quiet",
               "--trigger-interval", "0.3", "--checkpoint", str(run),
               "--output", f"{run}.jsonl", "--metrics", f"{run}.metrics"]
    land(folder, "a.jsonl", _beats(["d1", "d2", "d3"], range(10)))
    proc = start([*command, "--follow"], tmp_path / "follow")
    wait_until(lambda: batch_total(run, "events_in") >= 30, proc, "the first file's beats")
    land(folder, "b.jsonl", _beats(["d1", "d3"], range(10, 30)))
    wait_until(lambda: batch_total(run, "events_in") >= 70, proc, "the second file's beats")
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=120)
    assert proc.returncode == 0, (tmp_path / "follow.err").read_text()
    live = events(Path(f"{run}.jsonl"))
    # d2's last beat at 00:09:30: reported at its deadline, 00:14:30, while the run went on
    # and SIGTERM is not the end of the input: d1 and d3, still pending, did not fire
    assert [r["device"] for r in live] == ["d2"]
    resumed = finish(command, tmp_path / "bounded")  # the same checkpoint, bounded
    assert resumed.returncode == 0, resumed.stderr
    got = events(Path(f"{run}.jsonl"))
    assert got == reference(compile_file(rule), folder)
    assert got[:1] == live
    assert sorted(r["device"] for r in got[1:]) == ["d1", "d3"]  # at the end, once each
    assert all(r["seq"] > live[0]["seq"] for r in got[1:])
