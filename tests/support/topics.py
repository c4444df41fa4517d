"""Reading a topic back as a plain consumer would, for the transport and Spark tests
(``support.topics``)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

from cep.transports.kafka_read import partition_ends

Seen = list[tuple[int, int, bytes | None, bytes]]


def consume_all(bootstrap: str, topic: str, isolation: str = "read_committed",
                timeout_s: float = 120.0) -> Seen:
    """Every (partition, offset, key, value) of a topic as a plain consumer with
    ``isolation`` sees it, read until every partition reports its end (the client's
    partition-EOF event: the last stable offset for read_committed, the high watermark
    otherwise), not for a quiet spell that a loaded machine can outlast; a partition
    not read to its end within ``timeout_s`` fails the test."""
    ends = partition_ends(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cep-test-check",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _high) in ends.items()])
    seen: Seen = []
    unread = set(ends)
    deadline = time.monotonic() + timeout_s
    try:
        while unread:
            assert time.monotonic() < deadline, (
                f"partitions {sorted(unread)} of {topic!r} not read to their end "
                f"within {timeout_s} s")
            for m in consumer.consume(10_000, 0.1):
                error = m.error()
                if error is None:
                    seen.append((m.partition(), m.offset(), m.key(), m.value()))
                elif error.code() == KafkaError._PARTITION_EOF:
                    unread.discard(m.partition())
    finally:
        consumer.close()
    return sorted(seen)
