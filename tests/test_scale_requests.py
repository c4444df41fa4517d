"""Scale requests without Spark (``cep.io.scale_changes``, ``cep scale``): what is
refused, how requests are numbered, what the driver's hook records and what the run's
summary says. The running job's side is tests/spark/test_scale_cli.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cep.cli.summary import balance_text
from cep.io.scale_changes import ScaleError, ScaleHook, ScaleLog, scale


def _run_dir(tmp_path: Path, **manifest: object) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "x", "engines": 3, **manifest}))
    return run


@pytest.mark.parametrize(("manifest", "engines", "why"), [
    ({"strategy": "pkg"}, 4, "PKG"),
    ({"strategy": "dlb-l", "chained": True}, 4, "INSERT INTO"),
    ({"strategy": "kg"}, 4, "--engines 4"),
    ({"strategy": "dlb-l", "maps": True}, 0, "1..256"),
    ({"strategy": "dlb-l", "maps": True}, 257, "1..256"),
])
def test_refused_where_the_job_cannot_change_its_count(tmp_path, manifest, engines, why):
    run = _run_dir(tmp_path, **manifest)
    with pytest.raises(ScaleError, match=why.replace(".", r"\.")):
        scale(run, engines)
    assert ScaleLog(run).requests() == []


def test_not_a_run_directory(tmp_path):
    with pytest.raises(ScaleError, match="not the run directory"):
        scale(tmp_path, 3)


def test_requests_are_numbered_and_the_newest_counts(tmp_path):
    run = _run_dir(tmp_path, strategy="kg", maps=True)
    assert scale(run, 5) == 1
    assert ScaleLog(run).request(2, "restart") == 2
    log = ScaleLog(run)
    assert [(r.number, r.engines, r.by) for r in log.requests()] == [
        (1, 5, "cep scale"), (2, 2, "restart")]
    latest = log.latest()
    assert latest is not None and latest.engines == 2


def test_the_command_writes_and_lists(tmp_path):
    run = _run_dir(tmp_path, strategy="dlb-l", maps=True)
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, "-m", "cep.cli", "scale", str(run), "5"],
                          capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "scale request 1 written: 5 engines" in done.stdout
    refused = subprocess.run([sys.executable, "-m", "cep.cli", "scale", str(run), "0"],
                             capture_output=True, text=True, cwd=root)
    assert refused.returncode == 1 and "refused" in refused.stderr
    listed = subprocess.run([sys.executable, "-m", "cep.cli", "scale", str(run)],
                            capture_output=True, text=True, cwd=root)
    assert listed.stdout.splitlines() == ["request 1: 5 engines (cep scale)"]


def test_the_hook_records_the_change_and_what_the_batch_before_handed_over(tmp_path):
    run = _run_dir(tmp_path, strategy="dlb-l", maps=True)
    scale(run, 5)
    told: list[int] = []
    hook = ScaleHook(run, told.append)
    decided = {"rescaled": {"at_batch": 9, "from": 3, "to": 5, "hash": "mod"}}
    hook(7, [], decided)
    assert told == [5]
    exporting = {"exported_keys": 14, "exported_bytes": 41203}
    hook(8, [], exporting)
    assert exporting["scaled"] == {"at_batch": 9, "from": 3, "to": 5, "hash": "mod",
                                   "request": 1, "decided_after": 7, "keys": 14,
                                   "bytes": 41203}
    assert ScaleLog(run).applied() == [exporting["scaled"]]
    again = ScaleHook(run, told.append)  # a restart replaying batch 8 records it again
    replayed = {"exported_keys": 14, "exported_bytes": 41203}
    again(8, [], replayed)
    assert ScaleLog(run).applied() == [replayed["scaled"]]
    metrics = [{"batch": b, "rows_per_engine": [1, 1, 1], "events_in": 3, "rstd": 0.0}
               for b in range(7)] + [{"batch": 7, "rows_per_engine": [1, 1, 1], "rstd": 0.0,
                                      "events_in": 3, **decided},
                                     {"batch": 8, "rows_per_engine": [1, 1, 1], "rstd": 0.0,
                                      "events_in": 3, **exporting}]
    text = balance_text("dlb-l", metrics)
    assert text is not None and "3 -> 5 engines from batch 9: 14 keys, 41,203 bytes" in text
