"""Kafka topics as a source kind of the input log, and the reader of their segments.

A ``kafka://HOSTS/TOPIC[,TOPIC]`` source becomes segments of kind ``kafka``, one per
chunk of at most :data:`CHUNK_OFFSETS` offsets of one partition; ``start``/``end`` are
Kafka offsets (unit 1.0: an offset is about one record, transaction markers aside).
A segment's ``path`` is the source URI narrowed to its topic, with the partition after
``#`` (``kafka://h:9092/tweets?socket.timeout.ms=5000#2``): whoever reads it, a Spark
executor or the reference runner, finds the broker, topic and partition there, and the
query options (``format=csv`` is cep's own; the rest are librdkafka settings).

Discovery asks the brokers for every partition's read_committed end and logs, from the
partition's last logged end (the first time: its low or high end per
``--starting-offsets``), chunks interleaved round-robin across partitions, so that a
micro-batch of ``--batch-size`` records reads every partition at once. The first
discovery with ``latest`` logs an empty segment at the high end, so the starting point
survives a restart even when nothing arrived yet.

Reading a segment's offsets: :func:`read_kafka_range` fetches them
(``read_partition_range``, read_committed), joins the values into a temporary JSON-lines
(or CSV) file and parses it with the file reader (``cep.io.readers.ranges.read_range``), so a
Kafka record gets exactly the validation, typing and dead-lettering of a file line.
Byte offsets are mapped back to Kafka offsets with ``searchsorted``; a dead letter names
``"<topic>/<partition>"`` and the Kafka offset. A newline inside a value (JSON text
cannot hold a raw one) becomes a space so that a record stays one line; a tombstone
(no value) is a blank line, counted as skipped.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cep.io.deadletter import DeadLetter
from cep.io.readers.ranges import read_range
from cep.io.readers.reader import MAX_RECORD_BYTES
from cep.run_config import STARTING_OFFSETS
from cep.transports.address import KafkaAddress, parse_kafka_uri
from cep.transports.embedded_kafka import resolve
from cep.transports.kafka_read import PartitionRecords, partition_ends, read_partition_range
from grammar import ir

CHUNK_OFFSETS = 10_000
_CEP_OPTIONS = ("format",)  # query options cep reads itself, never passed to librdkafka
_FORMATS = ("json", "csv")


def is_kafka(source: str) -> bool:
    return source.startswith("kafka://")


@dataclass(frozen=True)
class KafkaSource:
    """A ``kafka://`` source: its address (cep's options removed), topics and format."""

    uri: str  # the source as given
    address: KafkaAddress
    topics: tuple[str, ...]
    fmt: str

    @staticmethod
    def parse(uri: str) -> KafkaSource:
        parsed = parse_kafka_uri(uri)
        options = dict(parsed.address.options)
        fmt = options.pop("format", "json")
        if fmt not in _FORMATS:
            raise ValueError(f"kafka source format must be json or csv, got {fmt!r}")
        address = KafkaAddress(parsed.address.bootstrap, options, parsed.address.shown)
        return KafkaSource(uri, address, parsed.topics, fmt)

    def segment_path(self, topic: str, partition: int) -> str:
        """The URI with only ``topic``, and ``#partition``: what a segment records."""
        base, _, query = self.uri.partition("?")
        head = base[: base.index("/", len("kafka://"))]
        return f"{head}/{topic}" + (f"?{query}" if query else "") + f"#{partition}"


def parse_segment_path(path: str) -> tuple[KafkaSource, str, int]:
    """(source, topic, partition) of a kafka segment's path."""
    uri, _, partition = path.rpartition("#")
    source = KafkaSource.parse(uri)
    return source, source.topics[0], int(partition)


def kafka_segments(sources: dict[str, str], known: dict[str, tuple[int, float]],
                   starting: str) -> list[tuple[str, str, int, int]]:
    """``(stream, path, start, end)`` of the new chunks of every Kafka source, in log
    order: chunk i of every partition, then chunk i + 1 (see the module notes).
    ``known`` maps a segment path to its logged end."""
    if starting not in STARTING_OFFSETS:
        raise ValueError(f"--starting-offsets must be earliest or latest, got {starting!r}")
    ranges: list[tuple[str, str, int, int]] = []
    marks: list[tuple[str, str, int, int]] = []
    for stream, uri in sources.items():
        if not is_kafka(uri):
            continue
        source = KafkaSource.parse(uri)
        address = resolve(source.address)
        for topic in source.topics:
            for partition, (low, high) in sorted(partition_ends(address, topic).items()):
                path = source.segment_path(topic, partition)
                if path in known:
                    start = max(known[path][0], low)
                elif starting == "latest":  # remember where it starts, even if nothing comes
                    marks.append((stream, path, high, high))
                    continue
                else:
                    start = low
                ranges.append((stream, path, start, high))
    chunks: list[list[tuple[str, str, int, int]]] = [
        [(stream, path, lo, min(hi, lo + CHUNK_OFFSETS)) for lo in range(start, hi, CHUNK_OFFSETS)]
        for stream, path, start, hi in ranges if hi > start]
    deepest = max((len(c) for c in chunks), default=0)
    return marks + [c[i] for i in range(deepest) for c in chunks if i < len(c)]


class _KafkaDeadLetter:
    """What the file reader sees as its dead letter: records its rejects under the
    topic/partition and Kafka offset of the record they came from."""

    def __init__(self, dead: DeadLetter, source: str, starts: np.ndarray,
                 offsets: np.ndarray) -> None:
        self.dead, self.source, self.starts, self.offsets = dead, source, starts, offsets

    def add(self, source: str, offset: int, kind: str, reason: str, record: str) -> None:
        index = int(np.searchsorted(self.starts, offset, side="right")) - 1
        self.dead.add(self.source, int(self.offsets[index]), kind, reason, record)

    def skip(self, n: int = 1) -> None:
        self.dead.skip(n)


class KafkaFetch:
    """The records of several offset ranges of Kafka partitions, fetched with one read per
    partition: from the least start to the greatest end of its ranges.

    Why: a Spark input task (or the local runner) reads a batch's chunks of a partition
    one after another, and a fetch costs what the broker returns, not what the range
    holds. The embedded broker returns the whole rest of the partition to every fetch,
    so ten 10,000-offset chunks read one by one, 100,000 records before the end of the
    partition, fetch the rest of the partition ten times (starting 300,000 records
    before its end: 2.55M records fetched for 100,000; measured 46-70 µs of wall time per
    record, against 11-13 for the same 100,000 at the partition's end): the ~74 task-µs
    per record of batches that fell behind. One read per partition fetches each record once. The
    ranges of one partition should be close together (a task's consecutive pieces):
    what lies between them is fetched too."""

    def __init__(self, ranges: list[tuple[str, int, int]]) -> None:
        spans: dict[str, tuple[int, int]] = {}
        for path, lo, hi in ranges:
            if hi > lo:
                first, last = spans.get(path, (lo, hi))
                spans[path] = (min(first, lo), max(last, hi))
        self.spans = spans
        self.records: dict[str, PartitionRecords] = {}

    def between(self, path: str, lo: int, hi: int) -> PartitionRecords:
        """The records of [lo, hi) of ``path``'s partition (fetched on first use)."""
        span = self.spans.get(path)
        if span is None or not (span[0] <= lo and hi <= span[1]):
            return _fetch(path, lo, hi)
        if path not in self.records:
            self.records[path] = _fetch(path, *span)
        whole = self.records[path]
        a, b = np.searchsorted(whole.offsets, [lo, hi])
        return PartitionRecords(whole.offsets[a:b], whole.values[a:b])


def _fetch(path: str, lo: int, hi: int) -> PartitionRecords:
    source, topic, partition = parse_segment_path(path)
    return read_partition_range(resolve(source.address), topic, partition, lo, hi)


def read_kafka_range(path: str, lo: int, hi: int, stream: ir.StreamDef, dead: DeadLetter,
                     max_record_bytes: int = MAX_RECORD_BYTES,
                     fetched: KafkaFetch | None = None,
                     unread: frozenset[str] = frozenset()) -> pd.DataFrame:
    """The records with offsets [lo, hi) of a kafka segment as :func:`read_range`'s
    typed frame, whose ``offset`` column holds Kafka offsets; ``fetched``: where the
    caller's ranges were fetched together (else this range is fetched alone);
    ``unread``: fields checked but left out of the frame, as :func:`read_range`'s."""
    source, topic, partition = parse_segment_path(path)
    records = (fetched.between(path, lo, hi) if fetched is not None
               else _fetch(path, lo, hi))
    values = records.values
    if None in values:
        values = [b"" if v is None else v for v in values]
    blob = b"\n".join(values)
    if blob.count(b"\n") != max(0, len(values) - 1):
        values = [v.replace(b"\n", b" ") for v in values]
        blob = b"\n".join(values)
    header = b""
    if source.fmt == "csv":
        header = ",".join(name for name, _ in stream.fields).encode("utf-8") + b"\n"
    lengths = np.fromiter(map(len, values), np.int64, len(values)) + 1
    starts = len(header) + np.cumsum(lengths) - lengths
    mapped = _KafkaDeadLetter(dead, f"{topic}/{partition}", starts, records.offsets)
    with tempfile.NamedTemporaryFile(suffix=f".{source.fmt}", prefix="cep-kafka-") as tmp:
        tmp.write(header + blob + (b"\n" if values else b""))
        tmp.flush()
        frame = read_range(tmp.name, source.fmt, len(header), os.path.getsize(tmp.name),
                           stream, mapped,  # type: ignore[arg-type]  # duck-typed dead letter
                           max_record_bytes=max_record_bytes, unread=unread)
    index = np.searchsorted(starts, frame["offset"].to_numpy())
    frame["offset"] = records.offsets[index]
    return frame
