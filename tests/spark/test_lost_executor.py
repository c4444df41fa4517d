"""Executors killed with SIGKILL while a job runs on a standalone cluster: Spark runs the
lost tasks again on the executors that remain or replace them, each engine's state comes
back from the checkpoint's state store, and the moved keys' state from MongoDB, so the
events are exactly key grouping's. Where Spark cannot run the lost part again (every
executor killed while the engines' stage runs, some of its tasks done), it stops the
query, and cep starts it again from its checkpoint (``runtime.run_restarting``).

Oracle: a key-grouping run at the same fixed engine count on ``local[2]``, row for row
(KG at a fixed count equals the reference evaluator, tests/spark/test_differential.py).
The run under test balances with DLB-L (``--moves always``), so keys move between the
engines through MongoDB while executors die. So that the equality cannot hold
vacuously, the output must be non-empty, keys must have moved, every planned kill must
have hit a live executor of this cluster while batches were still to come, and batches
must have committed after the last kill; in the stopped-query case, the restart's line
must have been printed.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from support.cluster import cluster_spark, running_processes, spark_cluster  # noqa: F401
from support.spark_runs import ROOT, run_and_read, run_beside, wait_for_commit

from cep.servers.mongo import EmbeddedMongo
from cep.spark.run_dir import next_batch
from grammar.compile import compile_file

pytestmark = pytest.mark.slow

INPUT = "tweets:n=12000,mode=default"
BATCH = 800  # 15 batches of a second or two on two one-core workers
# (committed batch, seconds after its commit): the kills fall at different points of
# the batch that follows (planning, the input stage, the engines' stage, the handoff)
KILLS = ((2, 0.3), (5, 0.8), (8, 1.3), (11, 1.8))
WAIT_S = 120.0


def executors_of(cluster_root: Path) -> list[int]:
    """The executor JVMs of this cluster (they run in its work dirs), oldest first."""
    return sorted(pid for pid, _, line in running_processes()
                  if "CoarseGrainedExecutorBackend" in line and str(cluster_root) in line)


def kill_executors(cluster_root: Path, workdir: Path, record: dict) -> None:
    """After each planned batch commits, wait the planned delay and SIGKILL the newest
    executor (the replacement of the last one killed, from the second kill on)."""
    for batch, delay in KILLS:
        wait_for_commit(workdir, batch, record, WAIT_S)
        time.sleep(delay)
        pids = executors_of(cluster_root)
        if not pids:
            raise AssertionError(f"no executor to kill after batch {batch}")
        os.kill(pids[-1], signal.SIGKILL)
        record.setdefault("kills", []).append((pids[-1], next_batch(workdir) - 1,
                                               time.time()))


def test_executors_killed_mid_run_leave_the_events_key_grouping_s(
        spark_cluster, cluster_spark, tmp_path):  # noqa: F811
    module = compile_file(ROOT / "rules" / "fsd.epl")
    workdir, record = tmp_path / "run", {}
    with EmbeddedMongo() as mongo:
        balanced, rows = run_beside(
            lambda: kill_executors(spark_cluster.root, workdir, record), record, module,
            INPUT, engines=3, batch_size=BATCH, master=spark_cluster.master_url,
            strategy="dlb-l", threshold=5.0, moves="always", mongo_uri=mongo.uri,
            checkpoint=str(workdir))
    _, expected = run_and_read(module, INPUT, engines=3, batch_size=BATCH, strategy="kg")
    assert rows and rows == expected
    kills = record["kills"]
    assert len(kills) == len(KILLS) and len({pid for pid, _, _ in kills}) == len(KILLS)
    assert sum(m["exported_keys"] for m in balanced.metrics) > 0
    last_kill = kills[-1][2]
    assert any(m["wall_time"] > last_kill for m in balanced.metrics), \
        "no batch committed after the last kill"
    print(f"\nkills (pid, after batch): {[(pid, b) for pid, b, _ in kills]}; "
          f"{len(rows)} rows; {sum(m['exported_keys'] for m in balanced.metrics)} keys moved")


def kill_all_mid_engines_stage(spark, cluster_root: Path, workdir: Path, record: dict,
                               engines: int) -> None:
    """Once batch 3 committed, wait until the next batch's engines' stage (a task per
    engine) has finished a task and runs another, then SIGKILL every executor: the map
    output the running task needs is gone, and Spark cannot run the input stage again
    under the finished tasks' results."""
    wait_for_commit(workdir, 3, record, WAIT_S)
    tracker, deadline = spark.sparkContext.statusTracker(), time.monotonic() + WAIT_S
    while not any((info := tracker.getStageInfo(stage)) is not None
                  and info.numTasks == engines and info.numCompletedTasks >= 1
                  and info.numActiveTasks >= 1 for stage in tracker.getActiveStageIds()):
        if record.get("ended") or time.monotonic() > deadline:
            raise TimeoutError("no engines' stage half done after batch 3")
        time.sleep(0.005)
    pids = executors_of(cluster_root)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    record["killed"] = (pids, next_batch(workdir) - 1, time.time())


def test_a_query_stopped_by_lost_executors_starts_again_with_key_grouping_s_events(
        spark_cluster, cluster_spark, tmp_path, capfd):  # noqa: F811
    module = compile_file(ROOT / "rules" / "fsd.epl")
    workdir, record = tmp_path / "run", {}
    with EmbeddedMongo() as mongo:
        balanced, rows = run_beside(
            lambda: kill_all_mid_engines_stage(cluster_spark, spark_cluster.root, workdir,
                                               record, 3), record, module,
            INPUT, engines=3, batch_size=BATCH, master=spark_cluster.master_url,
            strategy="dlb-l", threshold=5.0, moves="always", mongo_uri=mongo.uri,
            checkpoint=str(workdir))
    restarts = [line for line in capfd.readouterr().err.splitlines()
                if "the query starts again from its checkpoint" in line]
    _, expected = run_and_read(module, INPUT, engines=3, batch_size=BATCH, strategy="kg")
    assert rows and rows == expected
    pids, after_batch, when = record["killed"]
    assert len(pids) == 2, f"expected an executor on each worker, killed {pids}"
    assert len(restarts) == 1, restarts
    assert sum(m["exported_keys"] for m in balanced.metrics) > 0
    assert any(m["wall_time"] > when for m in balanced.metrics), \
        "no batch committed after the kill"
    print(f"\nkilled {pids} after batch {after_batch}: {restarts[0]}; {len(rows)} rows")
