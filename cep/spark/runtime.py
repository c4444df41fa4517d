"""``cep run --runner spark``: one Structured Streaming query, N stateful engines.

    input source (executors read, derive, key, route) ──▶ groupBy(engine label)
        ──transformWithStateInPandas(EngineProcessor: writes its events)──▶
        foreachBatch(BatchSink: metrics, Balancer, delivery, progress)

The engines run the same :class:`cep.engine.Engine` as the reference evaluator; Spark
only moves rows and state. The driver plans and balances: it never reads a record and
never holds the events (a file or standard output gets one batch's events at a time).

A run directory (``--checkpoint DIR``, else a temporary one) holds::

    run.json      run id, strategy, inputs (what a restart must match), engine history
    input/        the input log (``segments.jsonl``): which bytes make up the stream
    rules/        the rules it started with, the changes deployed since, the batch at
                  which each applied (``cep.io.rule_changes``)
    checkpoint/   Spark's offsets, commits and engine state
    metrics/      one file per batch, rewritten whole by a replay
    parts/        the engines' event parts, while they wait to be delivered (unless the
                  output is a directory: then the parts are written there)
    dead/ ledgers/   per-batch dead letters; append ledgers of the output files
    chain/        an INSERT INTO chain's rows for the next stage (``chain_stages.py``)
    mongo/        the embedded MongoDB's data, when keys move and no --mongo-uri is given

Why the embedded server's data lives in the checkpoint: a restarted batch t imports the
documents of batch t-1 and routes by maps t-1 … t+2, all written by the killed process;
a fresh empty server would make the restart fail (or, had it assumed key grouping,
silently run moved keys without their state). Rebuilding them is impossible (the
exported state left its engine), so they are kept, journaled, next to the Spark state
they belong to. With ``--mongo-uri`` the same holds for that server: a restart must use
it again, which :func:`check_resumable` verifies before Spark starts.

Stopping: a bounded run (no ``follow``) ends when the input present at its start is
consumed (``availableNow``). A followed run goes on until SIGINT/SIGTERM (or the
``stop`` event of the Python API): then no new batch is planned, the batch in flight
finishes and commits, and the run returns normally.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pyspark.errors import PySparkRuntimeError

from cep.engine.udf.shipment import UdfShipError, shipment_for
from cep.io.inputlog import InputLog, InputLogError
from cep.io.inputs import parse_input_specs
from cep.io.readers.reader import MAX_RECORD_BYTES
from cep.io.rule_changes import ChangeLog, ChangeLogError, RuleBook
from cep.io.scale_changes import MAX_ENGINES, ScaleHook, ScaleLog
from cep.run_config import DEFAULT_BATCH_SIZE, Output, RunConfig, RunResult, is_uri_output
from cep.servers.kafka import embedded_broker
from cep.servers.mongo import EmbeddedMongo
from cep.spark.chains.check import ChainError, check_chain
from cep.spark.chains.stages import drained
from cep.spark.engines.processor import OUTPUT_SCHEMA, EngineProcessor
from cep.spark.inputs.config import SourceConfig
from cep.spark.inputs.progress import InputProgress
from cep.spark.inputs.source import SOURCE_NAME, input_source
from cep.spark.jvm.session import SPARK_LOG, is_local_master, ship_udf_files, spark_session
from cep.spark.output.event_parts import EventParts
from cep.spark.output.sink import BatchSink, Delivery, Progress
from cep.spark.rule_versions import RuleVersionsHook
from cep.spark.run_dir import (
    SparkRunError,
    check_resumable,
    next_batch,
    record_engines_now,
    record_rescale,
    run_manifest,
    write_kg_maps,
)
from cep.spark.worker_warmup import warm_up
from cep.transports.address import KafkaTransportError
from cep.transports.mongo_client import StoreError, mask_uri
from cep.transports.outputs import publisher
from grammar import ir
from grammar.rule_set import output_order
from migration.store import StateStore
from splitter.autoscale import AutoscaleHook, Autoscaler
from splitter.balancer import Balancer
from splitter.engine_labels import engine_partitions, stage_labels
from splitter.routing import key_grouping, map_grouping, partial_key_grouping

#: How engine state is laid out in Spark's state store (``engine_log.py``); a run
#: directory records it, so a checkpoint of another layout is refused, not misread.
# The parts of a trigger that Spark's progress reports time, besides its whole and its
# planning (``_add_spark_times``)
SPARK_PARTS = {"latest_offset": "latestOffset", "get_batch": "getBatch",
               "wal_commit": "walCommit", "add_batch": "addBatch",
               "commit_offsets": "commitOffsets"}
METRICS_KEPT = 10_000  # batches of metrics a run keeps in memory (the files keep all)


def _is_file(output: Output) -> bool:
    """One JSON-lines file, appended per batch (see :class:`cep.run_config.Output`)."""
    return (output.path is not None and output.fmt == "jsonl" and not is_uri_output(output.path)
            and os.path.splitext(output.path)[1].lower() in (".jsonl", ".json", ".ndjson"))


def _is_directory(output: Output) -> bool:
    """A directory of parts, one per batch and engine."""
    return output.path is not None and not _is_file(output) and not is_uri_output(output.path)


def run_on_spark(module: ir.CompiledModule, config: RunConfig,
                 stop: threading.Event | None = None,
                 on_workdir: Callable[[Path], None] | None = None) -> RunResult:
    """Run the module over ``config``'s inputs on Spark, writing events as batches
    complete (the fields are described in :class:`cep.run_config.RunConfig`). ``stop``
    ends a followed run as SIGINT and SIGTERM do. ``on_workdir`` is told the run
    directory (a temporary one without a checkpoint) once it exists, before Spark
    starts: a live view (``cep.ui``) serves it. This only writes events: handing them
    back (``Output(collect=True)``) is :func:`cep.run.run`'s, which reads them back."""
    started = time.perf_counter()
    sources = parse_input_specs(module, list(config.inputs))
    output, engines, follow = config.output, config.engines, config.follow
    strategy, master, checkpoint = config.strategy, config.master, config.checkpoint
    mongo_uri, mongo_timeout = config.mongo_uri, config.mongo_timeout
    batch_size = config.batch_size or DEFAULT_BATCH_SIZE
    if output.collect:
        raise ValueError("Output(collect=True) needs the run entry, which reads events back")
    try:
        check_chain(module)
        # the user functions the rules call, for the workers, with their time limit
        udfs = dataclasses.replace(shipment_for(module), timeout=config.udf_timeout)
    except (ChainError, UdfShipError) as err:
        raise SparkRunError(str(err)) from None
    if strategy not in ("kg", "pkg") and mongo_uri is None and not is_local_master(master):
        raise SparkRunError(
            f"strategy {strategy} moves key state through MongoDB, and the embedded server "
            f"on 127.0.0.1 is unreachable from executors of {master}: pass --mongo-uri")
    if not mongo_timeout > 0:
        raise SparkRunError(f"the MongoDB time-out must be positive, got {mongo_timeout}")
    if output.fmt == "parquet" and (output.path is None or is_uri_output(output.path)):
        raise SparkRunError("--format parquet needs --output DIR")
    with contextlib.ExitStack() as cleanup:
        if any(uri.startswith("kafka://embedded/") for uri in [*sources.values(),
                                                                output.path or ""]):
            if not is_local_master(master):
                raise SparkRunError("kafka://embedded is a broker on 127.0.0.1: it needs a "
                                    "local master; give a cluster a real Kafka")
            cleanup.enter_context(embedded_broker())
        expected = _expected_events(sources, follow, config.starting_offsets)
        workdir = (Path(checkpoint) if checkpoint
                   else Path(tempfile.mkdtemp(prefix="cep-run-")))
        if not checkpoint:
            cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
        if config.autoscale is not None and (strategy == "pkg" or module.stages):
            raise SparkRunError(
                "--engines auto changes the engine count, which "
                + ("PKG cannot (it splits keys: no key map to scale)" if strategy == "pkg"
                   else "an INSERT INTO chain cannot (its later stages keep their keys)")
                + ": give a fixed --engines N")
        # a job that may scale gets a partition per engine up to its most (on a local
        # master up to its task slots): engines beyond the partitions add no cores
        most = config.autoscale[1] if config.autoscale is not None else engines
        run_id, partitions, layout = run_manifest(workdir, engines, strategy, sources,
                                               engine_partitions(most, master),
                                               chained=bool(module.stages),
                                               hash=config.hash,
                                               scalable=config.autoscale is not None)
        try:
            ChangeLog(workdir).begin(module)  # rules deployed later compose onto these
        except ChangeLogError as err:
            raise SparkRunError(str(err)) from None
        book = RuleBook(str(workdir), module)
        scale_log = ScaleLog(workdir)
        if layout.rescale:  # a restart with other --engines: a scale request, then noted
            scale_log.request(engines, "restart")
            record_rescale(workdir, engines, layout)
        if on_workdir is not None:
            on_workdir(workdir)
        events_to = None
        if is_uri_output(output.path):
            assert output.path is not None
            try:
                events_to = publisher(output.path, run_id,
                                      max(1, round(mongo_timeout * 1000)))
            except (KafkaTransportError, StoreError, ValueError) as err:
                raise SparkRunError(str(err)) from None
            cleanup.callback(events_to.close)
        store, hooks = None, []
        if strategy == "kg" and not layout.maps:
            engine_of = key_grouping(engines, layout.hash)
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
            balancer = Balancer(store, strategy, layout.initial, config.threshold,
                                config.stat_window, capacity=config.capacity,
                                load=config.load, moves=config.moves, hash=layout.hash,
                                engines_at=None if module.stages else _requested(scale_log),
                                partitions=partitions)
            try:
                balancer.prepare()
                if layout.kg_maps is not None:  # key grouping routed by maps from then on
                    write_kg_maps(store, *layout.kg_maps, layout.hash)
                check_resumable(store, workdir)
            except StoreError as err:
                raise SparkRunError(_store_failure(f"{type(err).__name__}: {err}", workdir,
                                                   checkpoint)) from None
            if config.autoscale is not None:  # before the Balancer: its map t+2 follows
                hooks.append(autoscale_hook(config.autoscale, config.autoscale_band,
                                            scale_log, bounded=not follow))
            hooks += [balancer, ScaleHook(workdir, partial(record_engines_now, workdir))]
            engine_of = map_grouping(store)
            if not checkpoint:
                cleanup.callback(_drop_run, store)
        # MongoDB is checked (prepare) before Spark starts, so a bad URI fails in seconds
        session_started = time.perf_counter()
        if config.progress:  # Spark takes seconds to start: say so before the first batch
            print(f"cep: starting Spark ({master}, {engines} engines)", file=sys.stderr,
                  flush=True)
        try:
            spark = spark_session(master, partitions, config.verbose, conf=config.spark_conf)
        except PySparkRuntimeError as err:  # the JVM did not start: a bad option, no java
            raise SparkRunError(f"Spark's JVM did not start ({err.getCondition()}); its own "
                                f"message is above or in {SPARK_LOG}") from None
        session_s = time.perf_counter() - session_started
        if is_local_master(master):
            warm_up(spark)  # workers and RocksDB, while the query plans
        # routed by key maps, the job knows the labels of MAX_ENGINES engines (engine e
        # in partition e mod P, its label the same whatever the count: stage_labels),
        # and each batch runs the engines of its map (routing.map_grouping), so a scale
        # change needs no new query; else every engine runs each batch
        scalable = store is not None and not module.stages
        labels = stage_labels(MAX_ENGINES if scalable else engines, len(module.stages) + 1,
                              partitions)
        order = output_order([v.module for v in book.versions()])  # grows as rules come
        parts = EventParts(output.path if _is_directory(output) else str(workdir / "parts"),
                           output.fmt)
        delivery = Delivery(parts, order, workdir,
                            events_file=Path(output.path) if _is_file(output) else None,
                            stdout=output.path is None and output.callback is None,
                            callback=output.callback, publisher=events_to,
                            dead_file=Path(config.dead_letter) if config.dead_letter else None,
                            metrics_file=(Path(config.metrics_file) if config.metrics_file
                                          else None),
                            transient_parts=not _is_directory(output),
                            lag=len(module.stages))
        first_batch = next_batch(workdir)  # 0, or where a restart resumes
        done = sum(m["events_in"] for m in read_metrics(workdir) if m["batch"] < first_batch)
        settings = {"strategy": strategy, "threshold": config.threshold, "engines": engines,
                    "hash": layout.hash,
                    **({"autoscale": list(config.autoscale),
                        "autoscale_band": list(config.autoscale_band)}
                       if config.autoscale else {}),
                    "load": config.load, "moves": config.moves,
                    "batch_size": batch_size, "follow": follow,
                    **_described(module, sources, output, config.dead_letter,
                                 config.metrics_file, master, run_id)}
        sink = BatchSink(workdir, engines, settings, delivery,
                         Progress(expected, config.progress, done=done),
                         # the input's lag first: the autoscale policy reads it
                         [RuleVersionsHook(book, order), InputProgress(workdir, sources),
                          *hooks])
        kept: deque[dict] = deque(maxlen=METRICS_KEPT)
        sink.hooks.append(lambda _batch, _stats, metrics: kept.append(metrics))
        max_record_bytes = (MAX_RECORD_BYTES if config.max_record_bytes is None
                            else config.max_record_bytes)
        ship_udf_files(spark, udfs.files)
        slots = max(1, spark.sparkContext.defaultParallelism)
        # the input's tasks per batch: a slot each, and at least a partition each, so
        # that a job on fewer nodes than its partitions (a cluster that grows with
        # ``cep scale``) spreads its input over the nodes that join (Spark counts the
        # slots once, here); docs/guide.md#scaling-a-running-job
        source = SourceConfig(sources, str(workdir), follow, batch_size,
                              max(slots, partitions), max_record_bytes,
                              config.starting_offsets, config.late, udfs,
                              config.idle_timeout_s)
        spark.dataSource.register(input_source(source, module, labels, engine_of))
        source.stop_file.unlink(missing_ok=True)
        processor = EngineProcessor(module, labels, parts, store, dict(config.slowdown),
                                    source.chain, config.late, source.dead_dir, udfs,
                                    str(source.log_dir), str(workdir))
        result = (spark.readStream.format(SOURCE_NAME).load().groupBy("engine")
                  .transformWithStateInPandas(processor, OUTPUT_SCHEMA, "Append", "None"))
        writer = (result.writeStream.foreachBatch(sink)
                  .option("checkpointLocation", str(workdir / "checkpoint")))
        writer = (writer.trigger(processingTime=f"{config.trigger_s} seconds") if follow
                  else writer.trigger(availableNow=True))
        query_wall = time.time()
        try:
            query = run_restarting(
                writer.start,
                lambda q: _await(q, source.stop_file, workdir, stop, len(module.stages)),
                lambda: next_batch(workdir))
        except Exception as err:
            raise SparkRunError(_failure(err, store, workdir, checkpoint)) from err
        finally:
            source.stop_file.unlink(missing_ok=True)
        metrics = list(kept)
        _add_spark_times(metrics, query.recentProgress)
        first = metrics[0]["wall_time"] - query_wall if metrics else 0.0
        totals = {**sink.totals, "late_dropped": (sink.totals.get("late_events", 0)
                                                  if config.late == "drop" else 0)}
        return RunResult(metrics=metrics, totals=totals, session_s=session_s,
                         first_batch_s=max(first, 0.0),
                         seconds=time.perf_counter() - started,
                         workdir=workdir if checkpoint else None, slots=slots)


QUERY_RESTARTS = 3  # a query stopped by lost executors starts again, at most this often


def lost_executor(err: BaseException) -> bool:
    """Whether Spark stopped the query because a batch lost an executor's shuffle output
    (a node left or died) and the stage that made it cannot be run again: cep's input
    stage reads a batch's records by their planned offsets, which Spark counts as an
    indeterminate output, so it aborts the job rather than rerun only part of it. The
    batch never committed, so the query started again from its checkpoint runs it whole,
    exactly once, as after a restart of the process."""
    return "indeterminate output" in str(err)


def run_restarting(start, wait, batch_now, restarts: int = QUERY_RESTARTS):
    """Start the query (``start``) and ``wait`` for it; a query that stopped because it
    lost an executor (:func:`lost_executor`) is started again from its checkpoint, at
    most ``restarts`` times, with a line naming the batch (``batch_now``) on standard
    error. Returns the query that ended; any other failure, or one more, is raised."""
    for restart in range(restarts + 1):
        query = start()
        try:
            wait(query)
            return query
        except Exception as err:
            if restart == restarts or not lost_executor(err):
                raise
            print(f"cep: an executor was lost while batch {batch_now()} ran and Spark "
                  "cannot rerun its input stage; the query starts again from its "
                  "checkpoint at that batch", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")  # the loop returns or raises


def _described(module: ir.CompiledModule, sources: dict[str, str], output: Output,
               dead_letter: str | None, metrics_file: str | None, master: str,
               run_id: str) -> dict:
    """What a run's settings say besides its numbers, so its metrics alone tell what
    it ran (``cep ui``, ``cep report``): rule file and rules, inputs and where the events,
    dead letters and metrics go (URIs with their passwords masked)."""
    return {"run_id": run_id, "rule_file": module.source_name, "rules": list(module.outputs),
            "master": master,
            "inputs": {stream: mask_uri(src) for stream, src in sources.items()},
            "output": ("Python callback" if output.callback is not None
                       else mask_uri(output.path) if output.path else "standard output"),
            "format": output.fmt, "dead_letter": dead_letter, "metrics_file": metrics_file}


def _expected_events(sources: dict[str, str], follow: bool, starting_offsets: str
                     ) -> int | None:
    """A bounded input's size in events (estimated for text files from their bytes), for
    the progress line; also fails fast, before Spark starts, on inputs that do not
    exist (or brokers that do not answer). Only listings, file sizes, the first 64 KiB of
    each file and Kafka partitions' ends are read."""
    log = InputLog(None, sources, follow, starting_offsets)
    try:
        log.discover(first=True)
    except (InputLogError, KafkaTransportError, ValueError) as err:
        raise SparkRunError(str(err)) from None
    return None if follow else round(log.total_units())


def _await(query, stop_file: Path, workdir: Path, stop: threading.Event | None,
           lag: int = 0) -> None:
    """Wait for the query to end by itself (a bounded input consumed) or for a stop
    (SIGINT, SIGTERM, ``stop``): then read no new input, let the batch in flight (and,
    in an INSERT INTO chain, the ``lag`` batches its later stages need) commit, and stop
    the query. A second SIGINT/SIGTERM interrupts at once. Raises the query's error if
    it failed."""
    requested = stop or threading.Event()
    handlers = {}

    def on_signal(signum, frame) -> None:
        if requested.is_set():  # asked twice: stop now (a --checkpoint run can resume)
            raise KeyboardInterrupt
        requested.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, on_signal)
    try:
        while query.isActive:
            with contextlib.suppress(Exception):  # a failure is raised below, once
                query.awaitTermination(0.5)
            if requested.is_set():
                stop_file.touch()
                if _idle(query, workdir, lag):
                    query.stop()
                    break
        error = query.exception()
        if error is not None:
            raise error
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _idle(query, workdir: Path, lag: int) -> bool:
    """No trigger running, every planned batch committed and, in a chain, the later
    stages drained (the last planned offset counts ``lag`` batches without input)."""
    if query.status.get("isTriggerActive"):
        return False
    offsets = workdir / "checkpoint" / "offsets"
    planned = max((int(p.name) for p in offsets.glob("*") if p.name.isdigit()), default=-1)
    if planned >= next_batch(workdir):
        return False
    return planned < 0 or not lag or drained(offsets / str(planned), lag)


def _add_spark_times(metrics: list[dict], progress: list) -> None:
    """Add Spark's own per-batch times (milliseconds, from the query's progress reports)
    to the metrics of the batches this process ran: ``trigger`` the batch's wall time,
    ``planning``, ``state_commit`` summed over the engines' state stores, and the
    trigger's other parts (``latest_offset``, ``get_batch``, ``wal_commit``: the offsets
    log; ``add_batch``: the batch's job, cep's sink included; ``commit_offsets``: the
    commit log), so that Spark's fixed cost per micro-batch can be told from the work."""
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
            **{name: durations.get(key, 0) for name, key in SPARK_PARTS.items()},
        }
        entry["state_store"] = _state_store_figures(info.get("stateOperators", []))


def _state_store_figures(operators: list[dict]) -> dict[str, float]:
    """The engines' state stores' own figures for a batch, summed over the operators:
    Spark's times (``allUpdatesTimeMs``, ``allRemovalsTimeMs``, ``commitTimeMs``) and
    the provider's custom metrics (RocksDB's commit, flush, sync and load times in ms),
    so that a batch's time in the state store can be told from the rest of a task."""
    figures: dict[str, float] = {}
    for op in operators:
        parts = {k: op.get(k) for k in ("allUpdatesTimeMs", "allRemovalsTimeMs",
                                        "commitTimeMs")}
        for name, value in [*parts.items(), *(op.get("customMetrics") or {}).items()]:
            if isinstance(value, int | float) and not isinstance(value, bool):
                figures[name] = figures.get(name, 0) + value
    return figures


def _requested(log: ScaleLog) -> Callable[[int], int | None]:
    """The Balancer's ``engines_at``: the count of the newest scale request, read when
    it decides a map (None: none asked, the maps' count stays)."""

    def engines_at(_version: int) -> int | None:
        latest = log.latest()
        return None if latest is None else latest.engines

    return engines_at


def autoscale_hook(bounds: tuple[int, int], band: tuple[float, float], log: ScaleLog,
                   bounded: bool = False) -> AutoscaleHook:
    """``--engines auto:LO-HI``'s hook: the policy (``splitter.autoscale``) after each
    batch; its decisions are scale requests (``by: auto``, with the reason), which the
    Balancer applies as it applies ``cep scale``'s."""

    def latest() -> int | None:
        request = log.latest()
        return None if request is None else request.engines

    def request(engines: int, reason: str) -> int:
        number = log.request(engines, "auto", reason)
        print(f"cep: --engines auto asks for {engines} engines (request {number}): "
              f"{reason}", file=sys.stderr, flush=True)
        return number

    return AutoscaleHook(Autoscaler(*bounds, upper=band[1], lower=band[0], bounded=bounded),
                         request, latest)


def _drop_run(store: StateStore) -> None:
    """Best effort: after a failed run MongoDB may be the thing that is down, and its
    error must not replace the run's own. Leftovers of a random run id harm nobody."""
    with contextlib.suppress(StoreError):
        store.drop_run()


def _failure(err: Exception, store: StateStore | None, workdir: Path,
             checkpoint: str | None) -> str:
    """One line for a failed query (Spark's message holds whole stack traces). A failure
    of no kind cep names ends with where Spark's own log is, which holds the traces
    (``session.proxy_errors_to_log``)."""
    line = _one_line(err)
    if line.startswith(_KAFKA_ERRORS):
        message = line.partition(": ")[2]
        again = (f"checkpoint {checkpoint} is intact: run the same command again once "
                 "Kafka is back" if checkpoint
                 else "with --checkpoint DIR a rerun resumes instead of starting over")
        return f"batch {next_batch(workdir)} failed: {message} ({again})"
    if store is not None and mask_uri(store.uri) in line:
        return _store_failure(line, workdir, checkpoint)
    if line.startswith(_CEP_ERRORS):
        return line
    return f"{line} (Spark's log: {SPARK_LOG})"


def _store_failure(line: str, workdir: Path, checkpoint: str | None) -> str:
    """A MongoDB failure, ``"<StoreError subclass>: <message naming the masked URI>"``,
    as the batch it stopped and what to do: the user sees where and why at once."""
    kind, _, message = line.partition(": ")
    fix = "once MongoDB is back" if kind == "MongoUnavailableError" else "once that is fixed"
    again = (f"checkpoint {checkpoint} is intact: run the same command again {fix}"
             if checkpoint else "with --checkpoint DIR a rerun resumes instead of starting over")
    return f"batch {next_batch(workdir)} failed: {message} ({again})"


def read_metrics(workdir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((workdir / "metrics").glob("*.json"))]


def _one_line(err: Exception) -> str:
    """The line that says what went wrong, out of Spark's message (which wraps a Python
    worker's whole traceback, Java frames and the query's plan): cep's own errors
    first, else the last ``SomethingError: …`` line of the Python traceback."""
    text = str(err).split("=== Streaming Query ===")[0]
    for marker in _CEP_ERRORS:
        idx = text.rfind(marker)
        if idx >= 0:
            return text[idx:].splitlines()[0][:500]
    lines = [line.strip() for line in text.splitlines()]
    raised = [line for line in lines if _RAISED.match(line)
              and not line.startswith(("org.apache", "java.", "py4j", "pyspark.errors"))]
    if raised:
        return raised[-1][:500]
    return lines[0][:500] if lines else type(err).__name__


_KAFKA_ERRORS = ("KafkaUnavailableError", "KafkaTransportError")
# cep's own errors: their line says what to do, and no trace helps more
_CEP_ERRORS = ("MongoUnavailableError", "StoreError", "MissingStateError",
               "MissingKeyMapError", "RuleError", *_KAFKA_ERRORS, "InputLogError")
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): \S")
