"""One CEP engine as a ``transformWithStateInPandas`` stateful processor.

Grouped by engine label, so each call of ``handleInputRows`` is one engine's whole
micro-batch, which :mod:`cep.spark.engines.batch` runs (see there: the engine's state,
the events each engine writes itself, the ``stats`` row it returns, INSERT INTO chains).
Its state variable, with ``StructType`` schemas (no DDL string parsed per call), is
``engine_log.py``'s.

Why the batch lives in another module: before a query's first batch, Spark unpickles
this processor on the driver, in a Python process of its own, only to call ``init`` and
learn its state variables, and every run waits for that. This module imports nothing
but pyspark's ``StatefulProcessor`` and the plain values of ``engine_task.py`` (where
events and chain rows go as plain paths: ``EventParts`` and ``ChainParts`` come with
pandas and pyarrow): unpickling it there takes about 0.02 s, where importing the batch's
modules took 0.3 s. ``engine_batch.py`` imports the task's values from ``engine_task.py``,
never this module, so the two do not import each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from cep.spark.engines.task import engine_task

if TYPE_CHECKING:
    import pandas as pd

    from cep.engine.udf.shipment import UdfShipment
    from cep.spark.chains.stages import ChainParts
    from cep.spark.output.event_parts import EventParts
    from grammar import ir
    from migration.store import StateStore

OUTPUT_SCHEMA = "engine int, stats string"


class EngineProcessor(StatefulProcessor):
    """Runs one engine label's micro-batch (``engine_batch.run_engine_batch``)."""

    def __init__(self, module: ir.CompiledModule, labels: list[list[int]], parts: EventParts,
                 store: StateStore | None = None,
                 slowdown: dict[int, float] | None = None,
                 chain: ChainParts | None = None, late: str = "process",
                 dead_at: str | None = None, udfs: UdfShipment | None = None,
                 log_at: str | None = None, workdir: str | None = None) -> None:
        self.task = engine_task(module, labels, parts, store, slowdown, chain, late, dead_at,
                                udfs, log_at, workdir)

    def init(self, handle) -> None:
        from cep.spark.engines.log import LOG_KEY_SCHEMA, LOG_VALUE_SCHEMA

        self.log = handle.getMapState("log", LOG_KEY_SCHEMA, LOG_VALUE_SCHEMA)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from cep.spark.engines.batch import run_engine_batch

        return run_engine_batch(self.task, self.log, key, rows)

    def close(self) -> None:
        """The task ends: no MongoDB client of it outlives it (see
        ``cep.transports.mongo_client.close_shared_clients``)."""
        if self.task.store is not None:
            from cep.transports.mongo_client import close_shared_clients

            close_shared_clients()
