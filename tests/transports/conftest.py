"""Fixtures for the transport tests: a real embedded Kafka broker, started once per test
module on 127.0.0.1, and a plain consumer to check topics (MongoDB: ``tests/conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from support.topics import Seen, consume_all

from cep.servers.kafka import EmbeddedKafka


@pytest.fixture(scope="module")
def kafka() -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka() as broker:
        yield broker


@pytest.fixture
def fresh_name() -> Callable[[str], str]:
    """Unique topic / collection names, so tests sharing a server never meet."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def consume() -> Callable[..., Seen]:
    return consume_all
