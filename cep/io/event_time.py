"""The watermark as a function of the input log, computed the same way by every runner.

The input log (``inputlog.py``) fixes the order of every input event. The watermark
after event e is the largest timestamp of the events up to e, minus the rule file's
lateness (``CompiledModule.lateness_us``), and it never goes backwards. Events of
streams without a TIMESTAMP do not move it.

Kafka partitions are separate clocks, as Flink keeps one per split: the log interleaves
chunks of partitions that each run in time order, so a partition read ahead would make
the others' events late. With Kafka inputs the watermark is the least, over the
partitions that count, of each one's largest timestamp so far (minus the lateness);
everything that is not a Kafka partition (files, generators) is one more clock, which
counts from its first record on.

A partition counts from its *join mark* on: an empty segment that the discovery which
first finds records in it (or finds them again after it was idle) logs before all of
that discovery's chunks (``InputLog._join_marks``; ``--starting-offsets latest``'s
starting mark is one too). Until its first record it holds the watermark at no time, so
the partitions whose chunks come first in the log, which may run further in time, do
not make its records late: their events wait in the engines until every partition's
time has passed them, and are then processed in timestamp order, as in one file.
A partition that has had nothing new for ``--idle-timeout`` seconds while others
advanced is logged as idle (a segment with ``idle``, ``InputLog._idle_marks``) and does
not count until its next join mark: an idle partition never holds time back forever,
and since idleness is written in the log, a replay or another runner reading the same
log decides it the same way.

The clock reads a log *piece by piece* (:class:`ClockPiece`: a piece's timestamped
events' seqs and timestamps, in log order), whatever cut them: the reference runner
passes whole segments, a Spark batch the pieces its source tasks read. Between batches
its state (:meth:`EventClock.state`) is plain data that an engine keeps with its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.clock import NO_TIME, Watermark
from cep.engine.table import SEQ, Table
from cep.io.inputlog import KAFKA_KIND, SEQ_SHIFT, Segment
from grammar import ir

FILES = ""  # the clock of everything that is not a Kafka partition


@dataclass(frozen=True)
class ClockPiece:
    """What one piece of the input log tells the clock: where it sits in the log, which
    clock it advances, whether it marks that clock idle, and its events' seqs and
    timestamps (only a stream's TIMESTAMP moves the watermark)."""

    ordinal: int
    lo: int
    source: str
    idle: bool
    seq: np.ndarray
    ts: np.ndarray
    joins: bool = False  # a join mark: from here on the watermark waits for this clock

    @staticmethod
    def of(segment: Segment, lo: int, table: Table | None, stream: ir.StreamDef
           ) -> ClockPiece:
        """The piece [lo, ...) of ``segment`` whose events are ``table`` (None: none)."""
        timed = table is not None and stream.timestamp is not None and len(table[SEQ])
        kafka = segment.kind == KAFKA_KIND
        # a partition of a stream without TIMESTAMP never moves time, so never holds it
        joins = (kafka and not segment.idle and segment.end == segment.start
                 and stream.timestamp is not None)
        return ClockPiece(
            segment.ordinal, lo, segment.path if kafka else FILES,
            segment.idle,
            table[SEQ].astype(np.int64) if timed else _NONE,  # type: ignore[index]
            table[stream.timestamp].astype(np.int64) if timed else _NONE,  # type: ignore[index]
            joins)


    def rises(self) -> ClockPiece:
        """This piece with only the events at which its own largest timestamp rises:
        all the clock needs of it (the watermark rises only where some clock's largest
        timestamp does), so a source task sends the engines a few numbers per piece,
        not a timestamp per event."""
        if len(self.ts) < 2:
            return self
        top = np.maximum.accumulate(self.ts)
        keep = np.r_[True, top[1:] > top[:-1]]
        return ClockPiece(self.ordinal, self.lo, self.source, self.idle, self.seq[keep],
                          self.ts[keep], self.joins)

    def plain(self) -> tuple:
        """As plain values (what travels to the engines in a payload)."""
        return (self.ordinal, self.lo, self.source, self.idle, self.seq, self.ts, self.joins)

    @staticmethod
    def from_plain(values: tuple) -> ClockPiece:
        ordinal, lo, source, idle, seq, ts, joins = values
        return ClockPiece(int(ordinal), int(lo), str(source), bool(idle),
                          np.asarray(seq, np.int64), np.asarray(ts, np.int64), bool(joins))


_NONE = np.empty(0, dtype=np.int64)


def end_of_log(segments: int) -> int:
    """The seq at which a bounded input ends: the start of the segment after the last,
    after every input event, the same wherever the log is read."""
    return segments << SEQ_SHIFT


class EventClock:
    """The watermark's state between batches, and how a batch of pieces moves it."""

    def __init__(self, lateness_us: int, state: dict | None = None) -> None:
        self.lateness = lateness_us
        state = state or {}
        self.wm = int(state.get("wm", NO_TIME))
        self.maxima: dict[str, int] = {str(k): int(v)
                                       for k, v in state.get("maxima", {}).items()}
        self.idle: set[str] = {str(s) for s in state.get("idle", [])}

    def state(self) -> dict:
        """Plain data to rebuild this clock from (:class:`EventClock`'s ``state``)."""
        return {"wm": self.wm, "maxima": dict(sorted(self.maxima.items())),
                "idle": sorted(self.idle)}

    def advance(self, pieces: list[ClockPiece], final: bool = False, end_seq: int = 0
                ) -> Watermark:
        """The watermark through a batch made of ``pieces`` (any order: they are put in
        log order), moving this clock past them. ``final``: the input ends after them,
        at ``end_seq``."""
        before = self.wm
        seqs: list[np.ndarray] = []
        wms: list[np.ndarray] = []
        for piece in sorted(pieces, key=lambda p: (p.ordinal, p.lo)):
            if piece.idle:
                self.idle.add(piece.source)
                continue
            if piece.joins:  # counts from here, at no time until its first record
                self.idle.discard(piece.source)
                self.maxima.setdefault(piece.source, NO_TIME)
                continue
            if not len(piece.seq):
                continue
            self.idle.discard(piece.source)
            own = np.maximum.accumulate(np.maximum(
                piece.ts, self.maxima.get(piece.source, NO_TIME)))
            self.maxima[piece.source] = int(own[-1])
            others = [m for s, m in self.maxima.items()
                      if s != piece.source and s not in self.idle]
            least = np.minimum(own, min(others)) if others else own
            wm = np.maximum.accumulate(np.maximum(least - self.lateness, self.wm))
            rises = wm > np.concatenate(([self.wm], wm[:-1]))
            seqs.append(piece.seq[rises])
            wms.append(wm[rises])
            self.wm = int(wm[-1])
        return Watermark(before, _joined(seqs), _joined(wms), final, end_seq)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else _NONE
