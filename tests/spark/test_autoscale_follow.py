"""``cep run --follow --engines auto:1-4`` (issue 51): the policy (``splitter.autoscale``)
scales a running job out when it falls behind, through the scale requests ``cep scale``
writes, every moved key handed over with its state.

Oracle: the reference evaluator over the job's input log (``log_reference``), event for
event and in order. The job is made engine-bound by ``--slow-engine`` on every engine
(the engine task sleeps in proportion to its work, so the test costs no CPU) and a
narrow ``--autoscale-band`` (Spark's fixed cost per batch on 2 shared cores would
otherwise dominate a small test's batches); files land faster than it reads them, so
its input lag grows. The change must apply (a count above 1, keys handed over), else
the equality would prove nothing about scaling."""

from __future__ import annotations

import json

from support.changed_runs import log_reference
from support.faults import land, wait_until
from test_rescale_restart import RULES
from test_rule_changes import Job, readings

from cep.io.scale_changes import ScaleLog

SLOW = [arg for e in range(4) for arg in ("--slow-engine", f"{e}:5")]


def test_engines_auto_scales_a_job_that_falls_behind_and_its_events_equal_the_reference(
        tmp_path):
    job = Job(tmp_path, RULES, "--engines", "auto:1-4", "--autoscale-band", "0.01:0.05",
              "--strategy", "dlb-l", *SLOW)
    log = ScaleLog(job.run)
    job.feed(40)  # the job runs: from now on 60 events land per batch of 40 it reads
    committed = 1
    while not log.applied() and committed < 40:
        land(job.folder, f"part-{job.fed:06d}.jsonl", readings(job.fed, 60))
        job.fed += 60
        wait_until(lambda n=committed: (job.run / "metrics" / f"batch-{n:07d}.json")
                   .exists(), job.proc, f"batch {committed}")
        committed += 1
    wait_until(lambda: bool(log.applied()), job.proc, "a scale change decided by the policy")
    change = log.applied()[0]
    wait_until(lambda: (job.run / "metrics" / f"batch-{change['at_batch']:07d}.json")
               .exists(), job.proc, "the batch of the change")
    job.feed(40)
    got = job.stop()
    assert got == log_reference(job.run, final=False)
    requests = log.requests()
    assert requests and all(r.by == "auto" for r in requests)
    raw = json.loads((job.run / "scale" / "request-000001.json").read_text())
    assert "pi = ceil(2w/(u+v))" in raw["reason"]
    assert change["from"] == 1 and change["to"] > 1
    metrics = {m["batch"]: m for m in (json.loads(p.read_text()) for p in
                                       sorted((job.run / "metrics").glob("*.json")))}
    decided = [b for b, m in metrics.items() if m["autoscale"]["action"] == "out"]
    applied = [(c["at_batch"], c["from"], c["to"], c["keys"]) for c in log.applied()]
    print(f"\nauto: {[(r.number, r.engines) for r in requests]}, decided after batches "
          f"{decided}, applied {applied}; {job.fed} events in {len(metrics)} batches")
    assert decided and metrics[decided[0]]["autoscale"]["target"] == change["to"]
    assert all("reason" in m["autoscale"] for m in metrics.values())
    assert len(metrics[change["at_batch"]]["rows_per_engine"]) == change["to"]
    assert metrics[change["at_batch"] - 1]["scaled"]["keys"] > 0
    said = (tmp_path / "job.err").read_text()
    assert "--engines auto asks for" in said and "1 -> " in said
