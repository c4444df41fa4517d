"""Sending records to a Kafka topic with an idempotent producer, and making the topic.

What ``cep produce`` (:mod:`cep.io.kafka_produce`) needs of the wire: :func:`ensure_topic`
creates a topic with a partition count (or checks an existing one's), and
:func:`send_records` sends chunks of records in order. A keyed record is placed by the
client's ``murmur2_random`` partitioner, as Java clients do, so every record of a key
lands in one partition in the order sent; without keys, record ``i`` (counted over all
chunks) goes to partition ``i % partitions``: deterministic, so two loads of one file
give the same topic. Records go out with ``produce_batch`` a chunk at a time; ``flush``
waits for every acknowledgement and any delivery failure raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from cep.transports.address import (
    KafkaAddress,
    KafkaTransportError,
    as_address,
    kafka_errors,
    transport_error,
)
from cep.transports.kafka_read import topic_partitions

CHUNK = 50_000  # records per produce_batch round (and per flush)
_PRODUCER_SETTINGS = {
    "partitioner": "murmur2_random",
    "linger.ms": 20,
    "batch.size": 1 << 20,
    "queue.buffering.max.messages": 2 * CHUNK,
    "acks": "all",
    "enable.idempotence": True,
}

#: a chunk of record values, with their keys (None: unkeyed, placed round-robin)
Chunk = tuple[Sequence[bytes], Sequence[str | None] | None]


def ensure_topic(
    bootstrap: KafkaAddress | str, topic: str, partitions: int | None, timeout_s: float = 30.0
) -> int:
    """Create ``topic`` with ``partitions`` (1 if None) unless it exists; return its
    partition count. An existing topic with another count is an error, not a surprise."""
    address = as_address(bootstrap)
    admin = AdminClient(address.client_config())
    with kafka_errors(address, f"listing topic {topic!r}"):
        existing = admin.list_topics(timeout=timeout_s).topics.get(topic)
    if existing is None:
        count = partitions or 1
        future = admin.create_topics([NewTopic(topic, num_partitions=count)])[topic]
        try:
            future.result(timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise transport_error(address, f"creating topic {topic!r}", exc) from None
        return len(topic_partitions(address, topic, timeout_s))
    count = len(existing.partitions)
    if partitions is not None and partitions != count:
        raise KafkaTransportError(
            f"Kafka topic {topic!r} at {address} has {count} partitions, not {partitions}"
        )
    return count


def send_records(address: KafkaAddress, topic: str, partitions: int, chunks: Iterable[Chunk],
                 operation: str, timeout_s: float = 120.0) -> int:
    """Send every chunk's records to ``topic`` (of ``partitions`` partitions), in order,
    and wait for them all to be acknowledged; the number sent. ``operation`` names the
    work in a failure's one-line message."""
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    producer = Producer(address.client_config(**_PRODUCER_SETTINGS))
    first = 0
    with kafka_errors(address, operation):
        for values, keys in chunks:
            if keys is None:
                # produce_batch ignores a per-message "partition" (confluent-kafka
                # 2.16), so each partition's records go in a call of their own.
                for partition in range(partitions):
                    mine = values[(partition - first) % partitions :: partitions]
                    producer.produce_batch(
                        topic, [{"value": v} for v in mine], partition=partition,
                        on_delivery=on_delivery,
                    )
            else:
                messages = [{"value": v, "key": k} for v, k in zip(values, keys, strict=True)]
                producer.produce_batch(topic, messages, on_delivery=on_delivery)
            producer.flush(timeout_s)
            first += len(values)
        left = producer.flush(timeout_s)
    if failures or left:
        first_error = failures[0].str() if failures else f"{left} records unacknowledged"
        raise KafkaTransportError(
            f"Kafka {operation} failed at {address}: {len(failures) or left} of {first} "
            f"records not delivered ({first_error})"
        )
    return first
