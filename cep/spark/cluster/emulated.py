"""A node per engine on one machine: the cluster ``cep bench --nodes N`` runs on.

The DLB paper ran each of its 5 Esper engines on processors of its own, so the busiest
engine set the pace; on ``local[*]`` the engines share the machine's task slots and the
cores set it instead. :func:`emulated_cluster` starts a standalone master and N workers
of one task slot each, each worker in a cgroup capped at ``cpus_per_node`` cores
(default: the machine's cores / N, so the nodes together have the machine), and hands
back the run settings that use it (:func:`on_nodes`). On a real cluster the same shape
is one executor core per engine: ``spark.executor.cores=1`` and
``spark.cores.max=<engines>``, with ``--engines`` equal to the executors.

What a node pays only once is kept out of its batches:

* cep's numba kernels are compiled once per machine, not per run: the executors import
  the cep the driver runs (they are on the driver's machine) instead of the zip that
  cep ships to a real cluster, so numba's on-disk cache beside cep's source serves them.
  Shipped in a zip, every run's copy lands in a new directory, which numba's cache is
  keyed by: each run compiled every kernel again, tens of CPU seconds on a 0.4-core node;
* executors' Python workers run the driver's interpreter without Spark's zips on their
  path (``worker_python``), so they import the compiled pyspark of site-packages;
* executors' JVMs compile with C1 only (as the driver's: ``session.DRIVER_JAVA_OPTIONS``)
  and, when ``cep prepare`` made it, write checkpoints through cep's local file system
  (``local_fs``), not a forked ``chmod``/``readlink`` per file.

What remains (the executors' JVMs loading Spark's classes, their Python workers starting)
happens in a session's first batches: ``cep bench --nodes`` runs a small query first
(``prepare.run_training_query``) and leaves each run's first batch out of the measured
window (``cep.bench``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cep.run_config import RunConfig
from cep.servers.mongo import EmbeddedMongo
from cep.spark.cluster.standalone import LocalStandaloneCluster
from cep.spark.jvm import local_fs
from cep.spark.jvm.session import CEP_PACKAGE, DRIVER_JAVA_OPTIONS
from cep.spark.jvm.worker_python import worker_python

# A node that leaves (:meth:`EmulatedCluster.leave`) is decommissioned as Spark does it
# on a real standalone cluster: the application's executors there finish their running
# tasks, hand their shuffle blocks (a batch's map outputs) to the others and exit.
# An executor looks for new shuffle blocks to hand over every ``replicationReattempt
# Interval`` (30 s by default) and exits only after a look found none left: a task that
# ended during the decommissioning kept a node 31 s longer than its last task (test
# run, 21:25); at 1 s it leaves about a second after its last task.
DECOMMISSION_CONF = {"spark.decommission.enabled": "true",
                     "spark.storage.decommission.enabled": "true",
                     "spark.storage.decommission.shuffleBlocks.enabled": "true",
                     "spark.storage.decommission.replicationReattemptInterval": "1s"}
EXECUTOR_MEMORY = "1g"  # the JVM heap; the engines' Python workers are outside it
STARTUP_S = 60.0  # for the cluster to come up, per whole core a node has


@dataclass(frozen=True)
class EmulatedCluster:
    """A started emulated cluster: where to send a run, and with which Spark settings."""

    cluster: LocalStandaloneCluster
    cpus_per_node: float

    @property
    def nodes(self) -> int:
        return self.cluster.workers

    @property
    def master_url(self) -> str:
        return self.cluster.master_url

    @property
    def spark_conf(self) -> dict[str, str]:
        """The driver's settings for this cluster (``cluster.driver_conf``), executors
        that import the driver's cep, JVMs with C1 only, decommissioning (for nodes that
        :meth:`leave`), and cep's checkpoint file system on them when there is one."""
        conf = {**self.cluster.driver_conf(EXECUTOR_MEMORY), **DECOMMISSION_CONF,
                "spark.executor.extraJavaOptions": DRIVER_JAVA_OPTIONS,
                "spark.executorEnv.PYTHONPATH": str(CEP_PACKAGE.parent)}
        settings = local_fs.spark_settings()
        if settings:
            conf.update(settings)
            conf["spark.executor.extraClassPath"] = settings["spark.driver.extraClassPath"]
        return conf

    def room_for(self, nodes: int) -> dict[str, str]:
        """:attr:`spark_conf` for an application that will take executors on nodes that
        join later (:meth:`join`), up to ``nodes`` in all: the master grants it cores up
        to ``spark.cores.max``, and its first job waits only for the nodes there now."""
        cores = nodes * self.cluster.cores_per_worker
        return {**self.spark_conf, "spark.cores.max": str(cores),
                "spark.scheduler.minRegisteredResourcesRatio":
                    f"{self.nodes * self.cluster.cores_per_worker / cores:.6g}"}

    def join(self, count: int) -> None:
        """``count`` more nodes of the same size join while a job runs (a session made
        with :meth:`room_for` gets an executor on each); return once they are ALIVE."""
        self.cluster.add_workers(count, EXECUTOR_MEMORY, self.cpus_per_node)

    def leave(self, count: int, report: Callable[[dict], None] | None = None) -> list[dict]:
        """The ``count`` nodes that joined last leave while a job runs, decommissioned
        first (``LocalStandaloneCluster.remove_workers``); return once the master lists
        only the nodes that stay, with a record per node (``forced`` where Spark's
        graceful path did not finish in time and the node was stopped anyway).

        Scale the job's engines in first (``cep scale RUN_DIR N``, N at most the nodes
        that stay, and wait until its metrics show N engines): the engines' state is in
        the checkpoint's state store and in MongoDB, not on the node, so the executors
        that stay take the stateful partitions over. ``report``: told each node's
        record before it is stopped."""
        return self.cluster.remove_workers(count, report=report)

    def node_cpu_s(self) -> list[float | None]:
        """CPU seconds each node used so far (None where the kernel does not count)."""
        return [group.usage_s() for group in self.cluster.node_groups]


@contextlib.contextmanager
def emulated_cluster(nodes: int, cpus_per_node: float | None = None
                     ) -> Iterator[EmulatedCluster]:
    """Start ``nodes`` one-slot workers, each capped at ``cpus_per_node`` cores (default
    the machine's cores / ``nodes``); stop them, their cgroups and any Spark session on
    them at the end. Raises ``cpu_quota.CgroupError`` (one line) where quotas cannot be
    set."""
    cpus = cpus_per_node if cpus_per_node is not None else (os.cpu_count() or 1) / nodes
    saved = {name: os.environ.get(name) for name in ("PYSPARK_PYTHON", "CEP_SHIP_CODE")}
    # a worker's JVM starts on its node's share of the CPU: give it time in proportion
    launcher = LocalStandaloneCluster(startup_timeout=STARTUP_S / min(cpus, 1.0))
    with launcher.start(workers=nodes, cores_per_worker=1, memory=EXECUTOR_MEMORY,
                        cpus_per_worker=cpus) as cluster:
        # a session on another master would be handed back instead of one on this cluster
        _stop_session()
        # read when a session starts: executors run this interpreter and this cep
        os.environ.update(PYSPARK_PYTHON=worker_python(), CEP_SHIP_CODE="0")
        try:
            yield EmulatedCluster(cluster, cpus)
        finally:
            _stop_session(cluster.master_url)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _stop_session(master_url: str | None = None) -> None:
    """Stop this process's Spark session (if it runs on ``master_url``, when given).

    PySpark keeps one session per process and ``getOrCreate`` hands it back whatever
    master is asked for: one on ``local[*]`` must go before a run on the cluster, and
    the cluster's when its executors go, so that the next run gets a session of its own."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None and master_url in (None, active.master):
        active.stop()


@contextlib.contextmanager
def on_nodes(config: RunConfig, nodes: int, cpus_per_node: float | None = None
             ) -> Iterator[tuple[RunConfig, EmulatedCluster]]:
    """``config`` sent to a new emulated cluster of ``nodes`` nodes, and the cluster, for
    as long as the block runs. Keys that move need a MongoDB the executors reach:
    ``config``'s, else an embedded server on 127.0.0.1 (the nodes are this machine)."""
    with emulated_cluster(nodes, cpus_per_node) as cluster, contextlib.ExitStack() as stack:
        mongo_uri = config.mongo_uri or stack.enter_context(EmbeddedMongo()).uri
        yield dataclasses.replace(config, master=cluster.master_url, mongo_uri=mongo_uri,
                                  spark_conf={**cluster.spark_conf, **config.spark_conf}
                                  ), cluster
