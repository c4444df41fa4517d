"""Pytest helpers for tests that must run on a real standalone cluster, not ``local[*]``.

Use the fixtures by importing them into a test module (``from support.cluster import
cluster_spark, spark_cluster``). Mark such tests ``slow``: on two cores the cluster
takes 10-20 s to start and a session with its executors as long again. So one cluster
serves the whole test session, while each module gets its own SparkSession so that one
module's settings cannot leak into the next.

Functions that Spark ships to executors must not be module-level functions of a test
module: cloudpickle pickles those by reference and executors cannot import tests.
Nest them in the test (pickled by value) or put them in ``cep``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from cep.spark.cluster.standalone import LocalStandaloneCluster

# One shuffle partition per core: each is a state store and a task, and Spark's default
# of 200 crawls on two cores. Test JVMs do little work, so C1 alone and a serial GC are
# plenty and halve start-up (the driver's only if this session launches its JVM).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.extraJavaOptions": QUICK_JVM,
    "spark.executor.extraJavaOptions": QUICK_JVM,
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
LEAK_GRACE_SECONDS = 10.0


HIDE_CEP = """\
# Executors of the test cluster: this machine's Python and packages, but not cep (as on a
# real cluster whose nodes were given cep's dependencies only): cep's editable-install
# finder is taken off the import system, so only the code cep ships can be imported.
import sys

sys.meta_path[:] = [f for f in sys.meta_path
                    if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks
                     if "__editable__" not in getattr(h, "__module__", "")]
"""


def python_without_cep() -> str:
    """A ``python`` for executors that cannot import an installed cep (see HIDE_CEP)."""
    folder = Path(tempfile.gettempdir()) / "cep-test-python-without-cep"
    (folder / "site").mkdir(parents=True, exist_ok=True)
    (folder / "site" / "sitecustomize.py").write_text(HIDE_CEP)
    script = folder / "python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{folder / "site"}${{PYTHONPATH:+:$PYTHONPATH}}" '
                      f'exec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return str(script)


@contextlib.contextmanager
def cluster_session(cluster: LocalStandaloneCluster, app_name: str = "cep-test",
                    **conf: str) -> Iterator[SparkSession]:
    """A SparkSession whose executors run on ``cluster``; stopped on exit.

    A context on another master is stopped first: ``getOrCreate`` would otherwise hand
    back that session and silently ignore ``.master``. The session is created only once
    an executor on every worker has registered (see ``driver_conf``).
    """
    os.environ["PYSPARK_PYTHON"] = python_without_cep()  # what executors run; driver_conf
    active = SparkContext._active_spark_context
    if active is not None and active.master != cluster.master_url:
        active.stop()
    builder = SparkSession.builder.appName(app_name)
    for key, value in {**cluster.driver_conf(), **TEST_CONF, **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[LocalStandaloneCluster]:
    """Two one-core, 1g workers on 127.0.0.1 for the whole test session.

    Teardown also checks ``stop``: a daemon, executor or Python worker that outlived it
    (or a temp dir left behind) fails the run, since it would hold ports and memory
    until the machine reboots.
    """
    with LocalStandaloneCluster() as cluster:
        pgids, markers, root = cluster.pids, [cluster.master_url, str(cluster.root)], cluster.root
        yield cluster
    assert not root.exists(), f"stop left {root} behind"
    # Python workers exit moments after their executor, not with it: allow them a while.
    deadline = time.monotonic() + LEAK_GRACE_SECONDS
    while (leftovers := cluster_processes(pgids, markers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftovers, f"processes outlived the cluster's stop: {leftovers}"


@pytest.fixture(scope="module")
def cluster_spark(spark_cluster: LocalStandaloneCluster) -> Iterator[SparkSession]:
    """A SparkSession on ``spark_cluster`` for one test module."""
    with cluster_session(spark_cluster, app_name="cep-cluster-test") as spark:
        yield spark


def running_processes() -> Iterator[tuple[int, int, str]]:
    """``(pid, process group, command line + " cwd=" + working dir)`` of live processes.

    Zombies are skipped: an executor killed after its worker died is re-parented to
    PID 1, which in a container may never reap it, yet it holds no port or memory.
    """
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # /proc/<pid>/stat is "pid (comm) state ppid pgrp ..."; comm may hold spaces.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            yield int(entry.name), int(fields[2]), f"{cmdline} cwd={cwd}"


def cluster_processes(pgids: list[int], markers: list[str]) -> dict[int, str]:
    """``{pid: command line}`` of everything a cluster runs, for leak checks.

    ``pgids`` are the cluster's ``pids``: each daemon leads a process group, and the
    executors a worker forks stay in it. ``markers`` (the master URL, the cluster's temp
    dir) matched against command line and working directory catch what left its group:
    ``pyspark.daemon`` makes its own group, but runs in its executor's work dir. This
    process's own group is left out: the driver's JVM names the master URL on its
    command line but is not the cluster's. Take both before ``stop``, which forgets them.
    """
    groups, own_group = set(pgids), os.getpgrp()
    return {pid: cmdline for pid, group, cmdline in running_processes()
            if group in groups
            or (group != own_group and any(marker in cmdline for marker in markers))}
