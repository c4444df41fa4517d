"""Engine labels: group-by values that put engine e in shuffle partition e (mod P).

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

With fewer partitions than engines (P < N: a local master with fewer task slots than
engines, ``engine_partitions``), engine e lands in partition e mod P, and the task of a
partition runs its engines one after the other, each still a group with its own state.
Every task of a micro-batch pays a fixed price in Spark (a Python worker, the state
server's connection and encoders, a state-store commit), so N engines on S < N slots
pay it S times rather than N, and in one wave of tasks rather than ceil(N/S).
"""

from __future__ import annotations

import os
import re

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


def local_slots(master: str) -> int | None:
    """The task slots of a local master (``local``: 1, ``local[N]`` or ``local[N,F]``:
    N, ``local[*]``: the machine's cores); None for a cluster's master."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if match is None:
        return None
    slots = match.group(1)
    return (os.cpu_count() or 1) if slots == "*" else int(slots or 1)


def engine_partitions(n_engines: int, master: str) -> int:
    """Shuffle partitions for ``n_engines`` on ``master``: one per engine on a cluster
    (an engine per task, and so per node), at most one per task slot on a local master.
    A job that may scale passes the most engines it may have (``--engines auto:LO-HI``:
    HI), so that every engine up to it has a partition, and a task, of its own."""
    slots = local_slots(master)
    return n_engines if slots is None else max(1, min(n_engines, slots))


def stage_labels(n_engines: int, stages: int, partitions: int | None = None
                 ) -> list[list[int]]:
    """Labels of engine e of stage s (``[s][e]``), landing in partition e mod P (P =
    ``partitions``, default one per engine): the smallest non-negative ints of that
    partition, in the order (engine, stage), so stage 0's labels are the same with or
    without a chain, and with P = N engine e's labels are its partition's smallest."""
    parts = partitions or n_engines
    if not 1 <= parts <= n_engines:
        raise ValueError(f"partitions must be 1..{n_engines}, got {parts}")
    wanted = [stages * len(range(p, n_engines, parts)) for p in range(parts)]
    found: list[list[int]] = [[] for _ in range(parts)]
    value, missing = 0, parts
    while missing:
        slot = found[partition_of(value, parts)]
        if len(slot) < wanted[partition_of(value, parts)]:
            slot.append(value)
            missing -= len(slot) == wanted[partition_of(value, parts)]
        value += 1
    return [[found[e % parts][(e // parts) * stages + s] for e in range(n_engines)]
            for s in range(stages)]
