"""Reading Kafka by exact offset ranges: driver-side planning and executor-side fetches.

A stream reader plans each micro-batch as ``{partition: (start, end)}`` from
:func:`partition_ends` and keeps those ranges in Spark's checkpoint; an executor then
calls :func:`read_partition_range` for one partition. A replay of the batch reads the
same records because a range is closed by offsets, never by time or by count.

Everything is read ``read_committed``: records of aborted transactions and the
transaction markers are skipped, so offsets inside a range have gaps, and the end we
plan with is the *last stable offset* (the read_committed high watermark), below
which nothing can still be aborted. A range is read until a record at or past ``end``
arrives, the record at ``end - 1`` arrives, or the broker reports the end of the
partition at or past ``end``.

Speed: confluent-kafka hands over one ``Message`` object per record, so we take their
offsets with ``np.fromiter(map(Message.offset, …))`` and their values with
``map(Message.value, …)``, batch by batch, and do nothing else per record in Python.
``consume(n, timeout)`` waits for all ``n`` records or the time-out even after the end
of the partition, so we call it in short slices.

The embedded broker (noida-db 0.2.3) ignores the fetch size limits: a fetch returns the
whole rest of the partition, so reading a short range far from a partition's end costs
as much as reading that rest (measured, 1 000 records of a 200 000-record partition: at
offset 1 000, 51 MB and 0.6-1.1 s; at 100 000, 0.27 s; the last 1 000, 3 ms).
Following a topic reads near its end and is cheap; catching up on a long backlog in
small ranges is quadratic there, so a reader of several ranges of a partition reads
them with one call (``cep.io.kafka_input.KafkaFetch``). Kafka honours the limits
(``max.partition.fetch.bytes``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from cep.transports import kafka_clients
from cep.transports.address import (
    ErrorLatch,
    KafkaAddress,
    KafkaTransportError,
    KafkaUnavailableError,
    as_address,
    kafka_errors,
    transport_error,
)

_SLICE_S = 0.05
_MAX_BATCH = 100_000
_READER_SETTINGS = {
    # A group id is required by the client, but assign() never joins or commits.
    "group.id": "cep-range-reader",
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "isolation.level": "read_committed",
    "auto.offset.reset": "error",  # a range below the log start is an error, not a jump
    "enable.partition.eof": True,
    "fetch.wait.max.ms": 50,
    "max.partition.fetch.bytes": 8 << 20,
    "fetch.max.bytes": 64 << 20,
    "queued.max.messages.kbytes": 256 << 10,
}


@dataclass(frozen=True)
class PartitionRecords:
    """Records of one partition's range: ``offsets[i]`` is the offset of ``values[i]``
    (int64, increasing, with gaps where markers or aborted records were); a value is
    None for a record without one (a tombstone)."""

    offsets: np.ndarray
    values: list[bytes | None]

    def __len__(self) -> int:
        return len(self.values)


def topic_partitions(
    bootstrap: KafkaAddress | str, topic: str, timeout_s: float = 10.0
) -> list[int]:
    """The topic's partition ids, sorted; KafkaTransportError if it does not exist."""
    address = as_address(bootstrap)
    with kafka_clients.lend("admin", address, {}, AdminClient) as lent:
        return _partitions_of(lent.client, address, topic, timeout_s)


def _partitions_of(admin: AdminClient, address: KafkaAddress, topic: str,
                   timeout_s: float) -> list[int]:
    """Lists every topic rather than asking for this one: a metadata request naming a
    topic can create it on brokers with auto-creation on."""
    with kafka_errors(address, f"listing topic {topic!r}"):
        metadata = admin.list_topics(timeout=timeout_s)
    found = metadata.topics.get(topic)
    if found is None:
        raise KafkaTransportError(f"Kafka topic {topic!r} does not exist at {address}")
    if found.error is not None:
        raise transport_error(address, f"listing topic {topic!r}", found.error)
    return sorted(found.partitions)


def partition_ends(
    bootstrap: KafkaAddress | str, topic: str, timeout_s: float = 10.0
) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}``: the first offset still in the log and the last
    stable offset (read_committed), the exclusive end a batch may plan up to. One admin
    client, kept across calls (:mod:`cep.transports.kafka_clients`): the planner asks
    this on every trigger."""
    address = as_address(bootstrap)
    with kafka_clients.lend("admin", address, {}, AdminClient) as lent:
        admin = lent.client
        partitions = _partitions_of(admin, address, topic, timeout_s)
        ends: dict[int, list[int]] = {p: [0, 0] for p in partitions}
        asked = [admin.list_offsets(  # both sides in flight at once: one round trip
            {TopicPartition(topic, p): spec for p in partitions},
            isolation_level=IsolationLevel.READ_COMMITTED,
            request_timeout=timeout_s,
        ) for spec in (OffsetSpec.earliest(), OffsetSpec.latest())]
        with kafka_errors(address, f"listing offsets of {topic!r}"):
            for side, futures in enumerate(asked):
                for tp, future in futures.items():
                    ends[tp.partition][side] = future.result().offset
    return {p: (low, high) for p, (low, high) in ends.items()}


def read_partition_range(
    bootstrap: KafkaAddress | str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    timeout_s: float = 60.0,
) -> PartitionRecords:
    """Exactly the committed records with ``start <= offset < end`` of one partition.

    Raises :class:`KafkaUnavailableError` when the broker cannot be reached within
    ``timeout_s``, :class:`KafkaTransportError` when the range is no longer (or not
    yet) in the log.
    """
    if end <= start:
        return PartitionRecords(np.empty(0, np.int64), [])
    address = as_address(bootstrap)
    what = f"read of {topic}[{partition}] offsets {start}..{end}"
    latch = ErrorLatch()
    # Prefetch no more than the range: the consumer is closed once the range is read.
    prefetch = min(end - start, _MAX_BATCH)
    settings = {**_READER_SETTINGS, "queued.min.messages": prefetch, "error_cb": latch}
    consumer = Consumer(address.client_config(**settings))
    offsets: list[np.ndarray] = []
    values: list[bytes | None] = []
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + timeout_s
        next_offset = start
        while next_offset < end:
            if time.monotonic() > deadline:
                raise _timed_out(address, what, next_offset, timeout_s, latch.last)
            with kafka_errors(address, what):
                batch = consumer.consume(min(end - next_offset, _MAX_BATCH), _SLICE_S)
            records, log_end = _split_events(batch, address, what)
            if records:
                got = np.fromiter(map(Message.offset, records), np.int64, len(records))
                keep = int(np.searchsorted(got, end))
                offsets.append(got[:keep])
                values.extend(map(Message.value, records[:keep]))
                next_offset = end if keep < len(got) else int(got[-1]) + 1
            if log_end is not None and next_offset < end:
                if log_end < end:
                    raise KafkaTransportError(
                        f"Kafka {what} at {address}: the partition's committed log ends "
                        f"at {log_end}, before the planned end (records lost on the broker?)"
                    )
                next_offset = end  # the rest of the range was markers or aborted records
    finally:
        consumer.close()
    flat = np.concatenate(offsets) if offsets else np.empty(0, np.int64)
    return PartitionRecords(flat, values)


def _split_events(
    batch: list[Message], address: KafkaAddress, what: str
) -> tuple[list[Message], int | None]:
    """(records, offset where the partition ended or None); raises on a real error."""
    errors = [m for m in batch if m.error() is not None]
    if not errors:
        return batch, None
    log_end = None
    for event in errors:
        error = event.error()
        if error.code() != KafkaError._PARTITION_EOF:
            raise transport_error(address, what, error)
        log_end = event.offset()
    return [m for m in batch if m.error() is None], log_end


def _timed_out(
    address: KafkaAddress, what: str, at: int, timeout_s: float, last: KafkaError | None
) -> KafkaTransportError:
    if last is not None:
        error = transport_error(address, f"{what} (stuck at {at} after {timeout_s:g} s)", last)
        if isinstance(error, KafkaUnavailableError):
            return error
    return KafkaTransportError(
        f"Kafka {what} at {address} timed out after {timeout_s:g} s at offset {at}"
        + (f" ({last.str()})" if last is not None else "")
    )



class EndFollower:
    """Reads a consumer that follows the end of its assigned partitions without a busy
    loop: a partition that reports its end (``enable.partition.eof`` must be on) leaves
    the assignment, and comes back at that end once its log grew past it (its high
    watermark, asked at most every ``idle_s`` while every partition waits), so a new
    record waits at most about ``idle_s`` longer. For consumers given partitions with
    ``assign`` (not a group subscription).

    Why: the embedded broker answers a fetch at once when nothing is new (it ignores
    ``fetch.wait.max.ms``), and librdkafka's fetcher, which fetches in the background
    whatever the caller does, fetches again at once. One consumer following an idle
    partition took 0.36 of the broker's cores and 0.45 of its own, with
    ``fetch.wait.max.ms`` 5, 100 or 500 alike (measured over 5 s each). ``pause`` stops
    that too, but a resumed partition was fetched again only about 1 s later (at the next
    metadata refresh); leaving and rejoining the assignment fetches it within 10 ms. A
    Kafka broker, which holds an empty fetch, costs only the watermark requests more.
    """

    def __init__(self, consumer: Consumer, idle_s: float = 0.005) -> None:
        self.consumer = consumer
        self.idle_s = idle_s
        self.waiting: dict[tuple[str, int], int] = {}  # left partition -> its end

    def consume(self, count: int, window_s: float) -> list[Message]:
        """What ``consumer.consume(count, window_s)`` returns (records and events), or
        nothing after ``idle_s`` while every partition waits at its end."""
        self._rejoin_grown()
        if self.waiting and not self.consumer.assignment():
            time.sleep(self.idle_s)
            return []
        batch = self.consumer.consume(count, window_s)
        last: dict[tuple[str, int], int | None] = {}  # partition -> its end, if it ended
        for m in batch:
            eof = m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF
            last[(m.topic(), m.partition())] = m.offset() if eof else None
        ended = {part: end for part, end in last.items() if end is not None}
        if ended:
            self.consumer.incremental_unassign([TopicPartition(*part) for part in ended])
            self.waiting.update(ended)
        return batch

    def _rejoin_grown(self) -> None:
        grown = []
        for (topic, partition), end in self.waiting.items():
            _low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=5.0, cached=False)
            if high > end:
                grown.append(TopicPartition(topic, partition, end))
        if grown:
            self.consumer.incremental_assign(grown)
            for tp in grown:
                del self.waiting[(tp.topic, tp.partition)]


def consume_topic(
    bootstrap: KafkaAddress | str,
    topic: str,
    start: str = "earliest",
    follow: bool = False,
    timeout_s: float = 60.0,
) -> Iterator[list[Message]]:
    """A topic's committed records, batch by batch, as Kafka's console consumer reads
    them (``cep consume``): from every partition's ``earliest`` record or from its
    ``latest`` end; without ``follow`` up to the ends found at the start (so a run
    that keeps writing does not keep this reading), with it until the caller stops.

    Read ``read_committed``, so a transaction's records appear once it commits, as cep's
    own Kafka output is meant to be read. A partition's order is its offsets'; the
    partitions interleave as the broker hands them over. Without ``follow``, a
    partition that stops short of the end found at the start for ``timeout_s`` raises
    :class:`KafkaTransportError`.
    """
    address = as_address(bootstrap)
    ends = partition_ends(address, topic, timeout_s)
    starts = {p: (low if start == "earliest" else high) for p, (low, high) in ends.items()}
    unread = {p for p, (_low, high) in ends.items() if starts[p] < high}
    if not follow and not unread:
        return
    what = f"read of {topic}"
    latch = ErrorLatch()
    consumer = Consumer(address.client_config(**{**_READER_SETTINGS, "error_cb": latch}))
    try:
        consumer.assign([TopicPartition(topic, p, at) for p, at in starts.items()])
        follower = EndFollower(consumer)
        deadline = time.monotonic() + timeout_s
        while follow or unread:
            with kafka_errors(address, what):
                batch = follower.consume(10_000, 0.2)
            records = [m for m in batch if m.error() is None]
            for event in batch:
                error = event.error()
                if error is None:
                    continue
                if error.code() != KafkaError._PARTITION_EOF:
                    raise transport_error(address, what, error)
                if event.offset() >= ends[event.partition()][1]:
                    unread.discard(event.partition())
            if not follow:  # a record at the end found at the start, or past it: done
                unread -= {m.partition() for m in records
                           if m.offset() >= ends[m.partition()][1] - 1}
                records = [m for m in records if m.offset() < ends[m.partition()][1]]
            if records:
                deadline = time.monotonic() + timeout_s
                yield records
            elif not follow and time.monotonic() > deadline:
                raise KafkaTransportError(
                    f"Kafka {what} at {address}: partitions {sorted(unread)} not read to "
                    f"their end within {timeout_s:g} s"
                    + (f" ({latch.last.str()})" if latch.last is not None else ""))
    finally:
        consumer.close()
