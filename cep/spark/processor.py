"""One CEP engine as a ``transformWithStateInPandas`` stateful processor.

Grouped by engine label, so each call of ``handleInputRows`` is one engine's whole
micro-batch, which :mod:`cep.spark.engine_batch` runs (see there: the state per key, the
events each engine writes itself, the ``stats`` row it returns, INSERT INTO chains).

Why the batch lives in another module: before a query's first batch, Spark unpickles
this processor on the driver, in a Python process of its own, only to call ``init`` and
learn its state variables, and every run waits for that. This module imports nothing
but pyspark's ``StatefulProcessor``, and keeps where events and chain rows go as plain
paths (``EventParts`` and ``ChainParts`` come with pandas and pyarrow): unpickling it
there takes about 0.02 s, where importing the batch's modules took 0.3 s.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

if TYPE_CHECKING:
    import pandas as pd

    from cep.handoff.store import StateStore
    from cep.lang import ir
    from cep.spark.chain import ChainParts
    from cep.spark.parts import EventParts

OUTPUT_SCHEMA = "engine int, stats string"


class EngineProcessor(StatefulProcessor):
    """Runs one engine label's micro-batch (``engine_batch.run_engine_batch``)."""

    def __init__(self, module: ir.CompiledModule, labels: list[list[int]], parts: EventParts,
                 store: StateStore | None = None,
                 slowdown: dict[int, float] | None = None,
                 chain: ChainParts | None = None) -> None:
        self.module = module
        self.stages = module.stage_modules()
        # label -> (stage, engine); labels[s][e] is engine e of stage s
        self.engine_of_label = {label: (s, e) for s, stage in enumerate(labels)
                                for e, label in enumerate(stage)}
        self.n_engines = len(labels[0])
        # where events go and where chain rows go (a module with later stages), as plain
        # values: see the module's docstring
        self.parts_at = (parts.directory, parts.fmt)
        self.chain_at = chain.directory if chain is not None else None
        self.rule_order = {name: i for i, name in enumerate(module.outputs)}
        self.store = store  # None: keys never move (key grouping, PKG)
        # engine index -> factor: that engine's processing takes factor times as long, to
        # show capacity-aware balancing on a machine whose engines are all equally fast
        self.slowdown = slowdown or {}
        # names this start of the query: a worker's warm states never outlive it
        self.start = uuid.uuid4().hex

    def init(self, handle) -> None:
        self.heads = handle.getMapState("keys", "key string", "head binary")
        self.segments = handle.getMapState("segments", "key string, batch long", "rows binary")

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from cep.spark.engine_batch import run_engine_batch

        return run_engine_batch(self, key, rows)

    def close(self) -> None:
        """The task ends: no MongoDB client of it outlives it (see
        ``cep.transports.mongo_client.close_shared_clients``)."""
        if self.store is not None:
            from cep.transports.mongo_client import close_shared_clients

            close_shared_clients()
