"""The local runner: the reference evaluator over a bounded input that streams.

It reads the input a chunk at a time (``cep.io.input_chunks``), moves the event clock
piece by piece as the chunk's pieces come (``cep.io.event_time.EventClock``), runs each
batch through the engines (``cep.reference.run_stages``) and writes its output rows as
soon as they are made, so that what the process holds is a chunk, the engines' state and
the late events' and failed functions' few numbers, not the input or the output.

Why its output is the whole-input reference run's, byte for byte: cutting the input into
batches does not change the events (the reference evaluator's own invariant, which the
Spark runtime's differential tests rely on), the clock read piece by piece gives the
watermark it gives read whole, and every batch's rows are made at its own events' seqs
(or at the end of the input, in the last one), so the batches' rows one after the other
are in the reference order. Without ``--batch-size`` the run reports one batch (the
whole input) as before; with it, batches of exactly that many events, as before.

The exceptions that still hold the whole output: events handed back to a caller
(``collect``), Parquet output (one file with the union of the rules' columns) and a
generated input's detection quality, which compares every detection with the truth.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.output import concat_sorted, output_lines, rows_per_rule
from cep.engine.table import SEQ, SUB, Table, concat, empty, nrows, sorted_unique, take
from cep.io.event_time import EventClock
from cep.io.input_chunks import Chunk
from cep.reference import batch_figures, held_figures, late_events, run_stages, stage_engines
from grammar import ir
from grammar.rule_set import output_order

_NONE = np.empty(0, np.int64)
_MIN, _MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


class Batches:
    """Chunks of the input as batches, with the watermark through each and the late
    events found: the clock moves as chunks come, each chunk's late events are found
    (and under ``drop`` taken out) with the watermark through it, and a batch's part of
    the watermark is cut from the one through what is buffered
    (:meth:`Watermark.between`), as :func:`cep.reference.reference_run` cuts the whole
    input's after taking the late events out. With a ``size`` the chunks are re-cut
    into batches of exactly that many events (the last one the rest); without, each
    chunk with events is a batch. The last batch, which sees the input end, is never
    empty unless the input is."""

    def __init__(self, module: ir.CompiledModule, size: int | None, late: str) -> None:
        self.module, self.size, self.drop = module, size, late == "drop"
        self.clock = EventClock(module.lateness_us)
        self.parts: dict[str, list[Table]] = {name: [] for name in module.input_streams}
        self.count = 0
        self.read = 0  # events read, late ones included
        self.wm = Watermark(self.clock.wm)
        self.late: dict[str, list[np.ndarray]] = {"seq": [], "ts": [], "watermark": []}

    def admit(self, chunk: Chunk) -> tuple[dict[str, Table], Watermark]:
        """A chunk's events (the late ones out under ``drop``) and the watermark
        through it, the clock moved past its pieces."""
        step = self.clock.advance(chunk.pieces)
        tables = chunk.tables
        self.read += chunk.events
        found = late_events(self.module, tables, step)
        if len(found["seq"]):
            for name, values in found.items():
                self.late[name].append(values)
            if self.drop:
                tables = {name: take(t, ~np.isin(t[SEQ], found["seq"]))
                          for name, t in tables.items()}
        return tables, step

    def buffer(self, tables: dict[str, Table], step: Watermark) -> None:
        """Hold admitted events until their batch is cut."""
        self.wm = Watermark(self.wm.before, np.concatenate((self.wm.seq, step.seq)),
                            np.concatenate((self.wm.wm, step.wm)))
        for name, table in tables.items():
            self.parts[name].append(table)
        self.count += sum(nrows(t) for t in tables.values())

    def late_seqs(self) -> np.ndarray:
        """The seqs of the late events found so far, in seq order."""
        return np.concatenate(self.late["seq"]) if self.late["seq"] else _NONE

    def buffered(self) -> dict[str, Table]:
        """Every buffered event, per input stream, the buffer emptied."""
        tables = {name: concat(parts) or self.empty(name) for name, parts in self.parts.items()}
        self.parts = {name: [] for name in self.parts}
        self.count = 0
        return tables

    def empty(self, name: str) -> Table:
        return empty(list(self.module.streams[name].fields), (SEQ, SUB))

    def cut(self) -> tuple[dict[str, Table], Watermark, tuple[int, int]]:
        """The first ``size`` buffered events (by seq), the watermark through them and
        their batch's seq bounds [first, first of the next)."""
        tables = self.buffered()
        seqs = sorted_unique(np.concatenate([t[SEQ] for t in tables.values()]))
        lo, hi = int(seqs[0]), int(seqs[self.size])
        batch: dict[str, Table] = {}
        for name, table in tables.items():
            keep = table[SEQ] < hi
            batch[name], rest = take(table, keep), take(table, ~keep)
            self.parts[name].append(rest)
            self.count += nrows(rest)
        part = self.wm.between(_MIN, hi, False)
        self.wm = self.wm.between(hi, _MAX, False)
        return batch, part, (lo, hi)

    def rest(self, final: bool = False, end_seq: int = 0
             ) -> tuple[dict[str, Table], Watermark, tuple[int, int]]:
        """Everything buffered, the watermark through it (ending the input where
        ``final``) and its seq bounds [first, last + 1)."""
        tables = self.buffered()
        seqs = [t[SEQ] for t in tables.values() if len(t[SEQ])]
        bounds = (min(int(s.min()) for s in seqs), max(int(s.max()) for s in seqs) + 1
                  ) if seqs else (0, 0)
        wm = Watermark(self.wm.before, self.wm.seq, self.wm.wm, final, end_seq)
        self.wm = Watermark(wm.last)
        return tables, wm, bounds

    def __call__(self, chunks: Iterable[Chunk], end_seq: int
                 ) -> Iterator[tuple[dict[str, Table], Watermark, tuple[int, int]]]:
        """The batches of ``chunks``; the input ends at ``end_seq`` after the last."""
        for chunk in chunks:
            tables, step = self.admit(chunk)
            if self.size is None and self.count and any(
                    len(t[SEQ]) for t in tables.values()):  # not the last batch: events follow
                yield self.rest()
            self.buffer(tables, step)
            while self.size is not None and self.count > self.size:
                yield self.cut()
        yield self.rest(True, end_seq)


@dataclass
class StreamedRun:
    """What a streamed run leaves besides its written output: its late events (seq, ts
    and the watermark they were below), the events read and written, rows per rule in
    the order of their first row, and its metrics rows."""

    late: dict[str, np.ndarray]
    events_in: int = 0
    events_out: int = 0
    per_rule: dict[str, int] = field(default_factory=dict)
    batches: list[dict] = field(default_factory=list)


def stream_reference(module: ir.CompiledModule, chunks: Iterable[Chunk], end_seq: int,
                     emit: Callable[[Table], None], batch_size: int | None = None,
                     late: str = "process") -> StreamedRun:
    """The reference evaluator over ``chunks`` (the input in log order), each batch's
    output rows (in the reference order) handed to ``emit`` as it is made. Batches of
    ``batch_size`` events, with a metrics row each; without it a batch per chunk and
    one metrics row for the whole input, as its one batch reports it."""
    engines = stage_engines(module)
    order = output_order([module])
    cutter = Batches(module, batch_size, late)
    events_out, seconds, per_rule, rows = 0, 0.0, {}, []
    first, last = None, 0
    for i, (batch, clock, (lo, hi)) in enumerate(cutter(chunks, end_seq)):
        started = time.perf_counter()
        out = run_stages(module, engines, batch, clock, order)
        spent = time.perf_counter() - started
        seconds += spent
        emit(out)
        events_out += nrows(out) if out else 0
        for rule, n in rows_per_rule(out).items():
            per_rule[rule] = per_rule.get(rule, 0) + n
        if hi > lo:
            first, last = lo if first is None else first, hi
        if batch_size:
            rows.append({**batch_figures(i, batch, out, engines, clock,
                                         cutter.late_seqs(), lo, hi),
                         "seconds": round(spent, 4)})
    late_found = {name: np.concatenate(parts) if parts else _NONE
                  for name, parts in cutter.late.items()}
    if not batch_size:  # the whole input as one batch, as the reference reports it
        seqs = late_found["seq"]
        rows.append({
            "batch": 0, "events_in": cutter.read - (len(seqs) if late == "drop" else 0),
            "events_out": events_out, "watermark": cutter.clock.wm,
            "late_events": int(((seqs >= (first or 0)) & (seqs < last)).sum()),
            **held_figures(engines), "seconds": round(seconds, 4)})
    return StreamedRun(late_found, cutter.read, events_out, per_rule, rows)


class LineSink(contextlib.AbstractContextManager):
    """Output rows written as JSON lines as they come: to standard output, or to a file
    under a temporary name, renamed when the run is done (removed if it fails), so a
    reader never sees half an output."""

    def __init__(self, path: str | None) -> None:
        self.target = None if path is None else Path(path)
        self.tmp: Path | None = None
        self.out: TextIO = sys.stdout

    def __enter__(self) -> LineSink:
        if self.target is not None:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = self.target.with_name("." + self.target.name + ".tmp")
            self.out = self.tmp.open("w", encoding="utf-8")
        return self

    def __call__(self, rows: Table) -> None:
        self.out.write(output_lines(rows))

    def __exit__(self, kind, value, tb) -> None:  # type: ignore[no-untyped-def]
        if self.tmp is None:
            self.out.flush()
            return
        self.out.close()
        if kind is None:
            self.tmp.replace(self.target)  # type: ignore[arg-type]
        else:
            self.tmp.unlink(missing_ok=True)


class KeptRows:
    """Output rows kept whole (for the exceptions in the module notes): the batches'
    rows, one after the other, as one table in the reference order."""

    def __init__(self, module: ir.CompiledModule) -> None:
        self.order = output_order([module])
        self.parts: list[Table] = []

    def __call__(self, rows: Table) -> None:
        self.parts.append(rows)

    def table(self) -> Table:
        return concat_sorted(self.parts, self.order)
