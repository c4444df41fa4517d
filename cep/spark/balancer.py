"""The Balancer: after each micro-batch, per-key load → strategy → key map two batches on.

Runs on the driver as a ``foreachBatch`` hook. After batch t it folds the engines'
per-key loads into the load statistics, takes map ``M[t+1]`` (already fixed) as the
current assignment, asks the strategy (``splitter.strategies``) for a better one and
writes it as ``M[t+2]``, write-once: a replayed batch finds the map present and keeps it.
Moved keys' state then travels at the end of batch t+1 (see ``migration.protocol``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from cep.spark.keymaps import key_map
from migration.protocol import KeyMap
from migration.store import StateStore
from splitter.hashing import kg_engine
from splitter.stats import LoadStatistics
from splitter.strategies import get_strategy


class Balancer:
    """Decides key maps for a run; one instance per query, on the driver."""

    def __init__(self, store: StateStore, strategy: str, n_engines: int,
                 threshold: float = 15.0, window: int = 1, decay: float | None = None) -> None:
        self.store = store
        self.name = strategy
        self.strategy = get_strategy(strategy)
        self.n_engines = n_engines
        self.threshold = threshold
        self.statistics = LoadStatistics(window, decay)
        self.texts: list[str] = []  # dense key id → key JSON text
        self.ids: dict[str, int] = {}
        self.kg = np.zeros(0, dtype=np.int32)  # dense key id → its key-grouping engine

    def prepare(self) -> None:
        """Maps 0 and 1 are plain key grouping (the first decision lands in batch 2)."""
        for version in (0, 1):
            self.store.put_key_map(version, KeyMap(self.n_engines).encode())

    def __call__(self, batch: int, stats: pd.DataFrame, metrics: dict) -> None:
        counts = self._batch_loads(stats)
        nxt = key_map(self.store, batch + 1)
        current = self._owners(nxt)
        load = self.statistics.load
        proposal = np.asarray(self.strategy(load, current, self.n_engines,
                                            threshold=self.threshold))
        overrides = {self.texts[i]: int(proposal[i])
                     for i in np.flatnonzero(proposal != self.kg).tolist()}
        if not self.store.put_key_map(batch + 2, KeyMap(self.n_engines, overrides).encode()):
            decided = key_map(self.store, batch + 2)  # a replay: the first decision stands
            proposal = self._owners(decided)
        moved = proposal != current
        metrics.update({
            "strategy": self.name,
            "rebalanced": bool(moved.any()),
            "keys_moved": int(moved.sum()),
            "load_moved": int(load[moved].sum()) if moved.any() else 0,
            "keys": len(self.texts),
            "batch_keys": len(counts),
        })
        if batch >= 1:  # batch t may be replayed: documents of t-1 must stay
            self.store.gc(batch - 1)

    def _owners(self, key_map: KeyMap) -> np.ndarray:
        """Engine of every known key under ``key_map``: the KG engines already computed
        per dense id, with the map's overrides applied (no key is hashed again)."""
        owners = self.kg.copy()
        for text, engine in key_map.overrides.items():
            i = self.ids.get(text)
            if i is not None:
                owners[i] = engine
        return owners

    def _batch_loads(self, stats: pd.DataFrame) -> dict[str, int]:
        """Merge the engines' per-key counts and record them in the statistics."""
        counts: dict[str, int] = {}
        for payload in stats["payload"].tolist():
            for text, n in json.loads(payload)["key_load"].items():
                counts[text] = counts.get(text, 0) + n
        new = [t for t in counts if t not in self.ids]
        if new:
            for text in new:
                self.ids[text] = len(self.texts)
                self.texts.append(text)
            values = np.empty(len(new), dtype=object)
            values[:] = [json.loads(t) for t in new]
            self.kg = np.concatenate([self.kg, kg_engine(values, self.n_engines)
                                      .astype(np.int32)])
        self.statistics.ensure_keys(len(self.texts))
        ids = np.fromiter((self.ids[t] for t in counts), dtype=np.int64, count=len(counts))
        self.statistics.update(np.repeat(ids, list(counts.values())))
        return counts
