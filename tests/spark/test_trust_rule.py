"""The trust rule of resident engines (``cep.spark.engines.resident.take_engine``), case by case,
against a changelog held in a dict in place of Spark's state variable (same calls:
``getValue``/``updateValue``/``clear``), so that each case can set up
exactly the worker copy it needs. On Spark a failed task's worker exits with its copy,
so ``test_resident_state.py`` cannot leave an advanced copy for a retry to find; a task
that fails after its worker was released (its state store commit failing) can, and that
is the case here."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from cep.engine.codec import StateFormatError
from cep.engine.table import KEY, SEQ, SUB
from cep.reference import input_watermark
from cep.spark.engines import log as engine_log
from cep.spark.engines import resident
from cep.spark.engines.batch import save
from cep.spark.engines.log import VERSION_KEY, EngineLog, Version, part_key
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


def test_an_engine_left_without_keys_writes_a_base_that_clears_its_log():
    """An engine that hands every key over (a retired engine at a scale change) writes
    an empty base, so that an engine started later under its label reads nothing but
    that. Oracle: the log by hand: a base at batch 0, deltas at 1 and 2, then, once the
    work engine's keys all left, one entry, a base at batch 3 of the empty engine's
    bytes, and an engine rebuilt from it holds no key."""
    store = Store()
    for batch in range(3):
        _batch(store, batch)
    assert EngineLog(store.log).version().entries == (0, 1, 2)
    log = EngineLog(store.log)
    engine, _ = resident.take_engine(MODULE, log, "q", 0, 3)
    work = engine.split_off([0, 1, 2])
    work.export_keys([0, 1, 2])  # handed over: the work engine keeps none
    saved = save(log, engine, work, [0, 1, 2], 3)
    version = EngineLog(store.log).version()
    assert saved["kind"] == "base" and saved["held"] == 0
    assert version.entries == (3,) and version.base == 3
    assert version.base_bytes == saved["bytes"] == len(engine.snapshot())
    resident._RESIDENT.clear()
    rebuilt, origin = resident.take_engine(MODULE, EngineLog(store.log), "q", 0, 4)
    assert origin.kind == "rebuilt" and not rebuilt.keys()


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
    assert version == Version(1, "b", 0, 4, 6, (0, 1), parts=(1, 1))
    assert EngineLog(store.log).entry(1) == ("b", b"delta!")


def test_the_bytes_an_engine_imported_since_its_base_raise_the_fold_bar(monkeypatch):
    """The fold rule (``log.Version.folds``): deltas since the base, less the parcels'
    bytes imported since, fold once they pass the base's bytes and those parcels'.
    Oracle: the sums by hand, a 100-byte base, then a 150-byte delta from a batch that
    imported 80 bytes of parcels (70 of its own), against which a 110-byte delta stays
    one (70 + 110 = 180) and a 111-byte one folds."""
    monkeypatch.setattr(engine_log, "FOLD_FLOOR", 1)
    store = Store()
    EngineLog(store.log).append(0, "a", b"b" * 100, base=True)
    version = EngineLog(store.log).version()
    assert version.folds(101) and not version.folds(100)
    assert not version.folds(260, moved_in=80)  # 260 - 80 <= 100 + 80
    assert version.folds(261, moved_in=80)
    EngineLog(store.log).append(1, "b", b"d" * 150, base=False, moved_in=80)
    version = EngineLog(store.log).version()
    assert version.moved_in_bytes == 80 and version.delta_bytes == 150
    assert not version.folds(110) and version.folds(111)  # 150 - 80 + 111 > 180
    EngineLog(store.log).append(2, "c", b"b" * 230, base=True)  # a base: all in it
    assert EngineLog(store.log).version().moved_in_bytes == 0


@pytest.fixture
def small_parts(monkeypatch):
    """State rows of at most 16 bytes: every entry of these tiny engines has parts."""
    monkeypatch.setattr(engine_log, "PART_BYTES", 16)


def test_an_entry_is_written_in_bounded_parts_and_read_back_whole(small_parts):
    """Oracle: the blob written. Each state row holds at most PART_BYTES of it (issue
    51: the JVM copies a state call's value several times at once), and a base clears
    the earlier entries' parts with them."""
    store = Store()
    blob = bytes(range(256)) * 3 + b"tail"
    EngineLog(store.log).append(0, "a", blob, base=True)
    EngineLog(store.log).append(1, "b", blob[:40], base=False)
    log = EngineLog(store.log)
    assert log.version().parts == (49, 3)
    assert log.entry(0) == ("a", blob) and log.entry(1) == ("b", blob[:40])
    assert log.token(1) == "b" and log.entry(2) is None
    assert all(len(value[1]) <= 16 for key, value in store.log.values.items()
               if key != (VERSION_KEY,))
    EngineLog(store.log).append(2, "c", b"x" * 20, base=True)
    assert set(store.log.values) == {(2,), (part_key(2, 1),), (VERSION_KEY,)}


def test_part_keys_meet_no_batch_nor_the_version():
    keys = [part_key(b, p) for b in range(50) for p in range(40)]
    assert len(set(keys)) == len(keys)
    assert all(k < VERSION_KEY for b in range(50) for k in keys[b * 40 + 1:b * 40 + 40])
    assert [part_key(b, 0) for b in range(50)] == list(range(50))


def test_engines_in_parts_give_the_events_of_engines_in_one_piece(monkeypatch):
    """Oracle: the same batches with every entry in one state row. The engine read back
    from parts, rebuilt and caught up, emits what the whole-blob one does."""
    def story() -> tuple[list[str], list]:
        resident._RESIDENT.clear()
        store, kinds, out = Store(), [], []
        for batch in range(3):
            kind, values = _batch(store, batch)
            kinds.append(kind)
            out.append(values)
        older = resident._RESIDENT[("q", 0)]
        _batch(store, 3)
        resident._RESIDENT[("q", 0)] = older  # batch 3 ran elsewhere
        for batch, start in [(4, "q"), (5, "restarted"), (6, "restarted")]:
            kind, values = _batch(store, batch, start)
            kinds.append(kind)
            out.append(values)
        return kinds, out

    whole = story()
    monkeypatch.setattr(engine_log, "PART_BYTES", 16)
    parted = story()
    assert parted == whole and all(whole[1])
    assert parted[0] == ["new", "resident", "resident", "caught_up", "rebuilt", "resident"]


def test_a_log_written_before_parts_reads_and_grows(small_parts):
    """Oracle: the blobs as an older cep wrote them, one state row per entry and a
    version without parts: they read back as written, and a delta appended after them
    is read in its parts."""
    store = Store()
    old = {"batch": 1, "token": "b", "base": 0, "base_bytes": 40, "delta_bytes": 30,
           "entries": [0, 1], "rules": 0}
    store.log.updateValue((0,), ("a", b"B" * 40))
    store.log.updateValue((1,), ("b", b"D" * 30))
    store.log.updateValue((VERSION_KEY,), ("b", json.dumps(old).encode()))
    assert EngineLog(store.log).entry(0) == ("a", b"B" * 40)
    EngineLog(store.log).append(2, "c", b"E" * 33, base=False)
    log = EngineLog(store.log)
    assert log.version().parts == (1, 1, 3)
    assert [log.entry(b) for b in (0, 1, 2)] == [("a", b"B" * 40), ("b", b"D" * 30),
                                                  ("c", b"E" * 33)]


@pytest.mark.parametrize("damage", ["missing", "other token"])
def test_an_entry_with_a_part_missing_or_of_another_write_is_refused(small_parts, damage):
    store = Store()
    EngineLog(store.log).append(0, "a", b"z" * 40, base=True)
    if damage == "missing":
        del store.log.values[(part_key(0, 2),)]
    else:
        store.log.values[(part_key(0, 1),)] = ("stale", b"y" * 16)
    with pytest.raises(StateFormatError, match="part"):
        EngineLog(store.log).entry(0)


@pytest.mark.parametrize("parts", [[1], [0, 1], [1, "2"]])
def test_a_version_whose_parts_do_not_fit_its_entries_is_refused(parts):
    planted = {"batch": 1, "token": "t", "base": 0, "base_bytes": 4, "delta_bytes": 2,
               "entries": [0, 1], "rules": 0, "parts": parts}
    store = Store()
    store.log.updateValue((VERSION_KEY,), ("t", json.dumps(planted).encode()))
    with pytest.raises(StateFormatError, match="no valid version"):
        EngineLog(store.log).version()
