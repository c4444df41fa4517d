"""The trust rule of resident engines (``cep.spark.engines.resident.take_engine``), case by case,
against a changelog held in a dict in place of Spark's state variable (same calls:
``getValue``/``updateValue``/``clear``), so that each case can set up
exactly the worker copy it needs. On Spark a failed task's worker exits with its copy,
so ``test_resident_state.py`` cannot leave an advanced copy for a retry to find; a task
that fails after its worker was released (its state store commit failing) can, and that
is the case here."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cep.engine.codec import StateFormatError
from cep.engine.table import KEY, SEQ, SUB
from cep.reference import input_watermark
from cep.spark.engines import resident
from cep.spark.engines.batch import save
from cep.spark.engines.log import VERSION_KEY, EngineLog, Version
from grammar.compile import compile_text

MODULE = compile_text("CREATE SCHEMA S (k long, ts timestamp, v double) TIMESTAMP ts;\n"
                      "SELECT count(*) AS n FROM S#groupwin(k)#length(3);", "trust")


class MapVariable:
    def __init__(self) -> None:
        self.values: dict[tuple, tuple] = {}

    def getValue(self, key: tuple) -> tuple | None:
        return self.values.get(key)

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.values[key] = value

    def clear(self) -> None:
        self.values.clear()


class Store:
    """An engine's state variable, committed or not as Spark would."""

    def __init__(self) -> None:
        self.log = MapVariable()

    def copy(self) -> Store:
        out = Store()
        out.log.values = dict(self.log.values)
        return out


def _rows(batch: int) -> dict:
    keys = np.array([0, 1, batch % 3], dtype=object)
    n = len(keys)
    return {"S": {KEY: keys, SEQ: np.arange(n, dtype=np.int64) + 10 * batch,
                  SUB: np.zeros(n, dtype=np.int64), "k": keys.astype(np.int64),
                  "ts": np.full(n, batch, dtype=np.int64), "v": np.ones(n)}}


def _batch(store: Store, batch: int, start: str = "q") -> tuple[str, list[str]]:
    """Run ``batch`` of engine 0 on this worker against ``store``: where its engine came
    from, and the values it emitted."""
    log = EngineLog(store.log)
    engine, origin = resident.take_engine(MODULE, log, start, 0, batch)
    keys = [0, 1, 2]
    work = engine.split_off(keys)
    rows = _rows(batch)
    out = work.process(rows, dataclasses.replace(input_watermark(MODULE, rows), final=False))
    saved = save(log, engine, work, keys, batch)
    resident.keep(start, 0, batch, saved["token"], engine)
    return origin.kind, out["values"].tolist()


@pytest.fixture(autouse=True)
def empty_registry():
    resident._RESIDENT.clear()
    yield
    resident._RESIDENT.clear()


def test_the_copy_at_the_version_is_used_and_a_retry_after_an_uncommitted_batch_rebuilds():
    store = Store()
    assert _batch(store, 0)[0] == "new"
    assert _batch(store, 1)[0] == "resident"
    committed = store.copy()
    kind, first = _batch(store, 2)  # this worker's copy advances ...
    assert kind == "resident"
    kind, retried = _batch(committed, 2)  # ... but the commit failed: Spark retries
    assert kind == "rebuilt" and retried == first


def test_an_older_copy_catches_up_and_one_of_another_start_is_never_used():
    store = Store()
    _batch(store, 0)
    older = resident._RESIDENT[("q", 0)]
    _batch(store, 1)
    _batch(store, 2)  # batches 1 and 2 ran "elsewhere" (this worker's copy moved on)
    resident._RESIDENT[("q", 0)] = older
    assert _batch(store, 3)[0] == "caught_up"
    assert _batch(store, 4, start="restarted")[0] == "rebuilt"


def test_a_copy_whose_token_the_log_does_not_have_is_rebuilt():
    store = Store()
    _batch(store, 0)
    committed = store.copy()
    _batch(store, 1)  # never committed: its token is not in the committed log
    _batch(committed, 1)
    kind, _ = _batch(committed, 2)
    assert kind == "resident"  # the retry's own copy, at the committed version
    resident._RESIDENT[("q", 0)].token = "not-in-the-log"
    assert _batch(committed, 3)[0] == "rebuilt"


@pytest.mark.parametrize("planted", [b"\x80\x04K\x01.", b"{}", b'{"batch": "1"}',
                                     b'{"batch": 1, "token": "t", "base": 1, "base_bytes": 9,'
                                     b' "delta_bytes": 0, "entries": [1.5]}'])
def test_a_version_that_is_not_one_is_refused(planted):
    """The version rests in the checkpoint, where others can write: anything but the
    JSON of a version (a pickle among them) is refused before it is used."""
    store = Store()
    store.log.updateValue((VERSION_KEY,), ("t", planted))
    with pytest.raises(StateFormatError, match="no valid version"):
        EngineLog(store.log).version()


def test_the_version_round_trips_beside_the_entries():
    store = Store()
    log = EngineLog(store.log)
    log.append(0, "a", b"base", base=True)
    EngineLog(store.log).append(1, "b", b"delta!", base=False)
    version = EngineLog(store.log).version()
    assert version == Version(1, "b", 0, 4, 6, (0, 1))
    assert EngineLog(store.log).entry(1) == ("b", b"delta!")
