"""A bounded input read a chunk at a time, for the local runner that streams.

:func:`cep.io.inputs.load_inputs` reads a whole input into tables; this reads the same
segments in the same log order as consecutive ranges of about :data:`CHUNK_RECORDS`
records (cut at the input log's grid, ``inputlog.grid_step``, as the
Spark source's pieces are), so what is held at a time does not grow with the input.
:func:`read_ahead` reads the next chunk in a thread of its own while the caller works on
the one before (the parser releases the GIL), one chunk ahead at most.
Every range reader reads any cut of a segment into the same records, seqs and dead
letters (``cep.io.readers.ranges.read_range``), and the clock reads the log piece by
piece (``cep.io.event_time``), so a run over the chunks sees the events, the watermark
and the dead letters of the whole-input read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from cep.engine.table import SEQ, Table
from cep.io.deadletter import DeadLetter
from cep.io.event_time import ClockPiece
from cep.io.inputlog import Segment, grid_step
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


def read_chunks(module: ir.CompiledModule, segments: list[Segment], dead: DeadLetter,
                max_record_bytes: int = MAX_RECORD_BYTES,
                budget: float | None = None,
                reading: ir.CompiledModule | None = None) -> Iterator[Chunk]:
    """The segments' events, in log order, a chunk of about ``budget`` records
    (default :data:`CHUNK_RECORDS`) at a time (estimated from each segment's bytes per
    record); bad records go to ``dead``. ``reading``: the fields the tables keep (see
    :func:`cep.io.inputs.read_ranges`)."""
    budget = budget or CHUNK_RECORDS
    group: list[tuple[Segment, int, int]] = []
    size = 0.0
    for segment in segments:
        for lo, hi in segment_ranges(segment, budget):
            group.append((segment, lo, hi))
            size += (hi - lo) / segment.unit
            if size >= budget:
                yield read_group(module, group, dead, max_record_bytes, reading)
                group, size = [], 0.0
    if group:
        yield read_group(module, group, dead, max_record_bytes, reading)


def read_group(module: ir.CompiledModule, group: list[tuple[Segment, int, int]],
               dead: DeadLetter, max_record_bytes: int,
               reading: ir.CompiledModule | None = None) -> Chunk:
    """One chunk: the ranges ``group`` read as :func:`cep.io.inputs.load_segments`
    reads whole segments."""
    return Chunk(*read_ranges(module, group, dead, max_record_bytes, reading))


_END = object()  # the end of the chunks, as the reading thread says it


@contextlib.contextmanager
def read_ahead(chunks: Iterator[Chunk]) -> Iterator[Iterator[Chunk]]:
    """The same chunks in the same order, chunk N+1 read in a thread while the caller
    works on chunk N, so that parsing (pyarrow's, which releases the GIL) overlaps the
    engines on a machine with a second core. One chunk ahead at most: the next read
    starts only when the caller takes a chunk, so at most two are held (the caller's
    and the one being read), as the engines' memory bound assumes.

    An exception in the reading thread is raised in the caller at the chunk it would
    have given, as an exception of the reader does without the thread. Leaving the block
    (an exception of the caller included) waits for the read under way, so that nothing
    writes to the dead letters after their file is closed, and closes ``chunks``."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="cep-read-ahead")
    pending: Future | None = None

    def ahead() -> Iterator[Chunk]:
        nonlocal pending
        pending = pool.submit(next, chunks, _END)
        while True:
            chunk = pending.result()
            if chunk is _END:
                pending = None
                return
            pending = pool.submit(next, chunks, _END)
            yield chunk

    try:
        yield ahead()
    finally:
        if pending is not None:  # the caller stopped early: let the read under way end
            with contextlib.suppress(BaseException):
                pending.result()
        pool.shutdown(wait=True)
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
