"""cep's inputs as a Spark stream: a Python Data Source reader over the input log.

Planning runs where Spark runs a Python source's planning (a Python process next to the
driver's JVM): it lists the inputs into the log (``cep.io.inputlog``), turns
``--batch-size`` events into an end offset per micro-batch, and cuts a batch into pieces
on a fixed grid. It never reads a record. Executors do the rest, in parallel: each task
reads its pieces (``read_range`` for files, the generator's ``tweets_range``), runs the
stateless rules, computes keys and routes every row to its engine (``routing.py``), and
emits one ``(engine, payload)`` row per engine. Reading and routing share one task, so
rows cross from Python to the JVM once, already sorted by engine.

Offsets are ``{"n": batches so far, "seg": segment, "pos": position in it}``. ``n`` is
the batch id of the batch that starts at the offset (Spark starts a batch only when the
end offset differs from the start, and a replay re-plans from the logged offsets), so a
task knows its batch (for the key map, its dead-letter file, its part of the output).

INSERT INTO chains (``chain.py``): batch B also has one task per later stage, which
reads the chain rows batch B-1 left for it. A chain's offsets add ``"idle"``: how many
batches in a row have read no input. While it is below the number of later stages, a
later stage still has events of the last input to process, so the source plans one more
batch (same input position, ``n`` + 1) even with no new input and after a stop: a
bounded run ends, and a stop takes effect, only when the last stage has drained.

Bad records go to a dead-letter file per piece, ``dead/batch-B/<segment>-<position>.jsonl``,
written by the executor that read them; the piece grid makes those names the same in a
replay, so a replay rewrites them instead of adding to them.

Stopping: the driver creates ``stop_file``; from then on no new batch is planned, the one
in flight finishes and commits.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from cep.engine.table import Table, concat
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import InputLog, Segment
from cep.io.inputs import frame_to_table, read_segment
from cep.lang import ir
from cep.spark.chain import ChainParts
from cep.spark.routing import KeyRouter, key_grouping, route_part

ROUTED_SCHEMA = "engine int, payload binary"
SOURCE_NAME = "cep_input"


@dataclass(frozen=True)
class SourceConfig:
    """What the source needs to know, planning and reading (pickled to both)."""

    sources: dict[str, str]  # input stream -> path, directory, glob or generator spec
    workdir: str
    follow: bool
    batch_size: int  # events per micro-batch (estimated for text files, from bytes)
    tasks: int  # tasks a batch is spread over
    max_record_bytes: int
    starting_offsets: str = "earliest"  # where a Kafka partition's first read begins

    @property
    def log_dir(self) -> Path:
        return Path(self.workdir) / "input"

    @property
    def stop_file(self) -> Path:
        return Path(self.workdir) / "stop"

    @property
    def chain(self) -> ChainParts:
        return ChainParts(os.path.join(self.workdir, "chain"))

    def dead_path(self, batch: int, segment: Segment, lo: int) -> str:
        return os.path.join(self.workdir, "dead", f"batch-{batch:07d}",
                            f"{segment.ordinal:012d}-{lo:015d}.jsonl")


class InputReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets and planning over the input log, reading and routing on executors."""

    def __init__(self, config: SourceConfig, module: ir.CompiledModule,
                 labels: list[list[int]], engine_of: KeyRouter) -> None:
        self.config = config
        self.module = module
        self.stages = module.stage_modules()
        self.drain = len(self.stages) - 1  # batches a later stage lags behind the input
        self.labels = labels  # [stage][engine]
        self.engine_of = engine_of  # stage 0's routing (later stages: key grouping)
        self._log: InputLog | None = None  # made where planning runs, never on executors
        self._target: tuple[int, int] | None = None

    # ------------------------------------------------------------------ planning

    def log(self) -> InputLog:
        if self._log is None:
            self._log = InputLog(self.config.log_dir, self.config.sources, self.config.follow,
                                 self.config.starting_offsets)
            self._log.discover(first=True)
        return self._log

    def initialOffset(self) -> dict:
        return self._offset(0, (0, 0), self.drain)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.config.batch_size)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.log().end_offset()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """About ``batch_size`` events on from ``start`` (the batch size is cep's own
        bound, whatever ``limit`` Spark passes: a batch never holds the whole input)."""
        log = self.log()
        here = (start["seg"], start["pos"])
        stopping = self.config.stop_file.exists()
        if self.config.follow and not stopping:
            log.discover()
        end = here if stopping else log.advance(*here, budget=self.config.batch_size,
                                                stop=self._target)
        idle = 0 if end != here else min(self.drain, start.get("idle", 0) + 1)
        if end == here and start["n"] and start.get("idle", 0) >= self.drain:
            return start
        # Spark runs its first batch whatever this returns (it has no earlier offset to
        # compare with), so an empty first batch is numbered too: n stays Spark's batch id
        return self._offset(start["n"] + 1, end, idle)

    def _offset(self, n: int, at: tuple[int, int], idle: int) -> dict:
        offset = {"n": n, "seg": at[0], "pos": at[1]}
        if self.drain:  # no "idle" without a chain: offsets of older runs stay valid
            offset["idle"] = idle
        return offset

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        pieces = list(self.log().pieces((start["seg"], start["pos"]), (end["seg"], end["pos"])))
        tasks = max(1, min(self.config.tasks, len(pieces)))
        units = np.array([(p.hi - p.lo) / p.segment.unit for p in pieces])
        # consecutive pieces, about equal records per task
        cuts = np.searchsorted(np.cumsum(units), np.arange(1, tasks) * units.sum() / tasks)
        groups = [g for g in np.split(np.arange(len(pieces)), cuts) if len(g)]
        if self.drain and not groups:
            groups = [np.arange(0)]  # stage 0's engines run too (keys may move)
        batch = start["n"]
        return [InputPartition({"batch": batch, "pieces": [
            (pieces[i].segment.to_json(), pieces[i].lo, pieces[i].hi) for i in group]})
            for group in groups] + [InputPartition({"batch": batch, "stage": stage})
                                    for stage in range(1, len(self.stages))]

    def commit(self, end: dict) -> None:
        self.log().forget_before(end["seg"])
        if self.drain:  # batch end["n"] - 1 committed: its inputs are never read again
            self.config.chain.drop_through(end["n"] - 2)

    # ------------------------------------------------------------------ executors

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task = partition.value
        if "stage" in task:
            yield _record_batch(self._read_chain(int(task["batch"]), int(task["stage"])))
            return
        yield _record_batch(self._read_input(task))

    def _read_chain(self, batch: int, stage: int) -> list[tuple[int, bytes]]:
        """A later stage's task: the complex events the stage before made in the previous
        batch, through the stage's stateless rules, keyed and routed to its engines."""
        started = time.perf_counter()
        events = self.config.chain.events(self.module, batch, stage)
        info = {"read": time.perf_counter() - started}
        labels = self.labels[stage]
        return route_part(self.stages[stage], events, labels, key_grouping(len(labels)),
                          batch, info)

    def _read_input(self, task: dict) -> list[tuple[int, bytes]]:
        batch = int(task["batch"])
        started = time.perf_counter()
        parts: dict[str, list[Table]] = {name: [] for name in self.module.input_streams}
        info: dict[str, float] = {"dead": 0, "blank": 0, "truth": 0}
        truth: list[np.ndarray] = []
        for text, lo, hi in task["pieces"]:
            segment = Segment.from_json(text)
            table, flags = self._read_piece(batch, segment, lo, hi, info)
            parts[segment.stream].append(table)
            if flags is not None:
                truth.append(table["__seq"][flags])
        tables = {name: concat(tabs) for name, tabs in parts.items() if tabs}
        info["read"] = time.perf_counter() - started
        info["truth"] = sum(len(t) for t in truth)
        return route_part(self.stages[0], tables, self.labels[0], self.engine_of, batch, info,
                          np.concatenate(truth) if truth else None)

    def _read_piece(self, batch: int, segment: Segment, lo: int, hi: int,
                    info: dict[str, float]) -> tuple[Table, np.ndarray | None]:
        """One piece as an engine table with its sequence numbers, and (for a generator
        with a ground truth) which of its rows are first stories."""
        stream = self.module.streams[segment.stream]
        dead_path = self.config.dead_path(batch, segment, lo)
        os.makedirs(os.path.dirname(dead_path), exist_ok=True)
        with DeadLetter(dead_path) as dead:
            frame, flags = read_segment(segment, lo, hi, stream, dead,
                                        self.config.max_record_bytes)
        info["dead"] += dead.count
        info["blank"] += dead.skipped
        return frame_to_table(frame, stream), flags


def _record_batch(rows: list[tuple[int, bytes]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([label for label, _ in rows], pa.int32()),
         pa.array([payload for _, payload in rows], pa.binary())],
        names=["engine", "payload"])


def input_source(config: SourceConfig, module: ir.CompiledModule, labels: list[list[int]],
                 engine_of: KeyRouter) -> type[DataSource]:
    """A Data Source class for one run (registered with ``spark.dataSource.register``;
    Spark ships it, with the compiled rules, to the processes that plan and read)."""

    class CepInput(DataSource):
        @classmethod
        def name(cls) -> str:
            return SOURCE_NAME

        def schema(self) -> str:
            return ROUTED_SCHEMA

        def streamReader(self, schema) -> DataSourceStreamReader:
            return InputReader(config, module, labels, engine_of)

    return CepInput
