"""``cep run --runner spark``: one Structured Streaming query, N stateful engines.

    staged parts ──mapInPandas(router)──▶ groupBy(engine label)
        ──transformWithStateInPandas(EngineProcessor)──▶ foreachBatch(BatchSink)

The engines run the same :class:`cep.engine.Engine` as the reference evaluator; Spark
only moves rows and state. With ``checkpoint`` set, the staged input, Spark's checkpoint
and the per-batch output parts all live there, so a restarted run resumes where it
stopped; without it everything lives in a temporary directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cep.engine.table import SEQ, Table
from cep.lang import ir
from cep.spark.balancer import Balancer
from cep.spark.labels import engine_labels
from cep.spark.processor import OUTPUT_SCHEMA, EngineProcessor
from cep.spark.routing import (
    ROUTED_SCHEMA,
    key_grouping,
    map_grouping,
    partial_key_grouping,
    router,
)
from cep.spark.session import is_local_master, spark_session
from cep.spark.sink import BatchSink, Progress
from cep.spark.staging import STAGED_SCHEMA, stage_batches
from migration.server import EmbeddedMongo
from migration.store import StateStore

DEFAULT_BATCH_SIZE = 100_000


class SparkRunError(Exception):
    """The streaming query failed; the message says why in one line."""


@dataclass
class SparkRun:
    """What a run produced: events (reference order), per-batch metrics, timings."""

    records: list[dict]
    metrics: list[dict]
    events: int
    session_s: float
    first_batch_s: float
    seconds: float


def run_on_spark(
    module: ir.CompiledModule,
    inputs: dict[str, Table],
    *,
    engines: int = 5,
    batch_size: int = DEFAULT_BATCH_SIZE,
    master: str = "local[*]",
    checkpoint: str | None = None,
    verbose: bool = False,
    progress: bool = True,
    strategy: str = "kg",
    threshold: float = 15.0,
    stat_window: int = 1,
    mongo_uri: str | None = None,
) -> SparkRun:
    """Run the module over the inputs on Spark and return every event.

    ``strategy`` picks the routing: ``kg`` (key grouping), ``pkg`` (partial key grouping,
    splits keys) or a key-moving strategy (``dlb-h``, ``dlb-l``, ``lptf``, ...) whose
    moved keys' state travels through MongoDB (``mongo_uri``, or an embedded server)."""
    started = time.perf_counter()
    if strategy not in ("kg", "pkg") and mongo_uri is None and not is_local_master(master):
        raise SparkRunError(
            f"strategy {strategy} moves key state through MongoDB, and the embedded server "
            f"on 127.0.0.1 is unreachable from executors of {master}: pass --mongo-uri")
    workdir = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="cep-run-"))
    with contextlib.ExitStack() as cleanup:
        if not checkpoint:
            cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
        store, hooks = None, []
        if strategy == "kg":
            engine_of = key_grouping(engines)
        elif strategy == "pkg":
            engine_of = partial_key_grouping(engines)
        else:
            uri = mongo_uri or cleanup.enter_context(EmbeddedMongo()).uri
            store = cleanup.enter_context(StateStore(uri, run_id=_run_id(workdir)))
            balancer = Balancer(store, strategy, engines, threshold, stat_window)
            balancer.prepare()
            hooks.append(balancer)
            engine_of = map_grouping(store)
            if not checkpoint:
                cleanup.callback(store.drop_run)
        # MongoDB is checked (prepare) before Spark starts, so a bad URI fails in seconds
        session_started = time.perf_counter()
        spark = spark_session(master, engines, verbose)
        session_s = time.perf_counter() - session_started
        stage = workdir / "stage"
        parts = max(1, min(spark.sparkContext.defaultParallelism, 8))
        if not any(stage.glob("*.parquet")):
            stage_batches(inputs, batch_size, parts, stage)
        n_batches = len(list(stage.glob("*-part-000.parquet")))
        total = sum(len(t[SEQ]) for t in inputs.values())
        labels = engine_labels(engines)
        order = {name: i for i, name in enumerate(module.outputs)}
        sink = BatchSink(workdir, engines, order, Progress(total, n_batches, progress),
                         hooks)
        source = (spark.readStream.schema(STAGED_SCHEMA)
                  .option("maxFilesPerTrigger", parts).parquet(str(stage)))
        routed = source.mapInPandas(router(module, labels, engine_of), ROUTED_SCHEMA)
        result = routed.groupBy("engine").transformWithStateInPandas(
            EngineProcessor(module, labels, store), OUTPUT_SCHEMA, "Append", "None")
        query_wall = time.time()
        query = (result.writeStream.foreachBatch(sink)
                 .option("checkpointLocation", str(workdir / "checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination()
        except Exception as err:
            raise SparkRunError(_one_line(err)) from err
        metrics = read_metrics(workdir)
        first = metrics[0]["wall_time"] - query_wall if metrics else 0.0
        return SparkRun(records=read_events(workdir), metrics=metrics, events=total,
                        session_s=session_s, first_batch_s=max(first, 0.0),
                        seconds=time.perf_counter() - started)


def _run_id(workdir: Path) -> str:
    """Derived from the run's directory, so a restart from a checkpoint finds its maps and
    state documents again."""
    return hashlib.sha1(str(workdir.resolve()).encode()).hexdigest()[:16]


def read_events(workdir: Path) -> list[dict]:
    """All written events, batch by batch (each batch already in reference order)."""
    records = []
    for part in sorted((workdir / "parts").glob("batch-*.jsonl")):
        records.extend(json.loads(line) for line in part.read_text().splitlines())
    return records


def read_metrics(workdir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((workdir / "metrics").glob("*.json"))]


def _one_line(err: Exception) -> str:
    text = str(err)
    for marker in ("RuleError", "ValueError", "MissingStateError", "MongoUnavailableError",
                   "Exception:", "Error:"):
        idx = text.rfind(marker)
        if idx >= 0:
            line = text[idx:].splitlines()[0]
            return line[:500]
    return text.splitlines()[0][:500] if text else type(err).__name__
