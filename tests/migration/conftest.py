"""Fixtures for the key-state handoff tests: a state store per test on the session's
embedded MongoDB (``tests/conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from cep.servers.mongo import EmbeddedMongo
from migration.store import StateStore


@pytest.fixture
def store(mongo: EmbeddedMongo) -> Iterator[StateStore]:
    """A store with a fresh run id, so tests sharing the server never see each other."""
    with StateStore(mongo.uri, run_id=f"t-{uuid.uuid4().hex[:12]}") as s:
        yield s
        s.drop_run()
