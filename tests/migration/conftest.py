"""Fixtures for the migration tests: one real embedded SecantusDB for the session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from migration.server import EmbeddedMongo
from migration.store import StateStore


@pytest.fixture(scope="session")
def mongo() -> Iterator[EmbeddedMongo]:
    """Started once: the server takes ~0.5 s to start, the tests only need data."""
    with EmbeddedMongo() as server:
        yield server


@pytest.fixture
def store(mongo: EmbeddedMongo) -> Iterator[StateStore]:
    """A store with a fresh run id, so tests sharing the server never see each other."""
    with StateStore(mongo.uri, run_id=f"t-{uuid.uuid4().hex[:12]}") as s:
        yield s
        s.drop_run()
