"""Scale changes as key-map changes (docs/guide.md#scaling-a-running-job).

The engine count is part of every key map (``KeyMap.n_engines``), so a key's KG owner at
batch t is ``stable_hash(key) mod N(t)`` (or the jump consistent hash of it, ``--hash
jump``), and a change from N to N' engines at batch t is ``M[t-1]`` with N and ``M[t]``
with N': every key whose owner differs moves with its state at the end of batch t-1,
as a key the Balancer moves does (``migration.protocol``), retired engines handing over
every key they hold and new engines starting empty.

What this module decides:

* :class:`Schedule`: the engine count of every map version, from changes "N engines from
  batch b on" (the Balancer writes map ``t+2`` after batch t, so a change asked for
  after batch t applies at batch t+2 at the earliest: maps are write-once).
* :func:`rescale_map`: the map of the first batch with the new count. A balancing
  strategy's overrides survive where their engine does (and differ from the new KG
  owner); the strategy's next decision, at the new count, recomputes the rest. The
  decision that writes a rescaled map does not also rebalance: one change at a time,
  and its moves are what the new layout costs, reported alone.
* :func:`balanced_owners`: where a balancing strategy puts the keys with load at the
  change (Guo and Zhou: only from overloaded to underloaded engines, new ones start
  empty), so the new count is balanced from its first batch.
* :func:`moved_share`: which share of keys KG moves going from N to N' engines, per hash.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from migration.hashing import engine_of_hash, stable_hash
from migration.protocol import KeyMap

FIRST_SCALABLE_BATCH = 2  # maps 0 and 1 are written before batch 0, at the start count


@dataclass(frozen=True)
class Schedule:
    """Engine counts by map version: ``initial`` until the first change, then each
    change's count from its batch on. ``changes`` is ``(batch, engines)`` pairs."""

    initial: int
    changes: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.initial < 1 or any(n < 1 for _, n in self.changes):
            raise ValueError("an engine count must be at least 1")
        if any(b < FIRST_SCALABLE_BATCH for b, _ in self.changes):
            raise ValueError(f"the engine count can change from batch {FIRST_SCALABLE_BATCH} "
                             "on (maps 0 and 1 are written before the run starts)")
        batches = [b for b, _ in self.changes]
        if batches != sorted(batches) or len(set(batches)) != len(batches):
            raise ValueError("scale changes must be in increasing batch order, one per batch")

    @classmethod
    def of(cls, initial: int, changes: Iterable[tuple[int, int]]) -> Schedule:
        return cls(initial, tuple(sorted((int(b), int(n)) for b, n in changes)))

    def engines_at(self, version: int) -> int:
        """The engine count of map ``version`` (batch ``version``)."""
        batches = [b for b, _ in self.changes]
        i = bisect.bisect_right(batches, version)
        return self.initial if i == 0 else self.changes[i - 1][1]

    def most(self) -> int:
        return max([self.initial, *(n for _, n in self.changes)])


def rescale_map(current: KeyMap, n_engines: int, hash: str | None = None) -> KeyMap:
    """The map after ``current`` at ``n_engines`` engines (and ``hash``, default the
    same): KG at the new count plus those overrides of ``current`` whose engine stays
    and is not the key's new KG owner anyway."""
    scheme = current.hash if hash is None else hash
    texts = list(current.overrides)
    plain = KeyMap(n_engines, {}, scheme)
    default = plain.owners_of(texts).tolist() if texts else []
    kept = {t: e for (t, e), d in zip(current.overrides.items(), default, strict=True)
            if e < n_engines and e != d}
    return KeyMap(n_engines, kept, scheme)


def balanced_owners(owners: np.ndarray, load: np.ndarray, n_to: int) -> np.ndarray:
    """Where a balancing strategy puts its keys at a change to ``n_to`` engines, after
    Guo and Zhou's scaling (new instances start empty, substreams move only from
    overloaded to underloaded ones). ``owners``: where each key starts, its engine now
    for a key with load (``load`` > 0, the Balancer's window), :func:`rescale_map`'s for
    the others, which stay there (moving them more would move state and balance
    nothing). A key with load on a retired engine goes,
    heaviest first, to the least loaded engine that stays; then, while an engine holds
    more than its share of the load (``load / n_to``), its keys, heaviest first, go to
    the least loaded engine if that keeps it at or under the share. Returns the owners.

    Why: placing the loaded keys by hash alone at the new count (``rescale_map``) keeps
    the balancing overrides of the engines that stay and leaves a new engine whatever
    the hash gives it: on FSD, 2 -> 4 engines left one new engine ~0.12 CPU s a batch
    against 0.6-1.1 for the others (``bench/results/scale_midrun-counterfactual.json``,
    batches 20-23)."""
    out = owners.astype(np.int32, copy=True)
    hot = load > 0
    per = np.bincount(out[hot & (out < n_to)], weights=load[hot & (out < n_to)],
                      minlength=n_to)[:n_to]
    leaving = np.flatnonzero(hot & (out >= n_to))
    for i in leaving[np.argsort(-load[leaving], kind="stable")].tolist():
        e = int(np.argmin(per))
        out[i] = e
        per[e] += load[i]
    share = float(load[hot].sum()) / n_to
    for e in np.argsort(-per, kind="stable").tolist():
        if per[e] <= share:
            continue
        mine = np.flatnonzero(hot & (out == e))
        for i in mine[np.argsort(-load[mine], kind="stable")].tolist():
            if per[e] <= share:
                break
            d = int(np.argmin(per))
            if d != e and per[d] + load[i] <= share:
                out[i] = d
                per[d] += load[i]
                per[e] -= load[i]
    return out


def moved_share(n_from: int, n_to: int, hash: str = "mod", keys: int = 100_000) -> float:
    """The share of ``keys`` integer keys whose KG owner differs between ``n_from`` and
    ``n_to`` engines: about ``1 - 1/max`` for ``mod`` from N to N+1 (N/(N+1)), about
    ``|N' - N| / max(N, N')`` for ``jump`` (the least any layout allows)."""
    hashes = stable_hash(np.arange(keys, dtype=np.int64))
    before = engine_of_hash(hashes, n_from, hash)
    after = engine_of_hash(hashes, n_to, hash)
    return float((before != after).mean())
