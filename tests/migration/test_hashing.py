"""stable_hash / kg_engine: deterministic across processes, consistent across representations."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from migration.hashing import NULL_HASH, kg_engine, splitmix64, stable_hash

INTS = [0, 1, 2, 3, -1, 2**40, 12345678901]
STRINGS = ["", "a", "topic-42", "é", "日本"]

_CHILD = """
import json, sys
import numpy as np
from migration.hashing import stable_hash
ints, strings = json.loads(sys.argv[1])
print(json.dumps([stable_hash(np.array(ints)).tolist(),
                  stable_hash(np.array(strings, dtype=object)).tolist(),
                  stable_hash(np.array([None], dtype=object)).tolist()]))
"""


def test_splitmix64_reference_vector() -> None:
    # The first output of the SplitMix64 generator seeded with 0 (Steele, Lea & Flood 2014).
    assert int(splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


# Pinned: a change moves keys to other engines and invalidates every stored key map and
# every key's state in a checkpoint. (key, stable_hash, kg_engine on 5 engines)
GOLDEN = [
    (0, 0xE220A8397B1DCDAF, 0),
    (1, 0x910A2DEC89025CC1, 0),
    (7, 0x63CBE1E459320DD7, 2),
    (-1, 0xE4D971771B652C20, 1),
    (2**40, 0x1FDD7128F310C389, 1),
    ("", 0x765CA0B8D9F96E5C, 2),
    ("a", 0x4C01FC1778E8F16D, 4),
    ("topic-42", 0x7C2088FFAEBBEB55, 3),
    ("日本", 0x18CCB4E2B2D21C07, 2),
    (None, 0x7665063BF8CF1315, 4),
    (2.5, 0x36B25E0C806157FD, 3),
    (b"1", 0x66F040993CA16AD5, 4),
    ((1, "a"), 0x6839E0F0EEC7BE0A, 2),
]


def test_golden_values() -> None:
    keys = np.empty(len(GOLDEN), dtype=object)
    keys[:] = [key for key, _, _ in GOLDEN]
    assert [hex(h) for h in stable_hash(keys).tolist()] == [hex(h) for _, h, _ in GOLDEN]
    assert kg_engine(keys, 5).tolist() == [engine for _, _, engine in GOLDEN]
    for kind in (int, str):  # the vectorised int64 and unicode paths agree
        pinned = [(key, h) for key, h, _ in GOLDEN if type(key) is kind]
        assert stable_hash(np.array([k for k, _ in pinned])).tolist() == [h for _, h in pinned]


def test_deterministic_across_processes() -> None:
    here = [
        stable_hash(np.array(INTS)).tolist(),
        stable_hash(np.array(STRINGS, dtype=object)).tolist(),
        [NULL_HASH],
    ]
    # A different PYTHONHASHSEED changes Python's own str hashing; ours must not move.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([INTS, STRINGS])],
        capture_output=True, text=True, check=True, env=env,
    )
    assert json.loads(out.stdout) == here


def test_integer_representations_agree() -> None:
    expected = stable_hash(np.array([0, 1, 7, -3], dtype=np.int64))
    for values in (
        np.array([0, 1, 7, -3], dtype=np.int32),
        np.array([0, 1, 7, -3], dtype=object),
        np.array([0.0, 1.0, 7.0, -3.0]),
        np.array([False, True, 7, -3], dtype=object),
        np.array([0, 1, 7, -3], dtype=np.int8),
    ):
        assert stable_hash(values).tolist() == expected.tolist()
    assert stable_hash(np.array([7], dtype=np.uint8)).tolist() == expected[2:3].tolist()


def test_float_arrays_agree_with_object_arrays() -> None:
    values = np.array([1e20, 3.0, 2.5, -4.0, np.inf, np.nan])
    assert stable_hash(values).tolist() == stable_hash(values.astype(object)).tolist()


def test_nulls_hash_alike() -> None:
    values = np.array([None, float("nan"), pd.NA, pd.NaT], dtype=object)
    assert stable_hash(values).tolist() == [NULL_HASH] * 4
    assert stable_hash(np.array([np.nan]))[0] == NULL_HASH
    nullable = pd.array([5, None], dtype="Int64")
    assert stable_hash(nullable).tolist() == [stable_hash(np.array([5]))[0], NULL_HASH]


def test_strings_bytes_and_numbers_differ() -> None:
    values = np.array(["1", b"1", 1, 1.5, (1, "1")], dtype=object)
    assert len(set(stable_hash(values).tolist())) == 5


def test_string_dtypes_agree() -> None:
    as_object = stable_hash(np.array(STRINGS, dtype=object))
    assert stable_hash(np.array(STRINGS)).tolist() == as_object.tolist()
    assert stable_hash(pd.Series(STRINGS, dtype="string")).tolist() == as_object.tolist()


def test_shape_is_kept_and_repeats_agree() -> None:
    values = np.array([["a", "b"], ["b", "a"]], dtype=object)
    out = stable_hash(values)
    assert out.shape == (2, 2) and out.dtype == np.uint64
    assert out[0, 0] == out[1, 1] and out[0, 1] == out[1, 0]


def test_unsupported_dtype() -> None:
    with pytest.raises(TypeError, match=r"unsupported key dtype datetime64\[D\]"):
        stable_hash(np.array(["2024-01-01"], dtype="datetime64[D]"))
    with pytest.raises(TypeError, match="unsupported key type 'object'"):
        stable_hash(np.array([object()], dtype=object))


def test_kg_engine_is_uniform_and_in_range() -> None:
    engines = kg_engine(np.arange(100_000), 5)
    assert engines.dtype == np.int32
    counts = np.bincount(engines, minlength=5)
    assert engines.min() >= 0 and engines.max() < 5
    assert np.all(np.abs(counts - 20_000) < 600)  # ~4 standard deviations
    assert kg_engine(np.array(["x", "y"], dtype=object), 1).tolist() == [0, 0]


def test_the_string_memo_gives_blake2b_of_the_bytes_whether_kept_or_cleared(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Oracle: BLAKE2b of the tagged UTF-8 bytes computed here, independently of the
    memo; the memo is exercised hit, missed and cleared when full (a bound of 3)."""
    import hashlib

    import migration.hashing as hashing

    def blake(text: str) -> int:
        digest = hashlib.blake2b(b"s" + text.encode("utf-8", "surrogatepass"),
                                 digest_size=8, person=b"cep-splitter").digest()
        return int.from_bytes(digest, "little")

    monkeypatch.setattr(hashing, "STR_HASHES_KEPT", 3)
    monkeypatch.setattr(hashing, "_STR_HASHES", {})
    texts = [*STRINGS, "\ud800", "x" * 10_000, "topic-42"]

    class Named(str):
        """A str subclass equal to a plain str: hashed by its bytes, not the memo."""

    for _ in range(3):  # first pass misses, later ones hit or refill after a clear
        keys = np.array([*texts, Named("a")], dtype=object)
        assert stable_hash(keys).tolist() == [blake(t) for t in [*texts, "a"]]
        assert len(hashing._STR_HASHES) <= 3
        assert all(len(t) <= hashing.STR_MEMO_CHARS for t in hashing._STR_HASHES)
