"""Engine labels: group-by values that put engine e alone in shuffle partition e.

Part of the Splitter (see ``splitter/__init__.py``): its last hop, Spark's
shuffle, which delivers the rows ``routing.py`` labelled for engine e to engine e's task.

Spark hash-partitions a grouped aggregation by ``pmod(murmur3_32(value, seed=42), P)``.
With P = N shuffle partitions and label[e] chosen so that this is e, each engine owns one
partition (one task per batch), and no two engines ever share a task. The hash is Spark's
``Murmur3_x86_32.hashInt``, reimplemented here so labels need no Spark job; a test checks
it against Spark's own ``hash()``.

An INSERT INTO chain has one set of N engines per stage (``stage_labels``): engine e of
every stage lands in partition e, so a chain keeps N partitions (and N state-store
partitions, which Spark fixes in the checkpoint) and task e runs engine e of each stage
one after the other, as separate groups with separate state.
"""

from __future__ import annotations

MASK = 0xFFFFFFFF
SPARK_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & MASK


def murmur3_int(value: int, seed: int = SPARK_SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt(value, seed)`` as a signed 32-bit int."""
    k1 = (value & MASK) * 0xCC9E2D51 & MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & MASK
    h1 = (seed & MASK) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & MASK
    h1 ^= 4  # length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_of(value: int, partitions: int) -> int:
    """The shuffle partition Spark gives an int group-by value."""
    return murmur3_int(value) % partitions  # Python's % is already pmod


def engine_labels(n_engines: int) -> list[int]:
    """For each engine, the smallest non-negative int label landing in its partition."""
    return stage_labels(n_engines, 1)[0]


def stage_labels(n_engines: int, stages: int) -> list[list[int]]:
    """Labels of engine e of stage s (``[s][e]``): the (s+1)-th smallest non-negative int
    landing in partition e, so stage 0's labels are the same with or without a chain."""
    found: list[list[int]] = [[] for _ in range(n_engines)]
    value, missing = 0, n_engines
    while missing:
        slot = found[partition_of(value, n_engines)]
        if len(slot) < stages:
            slot.append(value)
            missing -= len(slot) == stages
        value += 1
    return [[found[e][s] for e in range(n_engines)] for s in range(stages)]
