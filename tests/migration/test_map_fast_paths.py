"""The fast paths of key maps against their per-key definitions (issue 51, item 7).

A key-moving run pays, each batch, for routing by the map, for working out which keys
an engine imports and exports, and for hashing keys that come back from JSON. Each of
those now takes a shortcut (integer keys looked up by ``searchsorted``, only the keys
whose override differs between two maps examined, Python ints hashed in one
vectorised call); the oracle of every test here is the rule spelled out per key:
a key's owner is its override (by its JSON text, ``key_text``) else key grouping, and a
key's hash is ``_scalar_hash`` of the key alone.
"""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from migration.hashing import _object_hash, _scalar_hash, kg_engine
from migration.protocol import KeyMap, exports, imports, key_text


def owner(m: KeyMap, key: object) -> int:
    """The map's rule for one key: its override by JSON text, else key grouping."""
    kg = int(kg_engine(np.array([key], dtype=object), m.n_engines, m.hash)[0])
    return m.overrides.get(key_text(key), kg)


# texts a map may hold that look like integers but are not an integer key's text
NEAR_INTEGERS = ["-0", "007", '"5"', "5.0", "true", "false", "null", "1e3", " 5",
                 str(1 << 63), str(-(1 << 63) - 1), str((1 << 64) - 1), "[5]"]


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(st.integers(-(1 << 63), (1 << 63) - 1) | st.integers(-40, 40),
                     min_size=1, max_size=60),
       moved=st.lists(st.integers(-40, 40), max_size=30),
       odd=st.lists(st.sampled_from(NEAR_INTEGERS), max_size=5),
       n=st.integers(1, 7), data=st.data())
def test_integer_keys_are_routed_as_their_json_text(keys, moved, odd, n, data):
    """KeyMap.owners over an int64 array (the searchsorted path) gives every key the
    owner the per-key rule gives it, whatever else the map's texts hold."""
    engine = st.integers(0, n - 1)
    overrides = {key_text(k): data.draw(engine) for k in [*moved, *keys[:3]]}
    overrides.update({text: data.draw(engine) for text in odd})
    m = KeyMap(n, overrides)
    got = m.owners(np.array(keys, dtype=np.int64)).tolist()
    assert got == [owner(m, k) for k in keys]
    small = [k for k in keys if 0 <= k < 1 << 31]
    if small:  # other integer dtypes take the same path
        for dtype in (np.int32, np.uint32, np.uint64):
            got = m.owners(np.array(small, dtype=dtype)).tolist()
            assert got == [owner(m, k) for k in small]


def test_unsigned_keys_beyond_int64_are_routed_by_their_text():
    big = (1 << 64) - 1
    m = KeyMap(5, {key_text(big): (owner(KeyMap(5), big) + 1) % 5, key_text(3): 4})
    keys = np.array([big, 3, 4], dtype=np.uint64)
    assert m.owners(keys).tolist() == [owner(m, big), 4, owner(m, 4)]


@settings(max_examples=60, deadline=None)
@given(base=st.dictionaries(st.integers(0, 60), st.integers(0, 4), max_size=40),
       changed=st.dictionaries(st.integers(0, 60), st.integers(0, 4) | st.none(),
                               max_size=10),
       extra=st.dictionaries(st.text(max_size=3), st.integers(0, 4), max_size=5))
def test_exports_and_imports_of_maps_sharing_overrides_follow_the_rule(base, changed,
                                                                       extra):
    """Two maps that share most overrides (the Balancer's next map keeps the keys it
    moved before): an engine exports exactly the keys, among every key either map
    names, whose owner is it in the first map and another in the second, by the per-key
    rule; what leaves one engine arrives at another."""
    first = {key_text(k): e for k, e in base.items()}
    first.update({key_text(k): e for k, e in extra.items()})
    second = dict(first)
    for k, e in changed.items():
        if e is None:
            second.pop(key_text(k), None)
        else:
            second[key_text(k)] = e
    a, b = KeyMap(5, first), KeyMap(5, second)
    named = sorted(set(first) | set(second) | {key_text(k) for k in range(61)})
    for e in range(5):
        assert exports(e, a, b) == [t for t in named
                                    if owner(a, json.loads(t)) == e != owner(b, json.loads(t))]
    out = sorted(t for e in range(5) for t in exports(e, a, b))
    assert out == sorted(t for e in range(5) for t in imports(e, a, b))
    assert all(exports(e, a, KeyMap(5, dict(first))) == [] for e in range(5))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers() | st.booleans() | st.text(max_size=4) | st.none()
                | st.floats(allow_nan=True) | st.binary(max_size=3)
                | st.tuples(st.integers(), st.text(max_size=2)), max_size=40))
def test_object_arrays_hash_as_each_value_alone(values):
    """Ints among other values (hashed in one vectorised call) hash as ``_scalar_hash``
    of each value alone, big, negative and bool ones included."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    want = np.array([_scalar_hash(v) for v in values], dtype=np.uint64)
    assert _object_hash(arr).tolist() == want.tolist()
