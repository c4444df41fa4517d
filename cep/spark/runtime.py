"""``cep run --runner spark``: one Structured Streaming query, N stateful engines.

    staged parts ──mapInPandas(router)──▶ groupBy(engine label)
        ──transformWithStateInPandas(EngineProcessor)──▶ foreachBatch(BatchSink)

The engines run the same :class:`cep.engine.Engine` as the reference evaluator; Spark
only moves rows and state. With ``checkpoint`` set, the staged input, Spark's checkpoint
and the per-batch output parts all live there, so a restarted run resumes where it
stopped; without it everything lives in a temporary directory.

A checkpoint directory holds::

    run.json      run id, engines, strategy: what a restart must match (written first)
    stage/        the input as numbered micro-batches (appears whole or not at all)
    checkpoint/   Spark's offsets, commits and engine state
    parts/ metrics/   one file per batch, rewritten whole by a replay
    mongo/        the embedded MongoDB's data, when keys move and no --mongo-uri is given

Why the embedded server's data lives in the checkpoint: a restarted batch t imports the
documents of batch t-1 and routes by maps t-1 … t+2, all written by the killed process;
a fresh empty server would make the restart fail (or, had it assumed key grouping,
silently run moved keys without their state). Rebuilding them is impossible (the
exported state left its engine), so they are kept, journaled, next to the Spark state
they belong to. With ``--mongo-uri`` the same holds for that server: a restart must use
it again, which :func:`_check_resumable` verifies before Spark starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import uuid
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
from cep.spark.staging import STAGED_SCHEMA, stage_batches, staged_layout
from migration.server import EmbeddedMongo
from migration.store import StateStore, StoreError, mask_uri

DEFAULT_BATCH_SIZE = 100_000
#: Seconds MongoDB may take to be found, to connect and to answer one operation. Long
#: enough to ride out a replica-set election (~12 s), short enough that an outage stops
#: the run in well under a minute.
DEFAULT_MONGO_TIMEOUT = 30.0


class SparkRunError(Exception):
    """The streaming query failed; the message says why in one line."""


@dataclass
class SparkRun:
    """What a run produced: events (reference order), per-batch metrics, timings.

    Wall-clock seconds: ``session_s`` to start Spark, ``staging_s`` to stage the input,
    ``first_batch_s`` from the query's start to the first batch's commit, ``read_back_s``
    to read the events back at the end, ``seconds`` the whole call."""

    records: list[dict]
    metrics: list[dict]
    events: int
    session_s: float
    first_batch_s: float
    seconds: float
    staging_s: float = 0.0
    read_back_s: float = 0.0


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
    mongo_timeout: float = DEFAULT_MONGO_TIMEOUT,
    capacity: str = "equal",
    slowdown: dict[int, float] | None = None,
) -> SparkRun:
    """Run the module over the inputs on Spark and return every event.

    ``strategy`` picks the routing: ``kg`` (key grouping), ``pkg`` (partial key grouping,
    splits keys) or a key-moving strategy (``dlb-h``, ``dlb-l``, ``lptf``, ...) whose
    moved keys' state travels through MongoDB (``mongo_uri``, or an embedded server).
    ``mongo_timeout`` bounds, in seconds, each wait on MongoDB (server selection,
    connect, socket) unless the URI sets that option itself."""
    started = time.perf_counter()
    if strategy not in ("kg", "pkg") and mongo_uri is None and not is_local_master(master):
        raise SparkRunError(
            f"strategy {strategy} moves key state through MongoDB, and the embedded server "
            f"on 127.0.0.1 is unreachable from executors of {master}: pass --mongo-uri")
    if not mongo_timeout > 0:
        raise SparkRunError(f"the MongoDB time-out must be positive, got {mongo_timeout}")
    workdir = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="cep-run-"))
    with contextlib.ExitStack() as cleanup:
        if not checkpoint:
            cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
        run_id = _manifest(workdir, engines, strategy)
        store, hooks = None, []
        if strategy == "kg":
            engine_of = key_grouping(engines)
        elif strategy == "pkg":
            engine_of = partial_key_grouping(engines)
        else:
            if mongo_uri is None:
                data_dir = workdir / "mongo" if checkpoint else None
                mongo_uri = cleanup.enter_context(EmbeddedMongo(data_dir=data_dir)).uri
            timeout_ms = max(1, round(mongo_timeout * 1000))
            store = cleanup.enter_context(StateStore(
                mongo_uri, run_id=run_id, connect_timeout_ms=timeout_ms,
                server_selection_timeout_ms=timeout_ms, socket_timeout_ms=timeout_ms))
            balancer = Balancer(store, strategy, engines, threshold, stat_window,
                                capacity=capacity)
            try:
                balancer.prepare()
                _check_resumable(store, workdir)
            except StoreError as err:
                raise SparkRunError(_store_failure(f"{type(err).__name__}: {err}", workdir,
                                                   checkpoint)) from None
            hooks.append(balancer)
            engine_of = map_grouping(store)
            if not checkpoint:
                cleanup.callback(_drop_run, store)
        # MongoDB is checked (prepare) before Spark starts, so a bad URI fails in seconds
        session_started = time.perf_counter()
        spark = spark_session(master, engines, verbose)
        session_s = time.perf_counter() - session_started
        stage = workdir / "stage"
        staging_started = time.perf_counter()
        if not stage.is_dir():
            stage_batches(inputs, batch_size, max(1, min(spark.sparkContext.defaultParallelism,
                                                         8)), stage)
        n_batches, parts = staged_layout(stage)
        staging_s = time.perf_counter() - staging_started
        total = sum(len(t[SEQ]) for t in inputs.values())
        labels = engine_labels(engines)
        order = {name: i for i, name in enumerate(module.outputs)}
        first_batch = _next_batch(workdir)  # 0, or where a restart resumes
        done = sum(m["events_in"] for m in read_metrics(workdir) if m["batch"] < first_batch)
        sink = BatchSink(workdir, engines, order, Progress(total, n_batches, progress, done=done),
                         hooks)
        source = (spark.readStream.schema(STAGED_SCHEMA)
                  .option("maxFilesPerTrigger", max(1, parts)).parquet(str(stage)))
        routed = source.mapInPandas(router(module, labels, engine_of), ROUTED_SCHEMA)
        result = routed.groupBy("engine").transformWithStateInPandas(
            EngineProcessor(module, labels, store, slowdown), OUTPUT_SCHEMA, "Append",
            "None")
        query_wall = time.time()
        query = (result.writeStream.foreachBatch(sink)
                 .option("checkpointLocation", str(workdir / "checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination()
        except Exception as err:
            raise SparkRunError(_failure(err, store, workdir, checkpoint)) from err
        metrics = read_metrics(workdir)
        _add_spark_times(metrics, query.recentProgress)
        ours = [m for m in metrics if m["batch"] >= first_batch]
        first = ours[0]["wall_time"] - query_wall if ours else 0.0
        read_started = time.perf_counter()
        records = read_events(workdir)
        return SparkRun(records=records, metrics=metrics, events=total,
                        session_s=session_s, first_batch_s=max(first, 0.0),
                        seconds=time.perf_counter() - started, staging_s=staging_s,
                        read_back_s=time.perf_counter() - read_started)


def _add_spark_times(metrics: list[dict], progress: list) -> None:
    """Add Spark's own per-batch times (milliseconds, from the query's progress reports)
    to the metrics of the batches this process ran: ``trigger`` the batch's wall time,
    ``planning``, and ``state_commit`` summed over the engines' state stores."""
    by_batch = {m["batch"]: m for m in metrics}
    for report in progress:
        info = json.loads(report.json)
        entry = by_batch.get(info["batchId"])
        if entry is None:
            continue
        durations = info.get("durationMs", {})
        entry["spark_ms"] = {
            "trigger": durations.get("triggerExecution", 0),
            "planning": durations.get("queryPlanning", 0),
            "state_commit": sum(op.get("commitTimeMs", 0)
                                for op in info.get("stateOperators", [])),
        }


def _manifest(workdir: Path, engines: int, strategy: str) -> str:
    """The run id of the run in ``workdir``: drawn when the directory is new, read back
    on a restart (so it finds its maps and state documents again, and a checkpoint
    deleted and recreated under the same path never meets the old run's documents).

    A restart must keep the engines (Spark fixed the state partitions, and the moved
    keys' owners are engine numbers) and the strategy (key grouping after a key-moving
    strategy would route moved keys to engines without their state)."""
    path = workdir / "run.json"
    wanted = {"engines": engines, "strategy": strategy}
    if path.exists():
        manifest = json.loads(path.read_text())
        for name, value in wanted.items():
            if manifest[name] != value:
                raise SparkRunError(
                    f"checkpoint {workdir} belongs to a run with {name} {manifest[name]}, "
                    f"not {value}: resume it with the same options, or use a new directory")
        return manifest["run_id"]
    manifest = {"run_id": uuid.uuid4().hex[:16], **wanted}
    workdir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(".run.json.tmp")
    tmp.write_text(json.dumps(manifest) + "\n")
    os.replace(tmp, path)
    return manifest["run_id"]


def _next_batch(workdir: Path) -> int:
    """The first micro-batch Spark has not committed: where a restart resumes, and the
    one that was running when a run failed."""
    done = [int(p.name) for p in (workdir / "checkpoint" / "commits").glob("*")
            if p.name.isdigit()]
    return max(done, default=-1) + 1


def _check_resumable(store: StateStore, workdir: Path) -> None:
    """A resumed batch t routes by map t, written by the run before the restart (maps 0
    and 1 are written at every start): without it, this is not that run's MongoDB."""
    batch = _next_batch(workdir)
    if batch >= 2 and store.get_key_map(batch) is None:
        raise SparkRunError(
            f"MongoDB at {mask_uri(store.uri)} holds no key map {batch} of the run in "
            f"{workdir} (run id {store.run_id}), which resuming at batch {batch} needs: "
            "restart with the MongoDB the run started with (same --mongo-uri, or none if "
            "it used the embedded server), or use a new checkpoint directory")


def _drop_run(store: StateStore) -> None:
    """Best effort: after a failed run MongoDB may be the thing that is down, and its
    error must not replace the run's own. Leftovers of a random run id harm nobody."""
    with contextlib.suppress(StoreError):
        store.drop_run()


def _failure(err: Exception, store: StateStore | None, workdir: Path,
             checkpoint: str | None) -> str:
    """One line for a failed query (Spark's message holds whole stack traces)."""
    line = _one_line(err)
    if store is None or mask_uri(store.uri) not in line:
        return line
    return _store_failure(line, workdir, checkpoint)


def _store_failure(line: str, workdir: Path, checkpoint: str | None) -> str:
    """A MongoDB failure, ``"<StoreError subclass>: <message naming the masked URI>"``,
    as the batch it stopped and what to do: the user sees where and why at once."""
    kind, _, message = line.partition(": ")
    fix = "once MongoDB is back" if kind == "MongoUnavailableError" else "once that is fixed"
    again = (f"checkpoint {checkpoint} is intact: run the same command again {fix}"
             if checkpoint else "with --checkpoint DIR a rerun resumes instead of starting over")
    return f"batch {_next_batch(workdir)} failed: {message} ({again})"


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
    for marker in ("MongoUnavailableError", "StoreError", "MissingStateError",
                   "MissingKeyMapError", "RuleError", "ValueError", "Exception:", "Error:"):
        idx = text.rfind(marker)
        if idx >= 0:
            line = text[idx:].splitlines()[0]
            return line[:500]
    return text.splitlines()[0][:500] if text else type(err).__name__
