"""Fixtures for the transport tests: a real embedded Kafka broker, started once per test
module on 127.0.0.1, and a plain consumer to check topics (MongoDB: ``tests/conftest.py``)."""

from __future__ import annotations

import socket
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
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound by us, never
    listening, so no other process on the shared machine can take it meanwhile."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def fresh_name() -> Callable[[str], str]:
    """Unique topic / collection names, so tests sharing a server never meet."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def consume() -> Callable[..., Seen]:
    return consume_all
