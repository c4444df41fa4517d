"""What the input source's tasks do on executors: read, route, hand rows to Spark.

Split from ``source.py`` so that the processes which only plan (Spark starts three of
them before the first batch: the source's creation, its streaming runner, the read
planner) never import this module's pandas-heavy readers and routers; a task that reads
imports them when it starts (``InputReader.read``).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from cep.engine.table import SEQ, SUB, Table, concat, empty
from cep.engine.udf.shipment import install_udfs
from cep.engine.udf_errors import UdfFailure, collecting
from cep.io.deadletter import DeadLetter
from cep.io.event_time import ClockPiece
from cep.io.inputlog import Segment
from cep.io.inputs import frame_to_table, kafka_fetch, read_segment
from cep.io.udf_letters import write_udf_letters
from cep.spark.inputs.config import SourceConfig
from grammar import ir
from grammar.field_reads import unread_fields
from splitter.routing import KeyRouter, key_grouping, route_part

if TYPE_CHECKING:
    from cep.io.kafka_input import KafkaFetch

Routed = list[tuple[int, bytes]]  # (engine label, payload) for every engine


def read_chain(config: SourceConfig, module: ir.CompiledModule, stage_module: ir.CompiledModule,
               labels: list[int], batch: int, stage: int, version: int = 0) -> Routed:
    """A later stage's task: the complex events the stage before made in the previous
    batch, through the stage's stateless rules (``stage_module``), keyed and routed to
    its engines, which are told the rule set ``version`` of those events' input."""
    install_udfs(config.udfs)
    started = time.perf_counter()
    events = config.chain.events(module, batch, stage)
    watermark = config.chain.watermark(batch, stage)
    info = {"read": time.perf_counter() - started}
    with collecting() as failures:
        routed = route_part(stage_module, events, labels, key_grouping(len(labels)), batch,
                            info, time_info=("watermark", watermark, version))
    _write_failures(config, module, batch, f"stage-{stage}", failures)
    return routed


def read_input(config: SourceConfig, module: ir.CompiledModule, labels: list[int],
               engine_of: KeyRouter, task: dict, version: int = 0,
               reading: ir.CompiledModule | None = None) -> Routed:
    """An input task: its pieces read, through the stateless rules of ``module`` (stage
    0's of rule set ``version``, which the engines are told), keyed and routed by
    ``engine_of``. ``reading``: the rule set's module with the input fields some rule
    reads (``grammar.field_reads.reading_module``): the others are checked (a bad value
    still makes its record a dead letter) but never made into columns, so neither the
    transfer to the JVM, the shuffle nor the engines carry them. A rule deployed later
    that reads another field gets it from its first batch on: it starts with empty
    state, and a carried rule reads no field its old form did not
    (``grammar.rule_set.carried_rules``). By default every field."""
    install_udfs(config.udfs)
    reading = reading or module
    batch = int(task["batch"])
    engines_at = getattr(engine_of, "engines_at", None)
    if engines_at is not None:  # routed by key maps: the engines of this batch's map
        labels = labels[:engines_at(batch)]
    maps_for = getattr(engine_of, "maps_for", None)  # the maps the engines will read
    started = time.perf_counter()
    parts: dict[str, list[Table]] = {name: [] for name in module.input_streams}
    info: dict[str, float] = {"dead": 0, "blank": 0, "truth": 0}
    truth: list[np.ndarray] = []
    clock: list[tuple] = []  # what each piece tells the watermark (every engine gets it)
    segments: list[str] = []  # where late events' dead letters read them back
    pieces = [(text, Segment.from_json(text), lo, hi) for text, lo, hi in task["pieces"]]
    # one fetch per Kafka partition, not one per piece
    fetched = kafka_fetch([(segment, lo, hi) for _, segment, lo, hi in pieces])
    for text, segment, lo, hi in pieces:
        stream = module.streams[segment.stream]
        if segment.end == segment.start:  # a mark (idle, or a partition joins), no records
            clock.append(ClockPiece.of(segment, lo, None, stream).plain())
            continue
        segments.append(text)
        kept = reading.streams[segment.stream]
        table, flags = _read_piece(config, stream, kept,
                                   unread_fields(module, reading, segment.stream), batch,
                                   segment, lo, hi, info, fetched)
        parts[segment.stream].append(table)
        clock.append(ClockPiece.of(segment, lo, table, kept).rises().plain())
        if flags is not None:
            truth.append(table[SEQ][flags])
    # a stream without records this task: no rows, the fields its rules read (as the
    # local runner's chunks have it), not the schema's every field
    tables = {name: concat(tabs) or empty(list(reading.streams[name].fields), (SEQ, SUB))
              for name, tabs in parts.items()}
    info["read"] = time.perf_counter() - started
    info["truth"] = sum(len(t) for t in truth)
    time_info = ("pieces", clock, bool(task.get("final")), int(task.get("end_seq", 0)),
                 version)
    with collecting() as failures:
        routed = route_part(module, tables, labels, engine_of, batch, info,
                            np.concatenate(truth) if truth else None, time_info,
                            late=(config.late == "drop", segments),
                            maps=maps_for(batch) if maps_for is not None else None)
    first = task["pieces"][0] if task["pieces"] else None
    name = (f"{Segment.from_json(first[0]).ordinal:012d}-{int(first[1]):015d}"
            if first is not None else "none")
    _write_failures(config, module, batch, name, failures)
    return routed


def _write_failures(config: SourceConfig, module: ir.CompiledModule, batch: int, name: str,
                    failures: list[UdfFailure]) -> None:
    """Task ``name``'s user-function failures as its piece of the batch's dead letters
    (the driver counts them as it appends them: ``sink.Delivery.dead_letters``)."""
    write_udf_letters(config.udf_dead_path(batch, name), module, str(config.log_dir),
                      failures)


def _read_piece(config: SourceConfig, stream: ir.StreamDef, kept: ir.StreamDef,
                unread: frozenset[str], batch: int, segment: Segment, lo: int, hi: int,
                info: dict[str, float], fetched: KafkaFetch | None = None
                ) -> tuple[Table, np.ndarray | None]:
    """One piece as an engine table of ``kept``'s fields (``stream``'s are checked,
    ``unread`` the ones left out) with its sequence numbers, and (for a generator with a
    ground truth) which of its rows are first stories."""
    dead_path = config.dead_path(batch, segment, lo)
    os.makedirs(os.path.dirname(dead_path), exist_ok=True)
    with DeadLetter(dead_path) as dead:
        frame, flags = read_segment(segment, lo, hi, stream, dead, config.max_record_bytes,
                                    fetched, unread)
    info["dead"] += dead.count
    info["blank"] += dead.skipped
    return frame_to_table(frame, kept), flags


def record_batch(rows: Routed) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([label for label, _ in rows], pa.int32()),
         pa.array([payload for _, payload in rows], pa.binary())],
        names=["engine", "payload"])
