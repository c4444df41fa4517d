"""Rescale on restart (issue 51): a ``cep run --follow --checkpoint`` job stopped and
started again with another ``--engines`` moves every key whose owner changes, with its
state, and goes on. Oracle: the reference evaluator over the job's input log
(``log_reference``), which an uninterrupted key-grouping run at a fixed count equals
(tests/spark/test_rule_changes.py, test_differential.py), event for event and in order.

3 engines, then 5, then 2, under key grouping (which routes by key maps from the first
change on) and under DLB-L (whose overrides survive where their engine does). Windows
full, patterns with timers pending and MATCH_RECOGNIZE state open on the moved keys
(the rules of tests/spark/test_rule_changes.py's START plus a MATCH_RECOGNIZE rule);
the moves are read from the metrics, so the equality cannot hold vacuously."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from support.changed_runs import log_reference
from support.faults import batch_total, events, land, start, wait_until
from test_rule_changes import OPTIONS, START, readings

RULES = START + """
@Name('dip')
SELECT * FROM Reading MATCH_RECOGNIZE (PARTITION BY sensor MEASURES A.temp AS first_t,
  count(B.temp) AS falls PATTERN (A B+ C) WITHIN 5 min
  DEFINE B AS B.temp < prev(B.temp), C AS C.temp > A.temp);
"""


class Phases:
    """One run directory fed a file per phase, each phase a job with its own
    ``--engines``, stopped with SIGTERM as a user stops a job."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        self.tmp, self.extra = tmp, extra
        self.rule = tmp / "rules.epl"
        self.rule.write_text(RULES)
        self.folder, self.run = tmp / "in", tmp / "run"
        self.folder.mkdir()
        self.fed = 0

    def phase(self, engines: int, n: int) -> None:
        command = [sys.executable, "-m", "cep.cli", "run", str(self.rule), "--input",
                   str(self.folder), "--follow", *OPTIONS, "--checkpoint", str(self.run),
                   "--output", f"{self.run}.jsonl", "--engines", str(engines), *self.extra]
        proc = start(command, self.tmp / f"job-{engines}-{self.fed}")
        land(self.folder, f"part-{self.fed:06d}.jsonl", readings(self.fed, n))
        self.fed += n
        wait_until(lambda: batch_total(self.run, "events_in") >= self.fed, proc,
                   f"{self.fed} events read")
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=300)
        assert proc.returncode == 0, (self.tmp / f"job-{engines}-{self.fed - n}.err").read_text()

    def metrics(self) -> list[dict]:
        return [json.loads(p.read_text()) for p in sorted((self.run / "metrics").glob("*.json"))]


@pytest.mark.parametrize("strategy", ["kg", "dlb-l"])
def test_a_restart_with_other_engines_moves_keys_with_their_state(tmp_path, strategy):
    job = Phases(tmp_path, "--strategy", strategy, "--threshold", "5", "--moves", "always")
    job.phase(3, 200)
    job.phase(5, 200)
    job.phase(2, 200)
    got = events(Path(f"{job.run}.jsonl"))
    expected = log_reference(job.run, final=False)
    assert {"overheating", "silent", "per_window", "dip"} <= {r["rule"] for r in expected}
    assert got == expected
    metrics = job.metrics()
    changes = [m for m in metrics if "rescaled" in m]
    print(f"\n{strategy}: " + "; ".join(
        f"{c['rescaled']['from']}->{c['rescaled']['to']} at batch {c['rescaled']['at_batch']}: "
        f"{c['keys_moved']} keys" for c in changes))
    assert [(c["rescaled"]["from"], c["rescaled"]["to"]) for c in changes] == [(3, 5), (5, 2)]
    at = {c["rescaled"]["at_batch"] - 1 for c in changes}  # the batches that export
    moved = [(m["batch"], m["exported_keys"], m["exported_bytes"]) for m in metrics
             if m["batch"] in at]
    print(f"{strategy}: keys and bytes exported at the changes: {moved}")
    assert all(keys > 0 and size > 0 for _, keys, size in moved)
