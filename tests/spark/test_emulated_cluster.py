"""The emulated cluster (``cep.spark.cluster.emulated``): N one-slot nodes on this
machine, each in a cgroup with a CPU quota. cep's runs on it give the reference events
(key grouping, and DLB-H moving keys through MongoDB); every executor, its
``pyspark.daemon`` and its Python workers are in their node's cgroup; a task that spins
gets no more than its node's share; and stopping it leaves no process, cgroup or
temporary directory behind. Where quotas cannot be set, ``cep bench --nodes`` says so
in one line and starts nothing."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.children import default_signals
from support.cluster import LEAK_GRACE_SECONDS, cluster_processes
from support.spark_runs import ROOT, reference

from cep.cli import main
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.spark.cluster import cpu_quota
from cep.spark.cluster.cpu_quota import CGROUPS
from cep.spark.cluster.emulated import on_nodes
from grammar.compile import compile_file

NODES, CPUS, SPIN_S = 3, 0.5, 2.0


def test_bench_on_nodes_says_in_one_line_where_quotas_cannot_be_set(tmp_path, monkeypatch,
                                                                     capsys):
    monkeypatch.setattr(cpu_quota, "CGROUPS", tmp_path)  # no controller mounted there
    args = ["bench", str(ROOT / "rules" / "fsd.epl"), "--input", "tweets:n=10",
            "--nodes", "2"]
    clusters = set(Path(tempfile.gettempdir()).glob("cep-spark-cluster-*"))
    assert main(args) == 1
    assert capsys.readouterr().err == (f"cep: no cgroup v1 cpu controller at "
                                       f"{tmp_path / 'cpu'}: CPU quotas for the nodes need "
                                       "it mounted there\n")
    assert set(Path(tempfile.gettempdir()).glob("cep-spark-cluster-*")) == clusters
    assert main(["bench", *args[1:4], "--node-cpus", "0.5"]) == 1
    assert capsys.readouterr().err == "cep: --node-cpus sizes the nodes of --nodes N: give both\n"


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CGROUPS / "cpu" / "cgroup.procs", os.W_OK),
                    reason="needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
def test_runs_on_the_emulated_cluster_give_the_reference_events_within_their_quota():
    module = compile_file(ROOT / "rules" / "fsd.epl")
    path = ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"
    expected = reference(module, path)
    base = RunConfig({"Tweet": str(path)}, engines=NODES, batch_size=40, threshold=5.0,
                     output=Output(collect=True), progress=False)

    def where_and_how_busy(_task: int) -> tuple[list[str], float, float]:
        """In a task: the cpu cgroup and command of this Python worker, its parent (the
        executor's pyspark.daemon) and grandparent (the executor's JVM); then the CPU
        seconds of spinning SPIN_S wall seconds."""
        chain, pid = [], os.getpid()
        for _ in range(3):
            cgroup = next(line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                          if ":cpu:" in line)
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            chain.append(f"{cgroup.rsplit(':', 1)[1]} {command}")
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        started, cpu = time.monotonic(), time.process_time()
        while time.monotonic() - started < SPIN_S:
            pass
        return chain, time.process_time() - cpu, time.monotonic() - started

    with on_nodes(base, NODES, CPUS) as (config, cluster):
        standalone = cluster.cluster
        pids, root = standalone.pids, standalone.root
        markers = [standalone.master_url, str(root)]
        groups = [group.path for group in standalone.node_groups]
        assert [g.cpus for g in standalone.node_groups] == [CPUS] * NODES
        kg = run(module, config)
        moved = run(module, dataclasses.replace(config, strategy="dlb-h", moves="always"))
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        assert context is not None and context.master == standalone.master_url
        tasks = context.parallelize(range(NODES), NODES).map(where_and_how_busy).collect()
    assert kg.records == expected
    assert moved.records == expected
    assert sum(m["exported_keys"] for m in moved.metrics) > 0
    nodes = {f"/{group.parent.name}/{group.name}" for group in groups}
    seen = set()
    for chain, cpu_s, wall_s in tasks:
        worker, daemon, executor = (line.split(" ", 1) for line in chain)
        assert "pyspark.daemon" in daemon[1] and "CoarseGrainedExecutorBackend" in executor[1]
        assert worker[0] == daemon[0] == executor[0] and worker[0] in nodes
        seen.add(worker[0])
        assert 0 < cpu_s <= CPUS * wall_s + 0.1  # a period's slack at each end
    assert seen == nodes  # a task on every node
    # stopped: no cgroup, no temporary directory, no process of the cluster's
    assert not any(group.exists() for group in groups) and not groups[0].parent.exists()
    assert not root.exists()
    deadline = time.monotonic() + LEAK_GRACE_SECONDS
    while (left := cluster_processes(pids, markers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CGROUPS / "cpu" / "cgroup.procs", os.W_OK),
                    reason="needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
def test_a_sigterm_stops_the_cluster_and_removes_its_cgroups():
    """``timeout`` and ``kill`` send SIGTERM, which by default ends a process without
    its clean-up: the nodes' cgroups stayed behind. The cluster now exits through it."""
    child = subprocess.Popen(default_signals(
        [sys.executable, "-c",
         "import time\n"
         "from cep.spark.cluster.standalone import LocalStandaloneCluster\n"
         "LocalStandaloneCluster().start(workers=2, cpus_per_worker=0.5)\n"
         "print('up', flush=True)\n"
         "time.sleep(600)\n"]),
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        groups = list((CGROUPS / "cpu").glob(f"cep-nodes-{child.pid}-*"))
        assert len(groups) == 1 and len(list(groups[0].glob("node-*"))) == 2
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 128 + signal.SIGTERM
        assert not groups[0].exists()
    finally:
        child.kill()


@pytest.mark.slow
@pytest.mark.skipif(not os.access(CGROUPS / "cpu" / "cgroup.procs", os.W_OK),
                    reason="needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
def test_a_node_that_joins_gives_the_running_session_an_executor_in_its_own_cgroup():
    """``EmulatedCluster.join`` (bench/bench_scale_midrun.py's node joining mid-run): a
    session made with ``room_for`` starts on the nodes there are, and a node that joins
    later gets an executor of that session, in the new node's cgroup; the stop removes
    it with the rest."""
    from pyspark.sql import SparkSession

    base = RunConfig({"Tweet": "tweets:n=10"}, engines=2, progress=False)
    with on_nodes(base, 1, CPUS) as (_config, cluster):
        conf = cluster.room_for(2)
        assert conf["spark.cores.max"] == "2"
        builder = SparkSession.builder
        for name, value in conf.items():
            builder = builder.config(name, value)
        context = builder.getOrCreate().sparkContext
        context.parallelize(range(2), 2).count()  # runs on the one node there is
        cluster.join(1)
        standalone = cluster.cluster
        groups = [group.path for group in standalone.node_groups]
        assert cluster.nodes == 2 and len(groups) == 2
        deadline = time.monotonic() + 120
        while context._jsc.sc().getExecutorMemoryStatus().size() < 3:  # the driver's too
            assert time.monotonic() < deadline, "no executor on the node that joined"
            time.sleep(0.5)
        assert any(int(pid) for pid in (groups[1] / "cgroup.procs").read_text().split())
    assert not any(group.exists() for group in groups)
