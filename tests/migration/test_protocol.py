"""Which keys an engine imports and exports, on hand examples and random maps."""

from __future__ import annotations

import json
import random

import numpy as np

from migration.hashing import kg_engine
from migration.protocol import KeyMap, exports, imports, key_text


def kg(key: object, n: int = 3) -> int:
    return int(kg_engine(np.array([key], dtype=object), n)[0])


def _owner(m: KeyMap, text: str) -> int:
    """The map's rule for one key, spelled out: its override, else key grouping."""
    return m.overrides.get(text, kg(json.loads(text), m.n_engines))


def test_owners_of_key_texts_equal_owners_of_the_values():
    keys = [1, "a", None, 2.5, "1", b"x".decode(), 7]
    m = KeyMap(4, {key_text(1): 3, key_text("a"): (kg("a", 4) + 1) % 4})
    texts = [key_text(k) for k in keys]
    assert m.owners_of(texts).tolist() == m.owners(np.array(keys, dtype=object)).tolist()
    assert m.owners_of(texts).tolist() == [_owner(m, t) for t in texts]
    assert m.owners_of([]).tolist() == []


def test_owners_follow_overrides_then_key_grouping():
    keys = np.array([1, "a", None, 1, 2], dtype=object)
    plain = KeyMap(3)
    assert plain.owners(keys).tolist() == [kg(k) for k in keys.tolist()]
    moved = KeyMap(3, {key_text(1): (kg(1) + 1) % 3, key_text(None): (kg(None) + 2) % 3})
    got = moved.owners(keys).tolist()
    assert got == [(kg(1) + 1) % 3, kg("a"), (kg(None) + 2) % 3, (kg(1) + 1) % 3, kg(2)]
    assert KeyMap(3, {key_text("1"): 0}).owners(np.array([1], dtype=object)).tolist() == [kg(1)]


def test_hand_example():
    a, b = key_text("a"), key_text("b")
    m0 = KeyMap(3)
    m1 = KeyMap(3, {a: (kg("a") + 1) % 3})  # a moves away from its KG engine
    m2 = KeyMap(3, {b: (kg("b") + 1) % 3})  # a moves back, b moves
    assert imports(kg("a"), None, m0) == []
    assert exports(kg("a"), m0, m1) == [a]
    assert imports((kg("a") + 1) % 3, m0, m1) == [a]
    assert exports((kg("a") + 1) % 3, m1, m2) == [a]
    assert a in imports(kg("a"), m1, m2)  # a moves back home
    assert b in exports(kg("b"), m1, m2)


def test_encode_round_trip():
    m = KeyMap(5, {key_text(7): 2, key_text("x"): 0})
    assert KeyMap.decode(m.encode()) == m
    assert json.loads(m.encode())["n"] == 5


def test_random_maps_exports_of_previous_batch_equal_imports():
    rng = random.Random(5)
    keys = [*range(20), *"abcdefgh", None]
    for _ in range(200):
        maps = [KeyMap(4, {key_text(k): rng.randrange(4) for k in rng.sample(keys, 8)})
                for _ in range(2)]
        for e in range(4):
            assert exports(e, maps[0], maps[1]) == sorted(
                k for k in set(maps[0].overrides) | set(maps[1].overrides)
                if _owner(maps[0], k) == e != _owner(maps[1], k))
        moved_out = sorted(k for e in range(4) for k in exports(e, maps[0], maps[1]))
        moved_in = sorted(k for e in range(4) for k in imports(e, maps[0], maps[1]))
        assert moved_out == moved_in
