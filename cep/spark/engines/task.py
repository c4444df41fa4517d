"""What every engine task of a run knows: the plain values the stateful processor
(``processor.py``) carries to each engine's micro-batch (``engine_batch.py``).

A leaf between those two modules, so that neither imports the other: the processor
builds it on the driver, Spark pickles it with the processor, and the batch reads it on
the executors. It imports nothing beyond the standard library at run time, since the
processor must stay cheap to unpickle (see ``processor.py``): where events and chain
rows go are plain paths here, not the ``EventParts`` and ``ChainParts`` objects whose
modules come with pandas and pyarrow.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cep.engine.udf.shipment import UdfShipment
    from cep.spark.chains.stages import ChainParts
    from cep.spark.output.event_parts import EventParts
    from grammar import ir
    from migration.store import StateStore


@dataclass(frozen=True)
class EngineTask:
    """One run's engines, as each engine task sees them."""

    module: ir.CompiledModule
    stages: list[ir.CompiledModule]  # stage s's rules (one stage without INSERT INTO)
    engine_of_label: dict[int, tuple[int, int]]  # label -> (stage, engine)
    n_engines: int  # engines per stage
    parts_at: tuple[str, str]  # where the events go: EventParts' directory and format
    chain_at: str | None  # where chain rows go: ChainParts' directory (later stages only)
    rule_order: dict[str, int]  # rule -> its place in the file (the reference order)
    store: StateStore | None  # None: keys never move (key grouping, PKG)
    # engine index -> factor: that engine's processing takes factor times as long, to
    # show capacity-aware balancing on a machine whose engines are all equally fast
    slowdown: dict[int, float]
    start: str  # names this start of the query: a worker's resident engines never outlive it
    late: str = "process"  # the late-event policy: "drop" leaves late events out
    dead_at: str | None = None  # where late events' dead letters go (late_rows.late_path)
    workdir: str | None = None  # the run directory: its change log has the rule versions
    udfs: UdfShipment | None = None  # the user functions the rules call (udf_shipment.py)
    log_at: str | None = None  # the run's input log: the records of failed user functions


def engine_task(module: ir.CompiledModule, labels: list[list[int]], parts: EventParts,
                store: StateStore | None = None, slowdown: dict[int, float] | None = None,
                chain: ChainParts | None = None, late: str = "process",
                dead_at: str | None = None, udfs: UdfShipment | None = None,
                log_at: str | None = None, workdir: str | None = None) -> EngineTask:
    """The task of engines ``labels[s][e]`` (engine e of stage s) running ``module``, each
    writing its events as ``parts``, a stage's chain rows for the next as ``chain``, late
    events processed or dropped as ``late`` says, their dead letters under ``dead_at``,
    the user functions ``udfs`` registered first, the failed ones' records read back
    from the input log at ``log_at``."""
    return EngineTask(
        module=module,
        stages=module.stage_modules(),
        engine_of_label={label: (s, e) for s, stage in enumerate(labels)
                         for e, label in enumerate(stage)},
        n_engines=len(labels[0]),
        parts_at=(parts.directory, parts.fmt),
        chain_at=chain.directory if chain is not None else None,
        rule_order={name: i for i, name in enumerate(module.outputs)},
        store=store,
        slowdown=slowdown or {},
        start=uuid.uuid4().hex,
        late=late,
        dead_at=dead_at,
        udfs=udfs,
        log_at=log_at,
        workdir=workdir,
    )
