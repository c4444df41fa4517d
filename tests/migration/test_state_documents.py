"""Key-state documents in the real embedded MongoDB: data-only, and a planted pickle in
the ``states`` collection is refused when an engine imports it, without running."""

from __future__ import annotations

import numpy as np
import pytest
from support.planted import planted_pickle

from cep.engine.codec import MAGIC, StateFormatError
from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.table import SEQ, take
from cep.reference import batch_watermarks, input_watermark, run_batch, run_reference
from cep.spark.engines.batch import export_moved_keys, import_moved_keys, leaving_keys
from grammar.compile import compile_text
from migration.protocol import KeyMap, key_text, parcel_name
from migration.store import StateStore

RULES = (
    "CREATE SCHEMA S (k long, ts timestamp, v double, name string) TIMESTAMP ts;\n"
    "SELECT sum(v) AS s, last(name) AS n FROM S#groupwin(k)#time(4 sec);\n"
    "SELECT a.v AS av, b.name AS bn FROM PATTERN [every a=S(v > 5) -> b=S(v < a.v)] "
    "PARTITION BY k;"
)


def _inputs(n: int = 200) -> dict:
    rng = np.random.default_rng(5)
    names = np.empty(n, dtype=object)
    names[:] = [f"é{i}" if i % 7 else None for i in range(n)]
    return {"S": {SEQ: np.arange(n, dtype=np.int64), "__sub": np.zeros(n, dtype=np.int64),
                  "k": rng.integers(0, 5, n).astype(np.int64),
                  "ts": np.cumsum(rng.integers(0, 900, n)).astype(np.int64) * 1000,
                  "v": rng.integers(0, 10, n).astype(np.float64), "name": names,
                  "name__null": np.array([i % 7 == 0 for i in range(n)])}}


def test_moved_keys_travel_through_mongodb_as_data_and_change_no_output(
        store: StateStore) -> None:
    """Engine A runs the first half, hands every key over through the store, engine B
    runs the second half: together they write what one engine writes."""
    module = compile_text(RULES, "handoff")
    inputs = _inputs()
    expected = output_records(run_reference(module, inputs))
    halves = [{"S": take(inputs["S"], inputs["S"][SEQ] < 100)},
              {"S": take(inputs["S"], inputs["S"][SEQ] >= 100)}]
    first, second = Engine(module), Engine(module)
    clocks = batch_watermarks(input_watermark(module, inputs), [(0, 100), (100, 1 << 40)])
    out = [run_batch(module, first, halves[0], clocks[0])]
    keys = sorted(first.keys())
    store.put_states(0, {"engine 0 to 1": first.export_keys(keys)})
    parcel = store.get_states(0, ["engine 0 to 1"])["engine 0 to 1"]
    assert parcel.startswith(MAGIC)
    assert sorted(second.import_keys(parcel)) == keys
    out.append(run_batch(module, second, halves[1], clocks[1]))
    got = output_records(out[0]) + output_records(out[1])
    assert got == expected and len(got) > 50


def test_planted_pickle_document_is_refused_and_nothing_runs(store: StateStore,
                                                             tmp_path) -> None:
    """Someone with write access to the MongoDB stores a pickle as engine 3's parcel: the
    importing engine refuses it with a clear error and the pickle never runs."""
    target = tmp_path / "pwned"
    store.put_states(4, {"engine 3 to 0": planted_pickle(target)})
    parcel = store.get_states(4, ["engine 3 to 0"])["engine 3 to 0"]
    engine = Engine(compile_text(RULES, "victim"))
    with pytest.raises(StateFormatError, match=r"key state parcel is not in cep's "
                       r"state format \(it starts like a Python pickle"):
        engine.import_keys(parcel)
    assert not target.exists()
    assert engine.keys() == set()


def _engines_after_first_half(module, inputs, owners: KeyMap, clock) -> list[Engine]:
    """Three engines that ran the first half of the input, each its keys under ``owners``."""
    first = take(inputs["S"], inputs["S"][SEQ] < 100)
    engines = [Engine(module) for _ in range(3)]
    owner = owners.owners(first["k"].astype(object))
    for e, engine in enumerate(engines):
        run_batch(module, engine, {"S": take(first, owner == e)}, clock)
    return engines


def test_parcels_hand_every_moved_key_to_its_new_engine(store: StateStore) -> None:
    """Map 1 sends every key to engine 1: engines 0 and 2 each write it one parcel at the
    end of batch 0, engine 1 adopts both in batch 1 and runs the second half alone, and
    the events equal one engine's over the whole input."""
    module = compile_text(RULES, "parcels")
    inputs = _inputs()
    expected = output_records(run_reference(module, inputs))
    grouping = KeyMap(3)
    to_one = KeyMap(3, {key_text(k): 1 for k in range(5)})
    store.put_key_map(0, grouping.encode())
    store.put_key_map(1, to_one.encode())
    store.put_key_map(2, to_one.encode())
    clocks = batch_watermarks(input_watermark(module, inputs), [(0, 100), (100, 1 << 40)])
    out = [run_reference(module, {"S": take(inputs["S"], inputs["S"][SEQ] < 100)})]
    engines = _engines_after_first_half(module, inputs, grouping, clocks[0])
    sent = {e: leaving_keys(store, e, 0) for e in range(3)}
    away = [key_text(k) for k in range(5) if grouping.owners_of([key_text(k)])[0] != 1]
    assert sent[1] == [] and sorted(sent[0] + sent[2]) == away and sent[0] and sent[2]
    moved = [export_moved_keys(store, engines[e], e, sent[e], 0) for e in (0, 2)]
    assert [m["exported_keys"] for m in moved] == [len(sent[0]), len(sent[2])]
    assert engines[0].keys() == engines[2].keys() == set()
    got = import_moved_keys(store, engines[1], 1, 1)
    assert sorted(got) == sorted(sent[0] + sent[2])
    assert engines[1].keys() == set(range(5))
    out.append(run_batch(module, engines[1],
                         {"S": take(inputs["S"], inputs["S"][SEQ] >= 100)}, clocks[1]))
    assert output_records(out[0]) + output_records(out[1]) == expected


def test_a_parcel_without_the_keys_the_maps_send_fails_and_adopts_nothing(
        store: StateStore) -> None:
    """The parcel engine 0 left for engine 1 holds another key than the maps move (state
    of another run, or written by hand): engine 1 refuses the batch and takes no key."""
    module = compile_text(RULES, "parcels")
    inputs = _inputs()
    grouping = KeyMap(3)
    home = int(grouping.owners(np.array([3], dtype=object))[0])
    store.put_key_map(0, grouping.encode())
    store.put_key_map(1, KeyMap(3, {"3": (home + 1) % 3}).encode())
    clock = batch_watermarks(input_watermark(module, inputs), [(0, 100), (100, 1 << 40)])[0]
    engines = _engines_after_first_half(module, inputs, grouping, clock)
    other = next(e for e in range(3) if e != home)  # its parcel, sent as if from home
    forged = engines[other].export_keys(sorted(engines[other].keys())[:1])
    store.put_states(0, {parcel_name(home, (home + 1) % 3): forged})
    receiver = engines[(home + 1) % 3]
    held = receiver.keys()
    with pytest.raises(ValueError, match="holds other keys than the key maps send"):
        import_moved_keys(store, receiver, (home + 1) % 3, 1)
    assert receiver.keys() == held
