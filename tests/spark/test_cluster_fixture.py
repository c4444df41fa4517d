"""The standalone cluster that cluster-path tests run on: command lines, then the real thing.

The slow tests prove what ``local[*]`` cannot: Python tasks and Python stateful streaming
run in executor processes on both workers. That ``stop`` leaves no process behind is
asserted by the ``spark_cluster`` fixture's teardown, after these tests.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyspark
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from support.cluster import cluster_processes, cluster_spark, spark_cluster

from cep.spark.cluster.standalone import MASTER_CLASS, WORKER_CLASS, LocalStandaloneCluster

__all__ = ["cluster_spark", "spark_cluster"]  # fixtures, imported for pytest to find


def test_command_lines_use_the_pyspark_install(tmp_path: Path) -> None:
    cluster = LocalStandaloneCluster()
    spark_class = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
    assert cluster.spark_class == spark_class
    assert os.access(spark_class, os.X_OK)
    assert cluster.master_command(7077, 8080) == [
        str(spark_class), MASTER_CLASS,
        "--host", "127.0.0.1", "--port", "7077", "--webui-port", "8080"]
    assert cluster.worker_command("spark://127.0.0.1:7077", 1, "1g", tmp_path) == [
        str(spark_class), WORKER_CLASS, "spark://127.0.0.1:7077",
        "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
        "--cores", "1", "--memory", "1g", "--work-dir", str(tmp_path)]
    env = cluster.environment(tmp_path)
    assert env["SPARK_HOME"] == str(spark_class.parent.parent)
    assert env["SPARK_CONF_DIR"] == str(tmp_path)
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "-Dspark.port.maxRetries=0" in env["SPARK_MASTER_OPTS"]
    # workers take SIGPWR as "decommission yourself": how nodes leave (remove_workers)
    assert env["SPARK_WORKER_OPTS"] == "-Dspark.decommission.enabled=true"
    assert not cluster.started
    with pytest.raises(RuntimeError, match="not started"):
        _ = cluster.master_url
    with pytest.raises(RuntimeError, match="not started"):
        cluster.remove_workers(1)


def test_a_process_group_s_members_are_read_from_proc() -> None:
    """``remove_workers`` waits until a decommissioned worker's group holds the worker
    alone (its executors exited): the group of this process holds this process."""
    from cep.spark.cluster.standalone import _group_members

    assert os.getpid() in _group_members(os.getpgrp())
    assert _group_members(2**22 + 1) == set()  # above any pid: nobody


@pytest.mark.slow
def test_python_tasks_run_on_both_workers(spark_cluster: LocalStandaloneCluster,
                                          cluster_spark: SparkSession) -> None:
    # An executor's working directory is <worker work dir>/<app id>/<executor id>.
    cwds = (cluster_spark.sparkContext.parallelize(range(16), 16)
            .map(lambda _: os.getcwd()).distinct().collect())
    workers = {Path(cwd).relative_to(spark_cluster.root).parts[0] for cwd in cwds}
    assert workers == {"work-0", "work-1"}
    state = spark_cluster.master_state()
    assert [(app["name"], app["cores"]) for app in state["activeapps"]] == [
        ("cep-cluster-test", 2)]
    assert [worker["coresused"] for worker in state["workers"]] == [1, 1]


@pytest.mark.slow
def test_leak_check_sees_every_cluster_process(spark_cluster: LocalStandaloneCluster,
                                               cluster_spark: SparkSession) -> None:
    # The fixture's teardown asserts this set is empty after stop; here it must not be.
    assert cluster_spark.sparkContext.parallelize(range(4), 4).sum() == 6
    running = cluster_processes(spark_cluster.pids,
                                [spark_cluster.master_url, str(spark_cluster.root)])
    command_lines = " ".join(running.values())
    for main_class in (MASTER_CLASS, WORKER_CLASS, "CoarseGrainedExecutorBackend",
                       f"{sys.executable} -m pyspark.daemon"):
        assert main_class in command_lines


@pytest.mark.slow
def test_python_stateful_streaming_runs_on_the_cluster(
        spark_cluster: LocalStandaloneCluster, cluster_spark: SparkSession,
        tmp_path: Path) -> None:
    # Nested, so cloudpickle ships it by value: executors cannot import test modules.
    def running_totals(key: tuple[str], batches: Iterator[pd.DataFrame],
                        state: GroupState) -> Iterator[pd.DataFrame]:
        """Per-key running count and sum, carried across micro-batches in Spark state."""
        count, total = state.get if state.exists else (0, 0)
        for batch in batches:
            count, total = count + len(batch), total + int(batch["v"].sum())
        state.update((count, total))
        yield pd.DataFrame({"k": [key[0]], "count": [count], "total": [total],
                            "cwd": [os.getcwd()]})

    source = tmp_path / "in"
    source.mkdir()
    mtime = 1_700_000_000
    for name, rows in {"1.json": [("a", 1), ("b", 10), ("a", 2)],
                       "2.json": [("a", 4), ("b", 20)]}.items():
        path = source / name
        path.write_text("".join(json.dumps({"k": k, "v": v}) + "\n" for k, v in rows))
        os.utime(path, (mtime, mtime))  # the file source reads oldest first
        mtime += 10
    seen: list[tuple[int, dict]] = []
    query = (
        cluster_spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1)
        .json(str(source))
        .groupBy("k")
        .applyInPandasWithState(running_totals, "k string, count long, total long, cwd string",
                                "count long, total long", "update", GroupStateTimeout.NoTimeout)
        .writeStream.outputMode("update")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .foreachBatch(lambda df, batch_id: seen.extend(
            (batch_id, row.asDict()) for row in df.collect()))
        .trigger(availableNow=True).start())
    assert query.awaitTermination(90), "the availableNow query did not finish in 90 s"
    by_batch = sorted((batch_id, row["k"], row["count"], row["total"])
                      for batch_id, row in seen)
    assert by_batch == [(0, "a", 2, 3), (0, "b", 1, 10), (1, "a", 3, 7), (1, "b", 2, 30)]
    assert all(Path(row["cwd"]).is_relative_to(spark_cluster.root) for _, row in seen)


def test_a_query_stopped_by_a_lost_executor_is_started_again():
    """``runtime.lost_executor``: Spark's abort when a batch lost an executor's shuffle
    output (a node left or died) is what the runner restarts from the checkpoint; any
    other failure is the run's error. Oracle: Spark's own message (DAGScheduler)."""
    from cep.spark.runtime import lost_executor

    spark = ("Job aborted due to stage failure: A shuffle map stage with indeterminate "
             "output was failed and retried. However, Spark cannot rollback the "
             "ResultStage 57 to re-process the input data, and has to fail this job.")
    assert lost_executor(RuntimeError(spark))
    assert not lost_executor(RuntimeError("KeyError: 'origin'"))


def test_the_query_starts_again_after_a_lost_executor_and_only_then(capsys):
    """``runtime.run_restarting`` with queries that fail as told. Oracle: the scripts
    of failures fed in (which query fails how, and what must come of it)."""
    import pytest

    from cep.spark.runtime import run_restarting

    lost = RuntimeError("A shuffle map stage with indeterminate output was failed")

    def script(*failures):
        started = []

        def start():
            started.append(len(started))
            return len(started) - 1

        def wait(query):
            if failures[query] is not None:
                raise failures[query]
        return started, start, wait

    started, start, wait = script(lost, lost, None)
    assert run_restarting(start, wait, lambda: 7) == 2 and started == [0, 1, 2]
    assert capsys.readouterr().err.count("batch 7 ran") == 2
    started, start, wait = script(lost, ValueError("bad"), None)
    with pytest.raises(ValueError):
        run_restarting(start, wait, lambda: 7)
    assert started == [0, 1]
    started, start, wait = script(lost, lost, None)
    with pytest.raises(RuntimeError):
        run_restarting(start, wait, lambda: 7, restarts=1)
    assert started == [0, 1]
