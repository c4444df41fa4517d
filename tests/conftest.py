"""Fixtures every test directory shares: rule text run over Python event dicts with the
reference runner, one real embedded MongoDB for the session, and a port that refuses
connections."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.ports import refusing_port

from cep.engine.functions import FUNCTIONS
from cep.engine.output import output_records
from cep.engine.udf.shipment import _INSTALLED
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from cep.servers.mongo import EmbeddedMongo
from grammar.compile import compile_text


def write_events(path: Path, events: list[dict]) -> Path:
    """Events as JSON lines; an int ``ts`` is read as epoch milliseconds."""
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.fixture
def run_epl(tmp_path):
    """``run_epl(rule_text, events, batch_size=None, **overrides) -> list of output dicts``.

    An output's ``seq`` is shown as the index in ``events`` of the event it was made at,
    or ``"end"`` for the end of the input (where pending timers fire)."""
    counter = iter(range(1_000_000))

    def run(text: str, events: list[dict], batch_size: int | None = None,
            **overrides: str) -> list[dict]:
        module = compile_text(text, "<test>", {k: str(v) for k, v in overrides.items()})
        path = write_events(tmp_path / f"events{next(counter)}.jsonl", events)
        loaded = load_inputs(module, [str(path)], None)
        out = output_records(run_reference(module, loaded.tables, batch_size))
        # an event's seq is its place in the input, here the byte offset of its line in
        # the one file: shown as its index in ``events``, which the tests speak of
        starts = np.cumsum([0, *(len(json.dumps(e)) + 1 for e in events)])
        index: dict[int, int | str] = {int(o): i for i, o in enumerate(starts[:-1])}
        index[loaded.end_seq] = "end"
        return [{**r, "seq": index[r["seq"]]} for r in out]

    return run


@pytest.fixture(autouse=True)
def udf_registry() -> Iterator[None]:
    """Each test starts with the functions registry as the session began it (the
    built-ins and what earlier fixtures registered) and leaves it so: a function a test
    registers (``register_udf``, a ``--udf`` file's import, a shipment installed in
    this process) is gone after it, so no test sees another's functions and a test run
    twice in one process meets a registry as it did the first time."""
    functions, installed = dict(FUNCTIONS), set(_INSTALLED)
    yield
    FUNCTIONS.clear()
    FUNCTIONS.update(functions)
    _INSTALLED.clear()
    _INSTALLED.update(installed)


@pytest.fixture(scope="session")
def mongo() -> Iterator[EmbeddedMongo]:
    """Started once: the server takes ~0.5 s to start, the tests only need data."""
    with EmbeddedMongo() as server:
        yield server


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test (see
    ``support.ports.refusing_port``)."""
    with refusing_port() as port:
        yield port


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A slow scale test may run for most of an hour; the ini's ten minutes are for the rest."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(3600))
