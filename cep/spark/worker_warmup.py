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


def warm_up(spark) -> threading.Thread:
    """Start warming in a background thread; the caller need not wait for it."""
    thread = threading.Thread(target=_warm, args=(spark,), name="cep-warm-up", daemon=True)
    thread.start()
    return thread
