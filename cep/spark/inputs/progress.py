"""How far a run has read each input, and how much it has logged but not read yet.

A batch hook on the driver (see ``sink.BatchHook``): after batch b it puts into the
batch's metrics, under ``"input"``, one row per input source: for files, a stream's
bytes and (estimated) records read and behind; for Kafka, a partition's offsets read and
behind. "Read" is everything up to the batch's end offset, which Spark wrote to
``checkpoint/offsets/<b>`` before running it; "behind" is what the input log
(``input/segments.jsonl``, ``cep.io.inputlog``) holds past that point, that is what the
last listing (or Kafka's partition ends at the last planning) found and no batch has
read yet. So a live view and Prometheus can show how far a job is behind its input from
the metrics alone.

"Arrived" is what came after that listing, measured when the batch commits: a followed
text file's size now past its logged end, a Kafka partition's last stable offset now past
its logged end (one offsets request per topic per batch). A job that follows one growing
file reads all of it at every planning, so its "behind" is 0 however far its batches
fall behind; what arrived while a batch ran is what the next one must catch up on, and
``--engines auto`` (``splitter.autoscale``) reads behind plus arrived as the input lag.
New files in a followed directory count only once a listing finds them. A source that
cannot be asked (a file gone, a broker down) gives no "arrived" figure for that batch.

Why it tails the log itself: the planner that writes the log runs in another process.
The log is read incrementally (only its new lines), and a segment is kept in memory only
until it is wholly read, then folded into its source's totals: memory grows with the
unread part of the log (which the planner holds too) and the number of sources, not with
the run's length.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cep.io.inputlog import GENERATOR_KINDS, KAFKA_KIND, TEXT_KINDS, Segment
from cep.transports.mongo_client import mask_uri

if TYPE_CHECKING:  # Kafka's client is imported on demand only
    from cep.io.kafka_input import KafkaSource

END_ERRORS = (OSError, RuntimeError, ValueError)  # a file gone, a broker that fails


@dataclass
class SourceTotals:
    """One source's units (bytes of text files, rows, or Kafka offsets) logged and read,
    and the records they hold (estimated for text from the log's bytes per line)."""

    stream: str
    source: str
    kind: str
    last_path: str = ""  # the file logged last (a followed directory's newest)
    logged: float = 0.0
    read: float = 0.0
    logged_records: float = 0.0
    read_records: float = 0.0
    logged_end: float = 0.0  # the logged end of last_path, in units
    unit: float = 1.0  # units per record of last_path (bytes per line for text)
    arrived_records: float | None = None  # past logged_end when the batch committed

    def row(self) -> dict:
        unit = ("bytes" if self.kind in TEXT_KINDS
                else "offsets" if self.kind == KAFKA_KIND else "rows")
        return {"stream": self.stream, "source": self.source, "kind": self.kind,
                "unit": unit, "read": round(self.read),
                "behind": round(self.logged - self.read),
                "read_records": round(self.read_records),
                "behind_records": round(self.logged_records - self.read_records),
                **({"arrived_records": round(self.arrived_records)}
                   if self.arrived_records is not None else {}),
                **({"last_file": self.last_path}
                   if self.kind not in (KAFKA_KIND, *GENERATOR_KINDS) else {})}


class InputProgress:
    """The ``"input"`` part of each batch's metrics (see the module docstring)."""

    def __init__(self, workdir: Path, sources: dict[str, str]) -> None:
        self.sources = sources  # input stream -> its path, directory, glob or spec
        self.log_file = workdir / "input" / "segments.jsonl"
        self.offsets = workdir / "checkpoint" / "offsets"
        self._log_read = 0  # bytes of the log already folded in
        self._unread: dict[int, Segment] = {}  # segments not wholly read yet
        self._partly: dict[int, float] = {}  # units of those already counted as read
        self._sources: dict[str, SourceTotals] = {}

    def __call__(self, batch: int, stats: list[dict], metrics: dict) -> None:
        self._tail_log()
        position = self._end_offset(batch)
        if position is not None:
            self._advance(*position)
        self._measure_arrivals()
        metrics["input"] = {
            "position": list(position) if position else None,
            "sources": [s.row() for s in self._sources.values()],
        }

    def _tail_log(self) -> None:
        """Fold the log's lines written since the last batch (whole lines only)."""
        try:
            with open(self.log_file, "rb") as fh:
                fh.seek(self._log_read)
                text = fh.read()
        except FileNotFoundError:
            return
        whole = text[: text.rfind(b"\n") + 1]
        self._log_read += len(whole)
        for line in whole.decode("utf-8").splitlines():
            segment = Segment.from_json(line)
            totals = self._totals(segment)
            if totals.last_path != segment.path:
                totals.logged_end = 0.0
            totals.last_path = segment.path
            totals.logged_end = max(totals.logged_end, segment.end)
            totals.unit = segment.unit or 1.0
            totals.logged += segment.end - segment.start
            totals.logged_records += (segment.end - segment.start) / segment.unit
            self._unread[segment.ordinal] = segment

    def _totals(self, segment: Segment) -> SourceTotals:
        """Kafka: one row per partition (its segment path); else one per stream and
        format (a stream's files are many, and a long followed run adds more), named by
        the stream's source as given."""
        key = (segment.path if segment.kind == KAFKA_KIND
               else f"{segment.stream}\0{segment.kind}")
        if key not in self._sources:
            source = mask_uri(segment.path if segment.kind == KAFKA_KIND
                             else self.sources.get(segment.stream, segment.path))
            self._sources[key] = SourceTotals(segment.stream, source, segment.kind)
        return self._sources[key]

    def _measure_arrivals(self) -> None:
        """Each text or Kafka source's records past its logged end, now (module notes)."""
        partitions: list[SourceTotals] = []
        for totals in self._sources.values():
            totals.arrived_records = None
            if totals.kind in TEXT_KINDS and totals.last_path:
                with contextlib.suppress(*END_ERRORS):
                    size = os.path.getsize(totals.last_path)
                    totals.arrived_records = max(0.0, size - totals.logged_end) / totals.unit
            elif totals.kind == KAFKA_KIND:
                partitions.append(totals)
        if partitions:
            _kafka_arrivals(partitions)

    def _end_offset(self, batch: int) -> tuple[int, int] | None:
        """The input position after ``batch``: the last line of Spark's offset file
        (``{"n": …, "seg": …, "pos": …}``, cep's own source offset)."""
        with contextlib.suppress(OSError, ValueError, KeyError, IndexError):
            last = (self.offsets / str(batch)).read_text().strip().splitlines()[-1]
            offset = json.loads(last)
            return int(offset["seg"]), int(offset["pos"])
        return None

    def _advance(self, seg: int, pos: int) -> None:
        """Count as read every unread segment before ``seg`` and ``seg`` up to ``pos``."""
        for ordinal in sorted(o for o in self._unread if o <= seg):
            segment = self._unread[ordinal]
            upto = segment.end if ordinal < seg else min(max(pos, segment.start), segment.end)
            done = upto - segment.start
            newly = done - self._partly.get(ordinal, 0.0)
            totals = self._totals(segment)
            totals.read += newly
            totals.read_records += newly / segment.unit
            if upto >= segment.end:
                del self._unread[ordinal]
                self._partly.pop(ordinal, None)
            else:
                self._partly[ordinal] = done


def _kafka_arrivals(partitions: list[SourceTotals]) -> None:
    """Each Kafka partition's records past its logged end, with one offsets request per
    topic (its segment paths read by ``cep.io.kafka_input.parse_segment_path``; the
    client is imported here, so a job without Kafka never loads it)."""
    from cep.io.kafka_input import parse_segment_path
    from cep.transports.embedded_kafka import resolve
    from cep.transports.kafka_read import partition_ends
    topics: dict[str, tuple[KafkaSource, list[tuple[SourceTotals, int]]]] = {}
    for totals in partitions:
        source, _topic, partition = parse_segment_path(totals.last_path)
        topics.setdefault(source.uri, (source, []))[1].append((totals, partition))
    for source, members in topics.values():
        with contextlib.suppress(*END_ERRORS):
            ends = partition_ends(resolve(source.address), source.topics[0], timeout_s=2.0)
            for totals, partition in members:
                totals.arrived_records = max(0.0, ends[partition][1] - totals.logged_end)
