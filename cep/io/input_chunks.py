"""A bounded input read a chunk at a time, for the local runner that streams.

:func:`cep.io.inputs.load_inputs` reads a whole input into tables; this reads the same
segments in the same log order as consecutive ranges of about :data:`CHUNK_RECORDS`
records (cut at the input log's grid, ``inputlog.GRID_BYTES`` or ``GRID_ROWS``, as the
Spark source's pieces are), so what is held at a time does not grow with the input.
Every range reader reads any cut of a segment into the same records, seqs and dead
letters (``cep.io.readers.ranges.read_range``), and the clock reads the log piece by
piece (``cep.io.event_time``), so a run over the chunks sees the events, the watermark
and the dead letters of the whole-input read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from cep.engine.table import SEQ, Table
from cep.io.deadletter import DeadLetter
from cep.io.event_time import ClockPiece
from cep.io.inputlog import GRID_BYTES, GRID_ROWS, TEXT_KINDS, Segment
from cep.io.inputs import read_ranges
from cep.io.readers.reader import MAX_RECORD_BYTES
from grammar import ir

#: records read at a time: large enough that a batch's fixed costs (a few ms) stay
#: small beside its events, small enough that a chunk's columns and the engines' work
#: on it take some 100 MB whatever the input's size
CHUNK_RECORDS = 1 << 18


@dataclass
class Chunk:
    """Consecutive ranges of the input log: each input stream's events (every stream
    present, maybe empty), what the ranges tell the clock, and a generator's ground
    truth (the ids of its first stories)."""

    tables: dict[str, Table]
    pieces: list[ClockPiece]
    truth: list[np.ndarray] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(len(t[SEQ]) for t in self.tables.values())


def segment_ranges(segment: Segment, budget: float) -> Iterator[tuple[int, int]]:
    """[lo, hi) ranges covering the segment, of about ``budget`` records each, cut at
    multiples of the log's grid; a mark (an empty segment) once, as an empty range."""
    if segment.end <= segment.start:
        yield segment.start, segment.start
        return
    grid = grid_step(segment)
    step = grid * max(1, int(budget * segment.unit // grid))
    lo = segment.start
    while lo < segment.end:
        hi = min(segment.end, segment.start + ((lo - segment.start) // step + 1) * step)
        yield lo, hi
        lo = hi


def grid_step(segment: Segment) -> int:
    """The input log's grid in the segment's units (bytes of text, else rows)."""
    return GRID_BYTES if segment.kind in TEXT_KINDS else GRID_ROWS


def read_chunks(module: ir.CompiledModule, segments: list[Segment], dead: DeadLetter,
                max_record_bytes: int = MAX_RECORD_BYTES,
                budget: float | None = None) -> Iterator[Chunk]:
    """The segments' events, in log order, a chunk of about ``budget`` records
    (default :data:`CHUNK_RECORDS`) at a time (estimated from each segment's bytes per
    record); bad records go to ``dead``."""
    budget = budget or CHUNK_RECORDS
    group: list[tuple[Segment, int, int]] = []
    size = 0.0
    for segment in segments:
        for lo, hi in segment_ranges(segment, budget):
            group.append((segment, lo, hi))
            size += (hi - lo) / segment.unit
            if size >= budget:
                yield read_group(module, group, dead, max_record_bytes)
                group, size = [], 0.0
    if group:
        yield read_group(module, group, dead, max_record_bytes)


def read_group(module: ir.CompiledModule, group: list[tuple[Segment, int, int]],
               dead: DeadLetter, max_record_bytes: int) -> Chunk:
    """One chunk: the ranges ``group`` read as :func:`cep.io.inputs.load_segments`
    reads whole segments."""
    return Chunk(*read_ranges(module, group, dead, max_record_bytes))
