"""cep's inputs as a Spark stream: a Python Data Source reader over the input log.

Planning runs where Spark runs a Python source's planning (a Python process next to the
driver's JVM): it lists the inputs into the log (``cep.io.inputlog``), turns
``--batch-size`` events into an end offset per micro-batch, and cuts a batch into pieces
on a fixed grid. It never reads a record. Executors do the rest, in parallel: each task
reads its pieces (``read_range`` for files, the generator's ``tweets_range``), runs the
stateless rules, computes keys and routes every row to its engine (``splitter/routing.py``), and
emits one ``(engine, payload)`` row per engine. Reading and routing share one task, so
rows cross from Python to the JVM once, already sorted by engine.

Offsets are ``{"n": batches so far, "seg": segment, "pos": position in it}``. ``n`` is
the batch id of the batch that starts at the offset (Spark starts a batch only when the
end offset differs from the start, and a replay re-plans from the logged offsets), so a
task knows its batch (for the key map, its dead-letter file, its part of the output).

INSERT INTO chains (``chain_stages.py``): batch B also has one task per later stage, which
reads the chain rows batch B-1 left for it. A chain's offsets add ``"idle"``: how many
batches in a row have read no input. While it is below the number of later stages, a
later stage still has events of the last input to process, so the source plans one more
batch (same input position, ``n`` + 1) even with no new input and after a stop: a
bounded run ends, and a stop takes effect, only when the last stage has drained.

Bad records go to a dead-letter file per piece, ``dead/batch-B/<segment>-<position>.jsonl``,
written by the executor that read them; the piece grid makes those names the same in a
replay, so a replay rewrites them instead of adding to them.

The end of a bounded input: once a run without ``--follow`` has read its input to the
end, the source plans one more batch, offset ``"end": true`` at the same position, in
which every engine lets all time pass (``cep.engine.clock``: pending timers fire). A
stopped run never plans it: a stop is not the end of the input.

Stopping: the driver creates ``stop_file``; from then on no new batch is planned, the one
in flight finishes and commits.

Rules that change while the job runs (``rule_versions.py``): an offset may add
``"rules": v``, the rule set version of the batch that ends there; a change written to
the run directory's change log makes the next planned batch run it (a batch without
input if none came), and every task of a batch is told its version.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from cep.io.inputlog import SEQ_SHIFT, InputLog
from cep.io.rule_changes import RuleBook
from cep.spark.inputs.config import SourceConfig
from cep.spark.rule_versions import RulePlanner
from grammar import ir
from grammar.field_reads import reading_module

if TYPE_CHECKING:  # executors' modules (input_tasks.py): planning never imports them
    import pyarrow as pa

    from splitter.routing import KeyRouter

ROUTED_SCHEMA = "engine int, payload binary"
SOURCE_NAME = "cep_input"


class InputReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets and planning over the input log, reading and routing on executors."""

    def __init__(self, config: SourceConfig, module: ir.CompiledModule,
                 labels: list[list[int]], routing: bytes) -> None:
        self.config = config
        self.module = module
        self.book = RuleBook(config.workdir, module)  # the rule set of each version
        self.stages = module.stage_modules()
        self.drain = len(self.stages) - 1  # batches a later stage lags behind the input
        self.labels = labels  # [stage][engine]
        self.routing = routing  # stage 0's key router, cloudpickled (later stages: KG)
        self._engine_of: KeyRouter | None = None  # unpickled by the first read task
        self._readings: dict[int, ir.CompiledModule] = {}  # per rule set version
        self._log: InputLog | None = None  # made where planning runs, never on executors
        self._target: tuple[int, int] | None = None

    # ------------------------------------------------------------------ planning

    def log(self) -> InputLog:
        if self._log is None:
            self._log = InputLog(self.config.log_dir, self.config.sources, self.config.follow,
                                 self.config.starting_offsets, self.config.idle_timeout_s)
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
        ended = end == here and bool(start.get("end"))  # the input's end is behind
        planner = RulePlanner(self.book)
        running = int(start.get("rules", 0))
        if end == here and not ended and not self.config.follow and not stopping:
            # a bounded input read to its end: one more batch, in which all time passes
            rules = planner.plan(start["n"], running, self._first_seq(here))
            return self._offset(start["n"] + 1, end, 0, ended=True, rules=rules)
        idle = 0 if end != here else min(self.drain, start.get("idle", 0) + 1)
        if (end == here and start["n"] and start.get("idle", 0) >= self.drain
                and (stopping or not planner.pending(running))):
            return start
        # Spark runs its first batch whatever this returns (it has no earlier offset to
        # compare with), so an empty first batch is numbered too: n stays Spark's batch id
        rules = (running if stopping
                 else planner.plan(start["n"], running, self._first_seq(here)))
        return self._offset(start["n"] + 1, end, idle, ended, rules)

    def _first_seq(self, at: tuple[int, int]) -> int:
        """The seq of the first input event at or after position ``at``."""
        segment = self.log().segments.get(at[0])
        offset = max(0, at[1] - segment.start) if segment is not None else 0
        return at[0] << SEQ_SHIFT | offset

    def _offset(self, n: int, at: tuple[int, int], idle: int, ended: bool = False,
                rules: int = 0) -> dict:
        offset = {"n": n, "seg": at[0], "pos": at[1]}
        if rules:  # the rule set version of the batch ending here (none: version 0)
            offset["rules"] = rules
        if self.drain:  # no "idle" without a chain: offsets of older runs stay valid
            offset["idle"] = idle
        if ended:  # the end of a bounded input is behind (older offsets have no "end")
            offset["end"] = True
        return offset

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        pieces = list(self.log().pieces((start["seg"], start["pos"]), (end["seg"], end["pos"])))
        tasks = max(1, min(self.config.tasks, len(pieces)))
        units = np.array([(p.hi - p.lo) / p.segment.unit for p in pieces])
        # consecutive pieces, about equal records per task
        cuts = np.searchsorted(np.cumsum(units), np.arange(1, tasks) * units.sum() / tasks)
        groups = [g for g in np.split(np.arange(len(pieces)), cuts) if len(g)]
        final = bool(end.get("end")) and not start.get("end")
        rules = int(end.get("rules", 0))
        changed = rules != int(start.get("rules", 0))
        if (self.drain or final or changed) and not groups:
            # stage 0's engines run too (keys may move, time ends, the rules change)
            groups = [np.arange(0)]
        batch = start["n"]
        planner = RulePlanner(self.book) if self.drain else None
        # the batch in which a bounded input ends: every engine lets all time pass, at a
        # place after every input event (as ``cep.io.event_time.end_of_log`` says)
        ending = {"final": True, "end_seq": self.log().count << SEQ_SHIFT} if final else {}
        return [InputPartition({"batch": batch, **ending, "rules": rules, "pieces": [
            (pieces[i].segment.to_json(), pieces[i].lo, pieces[i].hi) for i in group]})
            for group in groups] + [
            InputPartition({"batch": batch, "stage": stage,
                            "rules": planner.version_of(batch - stage) if planner else 0})
            for stage in range(1, len(self.stages))]

    def commit(self, end: dict) -> None:
        self.log().forget_before(end["seg"])
        if self.drain:  # batch end["n"] - 1 committed: its inputs are never read again
            self.config.chain.drop_through(end["n"] - 2)

    # ------------------------------------------------------------------ executors

    def _reading(self, version: int) -> ir.CompiledModule:
        """Rule set ``version``'s module cut to the input fields its rules read, made
        once per version in the worker that reads."""
        if version not in self._readings:
            self._readings[version] = reading_module(self.book.module(version))
        return self._readings[version]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from cep.spark.inputs.tasks import read_chain, read_input, record_batch  # see there

        task = partition.value
        version = int(task.get("rules", 0))
        module = self.book.module(version)
        if "stage" in task:
            stage = int(task["stage"])
            yield record_batch(read_chain(self.config, module, module.stage_modules()[stage],
                                          self.labels[stage], int(task["batch"]), stage,
                                          version))
            return
        if self._engine_of is None:
            self._engine_of = cloudpickle.loads(self.routing)
        try:
            table = read_input(self.config, module.stage_modules()[0], self.labels[0],
                               self._engine_of, task, version, self._reading(version))
        finally:  # a router of moved keys read the key map: no client outlives the task
            if "cep.transports.mongo_client" in sys.modules:
                sys.modules["cep.transports.mongo_client"].close_shared_clients()
        yield record_batch(table)


def input_source(config: SourceConfig, module: ir.CompiledModule, labels: list[list[int]],
                 engine_of: KeyRouter) -> type[DataSource]:
    """A Data Source class for one run (registered with ``spark.dataSource.register``;
    Spark ships it, with the compiled rules, to the processes that plan and read). The
    key router travels pickled, as bytes: unpickling it imports pandas, which the
    processes that only plan have no use for."""
    routing = cloudpickle.dumps(engine_of)

    class CepInput(DataSource):
        @classmethod
        def name(cls) -> str:
            return SOURCE_NAME

        def schema(self) -> str:
            return ROUTED_SCHEMA

        def streamReader(self, schema) -> DataSourceStreamReader:
            return InputReader(config, module, labels, routing)

    return CepInput
