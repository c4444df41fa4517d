"""The one way to run a rule module: :func:`run` with a :class:`~cep.run_config.RunConfig`,
for the command line, the Python API, ``cep verify`` and the benches alike.

The runner named in the configuration does the work: ``local`` is the reference
evaluator in this process (a bounded input, read whole), ``spark`` the Spark runtime
(:func:`cep.spark.runtime.run_on_spark`), imported only when a run asks for it (pyspark's
driver side takes about a second to import). Both
hand back a :class:`~cep.run_config.RunResult` with the same totals, output rows per
rule and detection quality, so whoever runs need not know which runner ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from cep.engine.output import output_lines, output_records
from cep.engine.udf_errors import collecting
from cep.engine.udf_isolation import configured
from cep.io.deadletter import DeadLetter
from cep.io.event_time import end_of_log
from cep.io.input_chunks import Chunk, read_ahead, read_chunks
from cep.io.inputlog import GENERATOR_KINDS
from cep.io.inputs import InputError, input_segments
from cep.io.late_letters import add_late_letters
from cep.io.readers.reader import MAX_RECORD_BYTES
from cep.io.sinks import write_lines, write_metrics, write_records
from cep.io.udf_letters import add_udf_letters
from cep.local_runner import KeptRows, LineSink, stream_reference
from cep.quality import precision_recall, quality_from_metrics
from cep.run_config import Output, RunConfig, RunResult, is_uri_output
from grammar import ir
from grammar.field_reads import reading_module


def run(module: ir.CompiledModule, config: RunConfig,
        stop: threading.Event | None = None,
        on_workdir: Callable[[Path], None] | None = None) -> RunResult:
    """Run ``module`` as ``config`` says. ``stop`` ends a followed Spark run after the
    batch in flight, as SIGINT and SIGTERM do. ``on_workdir`` is told a Spark run's run
    directory once it exists (the live view serves it); the local runner writes none."""
    if config.runner == "local":
        if on_workdir is not None:
            raise InputError("a live view needs --runner spark (the reference runner "
                             "writes no per-batch metrics while it runs)")
        return _run_local(module, config)
    return _run_spark(module, config, stop, on_workdir)


def rule_order(module: ir.CompiledModule) -> dict[str, int]:
    """Each output rule's place in the reference order of events."""
    return {name: i for i, name in enumerate(module.outputs)}


def embedded_kafka_for(uris: Iterable[str]) -> contextlib.AbstractContextManager:
    """cep's own Kafka broker, for as long as the block runs, when one of ``uris`` names
    it (``kafka://embedded/TOPIC``); else nothing."""
    if any("kafka://embedded/" in uri for uri in uris):
        from cep.servers.kafka import embedded_broker  # Kafka's and MongoDB's clients

        return embedded_broker()
    return contextlib.nullcontext()


def _run_local(module: ir.CompiledModule, config: RunConfig) -> RunResult:
    """The reference evaluator over a bounded input, streamed (``cep.local_runner``):
    read a chunk at a time, its events written as each batch makes them; its metrics a
    row per batch (one without ``batch_size``), with the watermark, late events and
    what the engines hold after it."""
    started = time.perf_counter()
    output = config.output
    if config.follow:
        raise InputError("--follow needs --runner spark (the reference runner reads "
                         "a bounded input)")
    if is_uri_output(output.path):
        raise InputError("--output kafka:// and mongodb:// need --runner spark")
    if output.callback is not None:
        raise InputError("events handed over batch by batch need --runner spark")
    limit = MAX_RECORD_BYTES if config.max_record_bytes is None else config.max_record_bytes
    with embedded_kafka_for(config.inputs):
        segments = input_segments(module, list(config.inputs))
        end_seq = end_of_log(segments[-1].ordinal + 1) if segments else 0
        truth: list[np.ndarray] = []
        # dicts per event only where a caller needs them (see cep.local_runner)
        # the engines get the fields some rule reads; the reader checks the others
        reading = reading_module(module)
        kept = KeptRows(module) if (output.collect or output.fmt == "parquet" or any(
            s.kind in GENERATOR_KINDS for s in segments)) else None
        sink = (contextlib.nullcontext(kept) if kept is not None else
                LineSink(None if output.fmt == "console" else output.path))
        with DeadLetter(config.dead_letter) as read_dead, \
                collecting() as failures, configured(config.udf_timeout), sink as emit, \
                read_ahead(read_chunks(module, segments, read_dead, limit,
                                       reading=reading)) as ahead:
            # user functions that raised, hung or ended their process: dead letters
            chunks = _with_truth(ahead, truth)
            streamed = stream_reference(reading, chunks, end_seq, emit, config.batch_size,
                                        config.late)
        late = len(streamed.late["seq"])
        failed = 0
        if (late and config.late == "drop") or failures:
            by_ordinal = {s.ordinal: s for s in segments}
            with DeadLetter(config.dead_letter, append=True) as dead:
                if late and config.late == "drop":
                    add_late_letters(dead, module, by_ordinal, streamed.late)
                failed = add_udf_letters(dead, module, by_ordinal, failures)
    truth_ids = np.concatenate(truth) if truth else None
    records = None
    if kept is not None:
        table = kept.table()
        records = output_records(table) if (output.collect or output.fmt == "parquet"
                                            or truth_ids is not None) else None
        if not output.collect:
            if records is not None:
                write_records(records, output.path, output.fmt)
            else:
                write_lines(output_lines(table), None if output.fmt == "console"
                            else output.path)
    quality = (precision_recall(records, truth_ids)
               if truth_ids is not None else None)
    metrics = streamed.batches
    if config.metrics_file:
        write_metrics([*metrics, {"quality": quality}] if quality else metrics,
                      config.metrics_file)
    totals = {"events_in": streamed.events_in, "events_out": streamed.events_out,
              "dead_lettered": read_dead.count,
              "udf_failures": failed, "blank_lines": read_dead.skipped,
              "late_events": late, "late_dropped": late if config.late == "drop" else 0}
    return RunResult(metrics=metrics, totals=totals, seconds=time.perf_counter() - started,
                     outputs_per_rule=streamed.per_rule,
                     quality=quality, records=records if output.collect else None)


def _with_truth(chunks: Iterable[Chunk], truth: list[np.ndarray]) -> Iterator[Chunk]:
    """The chunks, a generator's ground truth (its first stories' ids) kept aside."""
    for chunk in chunks:
        truth.extend(chunk.truth)
        yield chunk


def _run_spark(module: ir.CompiledModule, config: RunConfig, stop: threading.Event | None,
               on_workdir: Callable[[Path], None] | None) -> RunResult:
    """Spark's runtime; events to be handed back go to a temporary directory of parts
    first, read back in reference order when the run is done."""
    from cep.spark.runtime import run_on_spark  # pyspark's driver side: only for Spark

    if config.output.collect:
        from cep.spark.output.delivery import read_output
        from cep.spark.output.event_parts import EventParts

        with tempfile.TemporaryDirectory(prefix="cep-run-events-") as out:
            result = run_on_spark(module, dataclasses.replace(config, output=Output(out)),
                                  stop, on_workdir)
            records = read_output(EventParts(out), rule_order(module))
    else:
        result, records = run_on_spark(module, config, stop, on_workdir), None
    per_rule = sum((Counter(m.get("outputs_per_rule", {})) for m in result.metrics),
                   Counter())
    return dataclasses.replace(
        result, outputs_per_rule=dict(per_rule), records=records,
        quality=quality_from_metrics(result.metrics, _id_rules(module)))


def _id_rules(module: ir.CompiledModule) -> list[str]:
    """Rules whose output has an ``id`` column: the detections a ground truth scores."""
    rules = [*module.derived, *module.stateful]
    return [r.name for r in rules
            if r.name in module.outputs and any(c.name == "id" for c in r.columns)]
