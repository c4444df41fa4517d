"""Reading a topic back as a plain consumer would, for the transport and Spark tests
(``support.topics``)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from cep.transports.kafka_read import partition_ends

Seen = list[tuple[int, int, bytes | None, bytes]]


def consume_all(bootstrap: str, topic: str, isolation: str = "read_committed",
                settle_s: float = 0.5) -> Seen:
    """Every (partition, offset, key, value) of a topic as a plain consumer with
    ``isolation`` sees it, read until nothing new arrives for ``settle_s``."""
    ends = partition_ends(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cep-test-check",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _high) in ends.items()])
    seen: Seen = []
    quiet_until = time.monotonic() + settle_s
    while time.monotonic() < quiet_until:
        batch = [m for m in consumer.consume(10_000, 0.1) if m.error() is None]
        if batch:
            quiet_until = time.monotonic() + settle_s
        seen += [(m.partition(), m.offset(), m.key(), m.value()) for m in batch]
    consumer.close()
    return sorted(seen)
