"""Stable, vectorised key hashing: the default key → engine assignment (key grouping, KG).

Why not Python's ``hash``: it is salted per process for ``str``/``bytes`` (PYTHONHASHSEED), so
the driver and every Spark executor would disagree on where a key lives.  Everything here is a
pure function of the key's value and gives the same 64-bit number on every process, machine and
Python/NumPy version:

* integers (any NumPy int/uint/bool dtype, Python ints in object arrays, integral floats) go
  through the splitmix64 finaliser applied to the value's 64-bit two's-complement pattern, fully
  vectorised in NumPy.  Consequence: ``-1`` and ``2**64 - 1`` share a bit pattern and a hash;
  ``7``, ``7.0``, ``np.int8(7)`` and ``True``/``1`` hash alike, matching Python equality and
  surviving the int → float64 conversion that nullable integer columns undergo.
* strings, bytes and non-integral floats use BLAKE2b (8-byte digest, fixed ``person`` tag and a
  one-byte type prefix so ``"1"``, ``b"1"`` and ``1`` differ).  BLAKE2b is specified by
  RFC 7693 and ships with ``hashlib``; ``pandas.util.hash_array`` with a fixed ``hash_key`` would
  also be deterministic but its output is an implementation detail of pandas' object encoding and
  categorisation, which we would rather not tie a persisted key map to.  The per-value Python call
  runs once per *distinct* value (``pandas.factorize``, hash based and happy with mixed-type
  object arrays where ``np.unique`` cannot sort), then maps back with the codes.
* tuples (composite keys) hash the concatenation of their elements' hashes.
* null keys (``None``, ``NaN``, ``pd.NA``, ``NaT``) all hash to the fixed ``NULL_HASH``.
"""

from __future__ import annotations

import hashlib
import numbers

import numpy as np
import pandas as pd

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASK64 = (1 << 64) - 1
_INT64_RANGE = 2.0**63
_PERSON = b"cep-splitter"


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (Steele et al.), elementwise on a uint64 array.

    A bijection on 64-bit words with full avalanche, so ``hash mod N`` is uniform even for
    consecutive integer keys (plain ``key % N`` would stripe them).  Wrap-around multiplication
    is the intended arithmetic, hence the silenced overflow warnings.
    """
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _blake(tag: bytes, payload: bytes) -> int:
    digest = hashlib.blake2b(tag + payload, digest_size=8, person=_PERSON).digest()
    return int.from_bytes(digest, "little")


NULL_HASH: int = _blake(b"n", b"")
"""The hash shared by every null key (None, NaN, pd.NA, NaT)."""


def _int_hash(value: int) -> int:
    return int(splitmix64(np.array([value & _MASK64], dtype=np.uint64))[0])


# A process's string hashes, kept: a routing task hashes every distinct key of its batch,
# and the same keys come back batch after batch in the same Python worker (flights, 10
# years: 3,700 distinct keys a task, 0.9 of a run's 9 CPU seconds spent in BLAKE2b and
# the checks before it). Bounded: cleared when full, so a stream of ever new keys costs
# what it cost before and no more memory than this many entries, of strings no longer
# than ``STR_MEMO_CHARS`` (a few MB at most, in any process: the driver's Balancer too).
_STR_HASHES: dict[str, int] = {}
STR_HASHES_KEPT = 1 << 16
STR_MEMO_CHARS = 256


def _str_hash(value: str) -> int:
    """BLAKE2b of a plain ``str``, from the process's memo when it was hashed before."""
    found = _STR_HASHES.get(value)
    if found is None:
        found = _blake(b"s", value.encode("utf-8", "surrogatepass"))
        if len(value) <= STR_MEMO_CHARS:
            if len(_STR_HASHES) >= STR_HASHES_KEPT:
                _STR_HASHES.clear()
            _STR_HASHES[value] = found
    return found


def _scalar_hash(value: object) -> int:
    """Hash of one distinct value of an object/string array (called once per distinct value)."""
    if type(value) is str:
        return _str_hash(value)
    if isinstance(value, tuple):  # composite key: hash of the elements' hashes, in order
        parts = b"".join(_scalar_hash(v).to_bytes(8, "little") for v in value)
        return _blake(b"t", parts)
    if value is None or (not isinstance(value, str | bytes) and pd.isna(value)):
        return NULL_HASH
    if isinstance(value, str):  # a subclass: hashed by its bytes, never through the memo
        return _blake(b"s", value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return _blake(b"b", value)
    if isinstance(value, numbers.Integral):
        return _int_hash(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if f.is_integer() and abs(f) < _INT64_RANGE:  # same rule as the vectorised float path
            return _int_hash(int(f))
        return _blake(b"f", np.float64(f).tobytes())
    raise TypeError(f"unsupported key type {type(value).__name__!r} for stable_hash")


def _float_hash(values: np.ndarray) -> np.ndarray:
    """Floats: integral values hash like the equal integer, NaN as null, the rest via BLAKE2b."""
    values = values.astype(np.float64, copy=False)
    out = np.full(values.shape, NULL_HASH, dtype=np.uint64)
    finite = np.isfinite(values)
    integral = finite & (np.floor(values) == values) & (np.abs(values) < _INT64_RANGE)
    out[integral] = splitmix64(values[integral].astype(np.int64).view(np.uint64))
    other = ~integral & ~np.isnan(values)
    if other.any():
        out[other] = _object_hash(values[other].astype(object))
    return out


def _object_hash(values: np.ndarray) -> np.ndarray:
    """Per distinct value: Python ints (and bools) in one vectorised splitmix64 call, the
    rest one by one. Why: keys that come back from JSON (a key map's overrides, the
    engines' per-key loads) are ints in object arrays, and ``_int_hash`` on a one-element
    array cost ~20 µs a key: 3 engines' map bookkeeping of DLB-L hashed 32,000 of them
    per 12 batches (bench/bench_balance_cost.py)."""
    codes, uniques = pd.factorize(values.ravel(), use_na_sentinel=False)
    table = np.empty(len(uniques), dtype=np.uint64)
    ints = np.fromiter((type(u) in (int, bool) for u in uniques), dtype=bool,
                       count=len(uniques))
    if ints.any():
        words = [int(u) & _MASK64 for u in uniques[ints]]
        table[ints] = splitmix64(np.array(words, dtype=np.uint64))
    rest = np.flatnonzero(~ints)
    if len(rest):
        table[rest] = np.fromiter((_scalar_hash(uniques[i]) for i in rest.tolist()),
                                  dtype=np.uint64, count=len(rest))
    return table[codes].reshape(values.shape)


def stable_hash(values: np.ndarray) -> np.ndarray:
    """64-bit hash of every element, identical across processes, machines and versions.

    Accepts any array-like of integers, floats, strings, bytes or None (object arrays may mix
    them).  Returns a ``uint64`` array of the same shape.
    """
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind == "u":
        return splitmix64(arr.astype(np.uint64, copy=False))
    if kind in "ib":
        return splitmix64(arr.astype(np.int64, copy=False).view(np.uint64))
    if kind == "f":
        return _float_hash(arr)
    if kind in "USOT":
        return _object_hash(arr.astype(object, copy=False))
    raise TypeError(f"unsupported key dtype {arr.dtype} for stable_hash")


HASHES = ("mod", "jump")
"""How key grouping turns a key's 64-bit hash into an engine (``--hash``): ``mod`` is
``hash mod N``, the DLB paper's KG and cep's from the start; ``jump`` is Lamping and
Veach's jump consistent hash. Both are uniform; they differ in what a change of N
moves (docs/guide.md#scaling-a-running-job): going from N to N+1 engines, ``mod``
gives about N/(N+1) of the keys another engine, ``jump`` only the 1/(N+1) the new
engine must take."""

_JUMP_MUL = np.uint64(2862933555777941757)
_ONE = np.uint64(1)


def jump_hash(key_hashes: np.ndarray, n_engines: int) -> np.ndarray:
    """Jump consistent hash (Lamping & Veach, 2014) of every 64-bit hash, as int32
    engine ids in ``[0, n_engines)``, vectorised over the keys.

    Each key walks a pseudo-random sequence of "jumps" seeded by its hash and stops at
    the last one below N, so growing N to N+1 moves a key only if its next jump is N:
    exactly the share 1/(N+1) the new engine must own, and no key moves between two
    engines that both stay. The float arithmetic is the paper's (IEEE doubles, the
    same on every machine), so the owner is a pure function of the key and N."""
    if n_engines < 1:
        raise ValueError("n_engines must be >= 1")
    key = np.array(key_hashes, dtype=np.uint64, copy=True).ravel()
    b = np.full(key.shape, -1, dtype=np.int64)
    j = np.zeros(key.shape, dtype=np.int64)
    live = np.arange(len(key))
    with np.errstate(over="ignore"):
        while len(live):
            b[live] = j[live]
            k = key[live] * _JUMP_MUL + _ONE
            key[live] = k
            step = (b[live] + 1).astype(np.float64) * (
                float(1 << 31) / ((k >> np.uint64(33)).astype(np.float64) + 1.0))
            j[live] = step.astype(np.int64)
            live = live[j[live] < n_engines]
    return b.astype(np.int32).reshape(np.shape(key_hashes))


def engine_of_hash(key_hashes: np.ndarray, n_engines: int, scheme: str = "mod"
                   ) -> np.ndarray:
    """The KG engine of precomputed hashes as int32 ids: ``hash mod N``, or the jump
    consistent hash (``scheme="jump"``, see :data:`HASHES`)."""
    if n_engines < 1:
        raise ValueError("n_engines must be >= 1")
    if scheme == "jump":
        return jump_hash(key_hashes, n_engines)
    if scheme != "mod":
        raise ValueError(f"hash must be one of {HASHES}, got {scheme!r}")
    return (np.asarray(key_hashes, dtype=np.uint64) % np.uint64(n_engines)).astype(np.int32)


def kg_engine(values: np.ndarray, n_engines: int, scheme: str = "mod") -> np.ndarray:
    """Key grouping: every key's engine in ``[0, n_engines)`` as int32, from its stable
    hash by ``scheme`` (``mod`` by default: ``stable_hash mod N``)."""
    return engine_of_hash(stable_hash(values), n_engines, scheme)
