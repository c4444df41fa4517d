"""Fixtures for the transport tests: a real embedded Kafka broker and MongoDB server,
each started once per test module on 127.0.0.1, and a plain consumer to check topics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from cep.transports.broker import EmbeddedKafka
from cep.transports.kafka_read import partition_ends
from migration.server import EmbeddedMongo

Seen = list[tuple[int, int, bytes | None, bytes]]


@pytest.fixture(scope="module")
def kafka() -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka() as broker:
        yield broker


@pytest.fixture(scope="module")
def mongo() -> Iterator[EmbeddedMongo]:
    with EmbeddedMongo() as server:
        yield server


@pytest.fixture
def fresh_name() -> Callable[[str], str]:
    """Unique topic / collection names, so tests sharing a server never meet."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"


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


@pytest.fixture
def consume() -> Callable[..., Seen]:
    return consume_all
