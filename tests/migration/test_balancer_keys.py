"""The Balancer's dense key ids (what its load statistics and strategies index by), on the
session's embedded MongoDB without Spark: ids in order of first appearance, the keys'
KG engines, and the keys that stored maps move learnt from the maps themselves."""

from __future__ import annotations

import json

import numpy as np

from migration.hashing import kg_engine
from migration.protocol import KeyMap
from migration.store import StateStore
from splitter.balancer import Balancer


def _loads(*batches: dict[str, int]) -> list[dict]:
    """The engines' reports of one batch: per-key event counts, keys as JSON text."""
    return [{"key_load": counts} for counts in batches]


def test_keys_get_dense_ids_in_order_of_first_appearance(store: StateStore) -> None:
    balancer = Balancer(store, "kg", 2)
    balancer.prepare()
    first: dict = {}
    balancer(0, _loads({'"b"': 2, '"a"': 1}, {'"b"': 1, "null": 4}), first)
    balancer(1, _loads({'"c"': 1, '"a"': 2, "5": 1}), {})
    assert balancer.texts == ['"b"', '"a"', "null", '"c"', "5"]
    assert balancer.ids == {text: i for i, text in enumerate(balancer.texts)}
    assert balancer.statistics.seen.tolist() == [3, 3, 4, 1, 1]  # counts merged per id
    values = np.empty(5, dtype=object)
    values[:] = [json.loads(text) for text in balancer.texts]
    assert balancer.kg.tolist() == kg_engine(values, 2).tolist()
    assert first["keys"] == 3 and first["batch_keys"] == 3 and first["keys_moved"] == 0


def test_keys_a_stored_map_moves_get_ids_and_keep_their_engine(store: StateStore) -> None:
    # a restarted driver finds map 2 moving key "x", which no engine reported since: "x"
    # gets an id (with no load) and map 3 keeps it where map 2 put it, not back at home
    balancer = Balancer(store, "kg", 3)
    balancer.prepare()
    home = int(kg_engine(np.array(["x"], dtype=object), 3)[0])
    moved = {'"x"': (home + 1) % 3}
    store.put_key_map(2, KeyMap(3, moved).encode())
    balancer(1, _loads({'"y"': 1}), {})
    assert balancer.texts == ['"y"', '"x"']
    assert balancer.statistics.seen.tolist() == [1, 0]
    assert KeyMap.decode(store.get_key_map(3)).overrides == moved
