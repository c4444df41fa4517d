"""A node joins and then leaves a running job on the emulated cluster (issue 51, item 5):
the job scales out onto the node that joined (``cep scale``), scales back in, and the
node is decommissioned and stopped (``EmulatedCluster.leave``) while batches go on; the
executor that stays takes the departed executor's stateful partitions over from the
checkpoint's state store, and the moved keys' state comes through MongoDB.

Oracle: a key-grouping run at a fixed 2 engines over the same input on the same
cluster, row for row (KG at a fixed count equals the reference evaluator,
tests/spark/test_differential.py). The scaled run's output must be non-empty, every
scale change must have applied (and the two mid-run ones handed keys over), batches
must have run on both nodes and after the node left, and the master must list one
ALIVE worker fewer: so the equality cannot hold vacuously.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.spark_runs import ROOT

from cep.io.scale_changes import ScaleLog, scale
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.spark.cluster.cpu_quota import CGROUPS
from cep.spark.cluster.emulated import EmulatedCluster, on_nodes
from grammar.compile import compile_file

CPUS = 0.8  # two nodes of 0.8 cores on the 2-core machine, the driver beside them
INPUT = "tweets:n=24000,mode=default,rate=1000"
BATCH = 300  # 80 batches of about a second: room for the join, two changes and the leave
WAIT_S = 150.0


def engines_by_batch(metrics: Path) -> dict[int, int]:
    """Each committed batch's engine count, from the run's metrics file so far."""
    if not metrics.exists():
        return {}
    return {m["batch"]: len(m["rows_per_engine"])
            for m in map(json.loads, metrics.read_text().splitlines()) if m}


def until(what: str, ready: Callable[[], object], record: dict) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if time.monotonic() > deadline or record.get("ended"):
            raise TimeoutError(f"no {what}")
        time.sleep(0.1)


def alive(cluster: EmulatedCluster) -> int:
    return sum(w["state"] == "ALIVE" for w in cluster.cluster.master_state()["workers"])


def ran_at(metrics: Path, log: ScaleLog, request: int, engines: int) -> bool:
    """Whether scale request ``request`` applied and a batch at its count committed."""
    at = next((c["at_batch"] for c in log.applied() if c["request"] == request), None)
    return at is not None and any(b >= at and n == engines
                                  for b, n in engines_by_batch(metrics).items())


def drive(cluster: EmulatedCluster, workdir: list[Path], metrics: Path, record: dict) -> None:
    """What a user does to the running job: 1 engine at once; once batch 3 committed a
    node joins and the job goes to 2 engines; once a batch ran on 2, back to 1; once a
    batch ran at 1 again, the node that joined leaves."""
    try:
        until("run directory", lambda: workdir, record)
        scale(workdir[0], 1)
        until("batch 3", lambda: 3 in engines_by_batch(metrics), record)
        cluster.join(1)
        until("executor on the new node", lambda: cluster.cluster.master_state()
              ["activeapps"][0]["cores"] >= 2, record)
        log, out = ScaleLog(workdir[0]), scale(workdir[0], 2)
        until("a batch at 2 engines", lambda: ran_at(metrics, log, out, 2), record)
        back = scale(workdir[0], 1)
        until("a batch at 1 engine again", lambda: ran_at(metrics, log, back, 1), record)
        record["alive_before"] = alive(cluster)
        record["left"] = cluster.leave(1)
        record["gone"] = time.time()
        record["alive_after"] = alive(cluster)
    except BaseException as err:  # the test's thread: the assertion says what failed
        record["error"] = repr(err)


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CGROUPS / "cpu" / "cgroup.procs", os.W_OK),
                    reason="needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
def test_a_node_joins_then_leaves_mid_run_and_the_events_stay_key_grouping_s(tmp_path):
    module = compile_file(ROOT / "rules" / "fsd.epl")
    base = RunConfig((INPUT,), engines=2, batch_size=BATCH, progress=False,
                     output=Output(collect=True))
    with on_nodes(base, 1, CPUS) as (config, cluster):
        config = dataclasses.replace(config, spark_conf=cluster.room_for(2))
        metrics, workdir, record = tmp_path / "metrics.jsonl", [], {}
        driver = threading.Thread(target=drive, args=(cluster, workdir, metrics, record),
                                  daemon=True)
        driver.start()
        try:
            scaled = run(module, dataclasses.replace(
                config, strategy="dlb-l", checkpoint=str(tmp_path / "run"),
                metrics_file=str(metrics)), on_workdir=workdir.append)
        finally:
            record["ended"] = True
            driver.join(WAIT_S)
        assert "error" not in record, record.get("error")
        assert cluster.nodes == 1
        kg = run(module, dataclasses.replace(config, strategy="kg"))
    assert scaled.records and scaled.records == kg.records
    [left] = record["left"]
    print(f"\nleft: {left}; {len(scaled.records)} rows")
    # Spark's graceful path: listed DECOMMISSIONED, its executor exited on its own
    assert left["decommissioned"] and not left["forced"]
    assert (record["alive_before"], record["alive_after"]) == (2, 1)
    changes = ScaleLog(tmp_path / "run").applied()
    assert [(c["from"], c["to"]) for c in changes] == [(2, 1), (1, 2), (2, 1)]
    assert all(c["keys"] > 0 for c in changes[1:])
    commits = {m["batch"]: m["wall_time"] for m in scaled.metrics}
    assert any(wall > record["gone"] for wall in commits.values()), \
        "no batch ran after the node left"
