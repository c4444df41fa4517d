"""Warm a local master's Python workers while the driver sets the query up.

Between the session's start and the first micro-batch the driver spends two to three
seconds registering the input source and planning the query, mostly waiting on short
lived Python processes of Spark's own. The task slots are idle then. Without a warm-up
the first batch's engine tasks each start a Python worker and import cep, pandas and
pyarrow in it (about half a second), and the first state store loads RocksDB's native
library. A one-task-per-slot job started beside the set-up does that work early: Spark
keeps the workers it started and hands them to the engine tasks (flights, 2 cores: the
run 0.5 to 1 s shorter).

Only an optimisation: a warm-up that fails (a cluster whose executors lack cep, a
session stopped early) changes nothing else, so its errors are dropped.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


def _import_cep(_partition: Iterator[int]) -> Iterator[int]:
    """Runs in a worker: import what the engine and input tasks import."""
    import cep.spark.processor
    import cep.spark.source  # noqa: F401

    yield os.getpid()


def _warm(spark) -> None:
    with contextlib.suppress(Exception):
        context = spark.sparkContext
        slots = max(1, context.defaultParallelism)
        context.parallelize(range(slots), slots).mapPartitions(_import_cep).collect()
    with contextlib.suppress(Exception):
        spark._jvm.org.rocksdb.RocksDB.loadLibrary()


def warm_up(spark) -> threading.Thread:
    """Start warming in a background thread; the caller need not wait for it."""
    thread = threading.Thread(target=_warm, args=(spark,), name="cep-warm-up", daemon=True)
    thread.start()
    return thread
