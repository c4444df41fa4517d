"""``cep scale RUN_DIR N`` on a running ``cep run --follow --checkpoint`` job (issue 51):
the request is written durably to the run directory, the job's Balancer applies it at
the first key map it writes after it, every key whose engine changes handed over with
its state, and the change applies at exactly one batch even when the job is killed
(``kill -9``) while the batch of the change runs and is started again with the very
same command (whose ``--engines`` does not undo the request).

Oracle: the reference evaluator over the job's input log (``log_reference``), which an
uninterrupted key-grouping run at a fixed count equals (tests/spark/test_differential.py,
test_rule_changes.py), event for event and in order. The handed-over keys and bytes are
read from the metrics and the scale log, so the equality cannot hold vacuously.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.changed_runs import log_reference
from support.faults import kill_group, land, reading, start, wait_until
from test_rescale_restart import RULES
from test_rule_changes import Job, _cep, _command, readings

from cep.io.scale_changes import ScaleLog


def test_cep_scale_3_to_5_while_the_job_runs_then_kill_9_in_the_change(tmp_path):
    job = Job(tmp_path, RULES, "--engines", "3", "--strategy", "dlb-l",
              "--threshold", "5", "--moves", "always")
    job.feed(120)
    _cep("scale", str(job.run), "5")
    log = ScaleLog(job.run)
    job.feed(40)  # its batch's decision writes the first map after the request
    wait_until(lambda: bool(log.applied()), job.proc, "the scale change decided")
    decided = log.applied()[0]
    at = decided["at_batch"]
    assert (decided["from"], decided["to"]) == (3, 5)
    land(job.folder, f"part-{job.fed:06d}.jsonl", readings(job.fed, 80))
    job.fed += 80
    wait_until(lambda: reading(job.run, at), job.proc, f"batch {at} running")
    kill_group(job.proc)  # in the batch whose engines are the new ones: not committed
    job.proc = start(_command(job.rule, job.folder, job.run, *job.extra), tmp_path / "again")
    job.feed(120)
    got = job.stop()
    assert got == log_reference(job.run, final=False)
    changes = log.applied()
    assert [(c["at_batch"], c["from"], c["to"]) for c in changes] == [(at, 3, 5)], \
        "the change applies once, at the batch decided before the kill"
    metrics = {m["batch"]: m for m in (json.loads(p.read_text()) for p in
                                       sorted((job.run / "metrics").glob("*.json")))}
    scaled = metrics[at - 1]["scaled"]
    print(f"\n3 -> 5 at batch {at}: {scaled['keys']} keys, {scaled['bytes']} bytes handed "
          f"over; Balancer keys_moved {metrics[at - 2]['keys_moved']}")
    assert scaled["keys"] > 0 and scaled["bytes"] > 0
    assert all(len(m["rows_per_engine"]) == (5 if b >= at else 3)
               for b, m in metrics.items())
    assert sum(m["rows_per_engine"][4] for b, m in metrics.items() if b >= at) > 0
    assert "3 -> 5 engines from batch" in Path(tmp_path / "job.err").read_text()

