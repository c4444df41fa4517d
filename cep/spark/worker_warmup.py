"""Warm a local master's Python workers while the driver sets the query up.

Between the session's start and the first micro-batch the driver spends about three
seconds planning the query, mostly waiting on short-lived Python processes of Spark's
own (the source's creation, its streaming runner, the state processor's driver-side
init, the read planner). The task slots are idle then. Without a warm-up the first
batch's input tasks each start a Python worker and import cep, pandas and pyarrow in it
(about a second), and the first state store loads RocksDB's native library. A
one-task-per-slot job started beside the set-up does that work early: Spark keeps the
workers it started, and the input and engine tasks share that pool
(``session._settings``, ``simplifiedTraceback``), so they get warm ones.

This job was dropped once (2f46044) on the suspicion that it caused a hang of a
transformWithState task; that hang's cause was a MongoDB client dialling a port Spark
had reused (``cep.transports.mongo_client.close_shared_clients``), not this job.

On a cluster, executors that join a running job (:class:`JoinWarmer`) start as cold:
on an emulated 0.4-core node that joined a job, the first engine tasks the new executors
ran took 12.2 and 12.6 s where the same (empty) partitions take 0.3-0.4 s on a warm
executor, 2.4-2.5 s of it the executor JVM's CPU in the task, and the next batch's input
tasks there 6.8-7.6 s against about 1 s (``bench/results/scale_midrun-leave-3.json``,
batches 14 and 15). The warmer starts a job of a task per slot as soon as it sees more
executors than before: an Arrow job (``mapInArrow``, the input and engine tasks' runner)
whose tasks import cep's task modules.

Only an optimisation: a warm-up that fails (a cluster whose executors lack cep, a
session stopped early) changes nothing else, so its errors are dropped.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


def _import_task_modules(_partition: Iterator[int]) -> Iterator[int]:
    """Runs in a worker: import what the input and engine tasks import."""
    import cep.spark.engines.batch
    import cep.spark.inputs.tasks  # noqa: F401

    yield os.getpid()


def _warm(spark) -> None:
    with contextlib.suppress(Exception):
        context = spark.sparkContext
        slots = max(1, context.defaultParallelism)
        context.parallelize(range(slots), slots).mapPartitions(_import_task_modules).collect()
    with contextlib.suppress(Exception):
        spark._jvm.org.rocksdb.RocksDB.loadLibrary()


def _import_in_arrow(batches: Iterator) -> Iterator:
    """Runs in an Arrow worker: import what the input and engine tasks import."""
    import cep.spark.engines.batch
    import cep.spark.inputs.tasks  # noqa: F401

    yield from batches


def executor_count(spark) -> int:
    """The executors registered now (the driver's entry not counted)."""
    return len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1


class JoinWarmer:
    """Watches a cluster session's executors (every ``every_s``) and warms them with a
    task per slot whenever more have registered than it saw last (see the module's
    docstring). ``warmed``: the warm-up jobs it ran."""

    def __init__(self, spark, every_s: float = 0.5) -> None:
        self.spark, self.every_s = spark, every_s
        self.warmed = 0
        self._stopped = threading.Event()
        self._seen = executor_count(spark)
        self._thread = threading.Thread(target=self._watch, name="cep-join-warmer",
                                        daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stopped.wait(self.every_s):
            with contextlib.suppress(Exception):
                now = executor_count(self.spark)
                if now > self._seen:
                    slots = max(1, self.spark.sparkContext.defaultParallelism)
                    (self.spark.range(0, slots, 1, slots)
                     .mapInArrow(_import_in_arrow, "id long").collect())
                    self.warmed += 1
                self._seen = now

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)


def warm_up(spark) -> threading.Thread:
    """Start warming in a background thread; the caller need not wait for it."""
    thread = threading.Thread(target=_warm, args=(spark,), name="cep-warm-up", daemon=True)
    thread.start()
    return thread
