"""The Balancer: after each micro-batch, per-key load → strategy → key map two batches on.

Part of the Splitter (see ``splitter/__init__.py``): the part that decides
where keys go; ``routing.py`` follows its maps.

Runs on the driver as a ``foreachBatch`` hook. After batch t it folds the engines'
per-key loads into the load statistics, takes map ``M[t+1]`` (already fixed) as the
current assignment, asks the strategy (``splitter.policies.strategies``) for a better one,
keeps the current one instead unless the proposal's moves pay (``move_gain``, under
``--moves pays``), and writes it as ``M[t+2]``, write-once: a replayed batch finds the map
present and keeps it.
Moved keys' state then travels at the end of batch t+1 (see ``migration.protocol``).

Restarts: the load statistics live in this process only, so a restarted run decides
from the batches it has seen since (its decisions may differ from an uninterrupted
run's; the events cannot, since any sequence of maps the engines follow is correct).
What must not be forgotten are the keys the maps already move: they are learnt from
the maps themselves, or a key moved before the restart and quiet since would silently
lose its override in the next map and move back for no reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

import numpy as np

from migration.hashing import kg_engine
from migration.protocol import KeyMap
from migration.scaling import balanced_owners, rescale_map
from migration.store import StateStore
from splitter.key_cost import CostShape, key_costs
from splitter.keymaps import key_map, remember
from splitter.move_gain import MoveGate
from splitter.policies.base import LoadSnapshot
from splitter.policies.capacity import CapacityModel
from splitter.policies.names import CAPACITY_MODES, LOAD_MEASURES
from splitter.policies.stats import LoadStatistics
from splitter.policies.strategies import SERIES_WINDOWS, get_strategy

FIRST_DECIDED_BATCH = 2  # maps 0 and 1 are key grouping: batch 0's loads decide map 2
GC_EVERY = 8  # batches between collections of old handoff documents and maps
UNBALANCED = frozenset({"kg"})  # places every key by its hash, at any engine count


class Balancer:
    """Decides key maps for a run; one instance per query, on the driver."""

    def __init__(self, store: StateStore, strategy: str, n_engines: int,
                 threshold: float = 15.0, window: int = 1, decay: float | None = None,
                 capacity: str = "equal", load: str = "events", moves: str = "pays",
                 hash: str = "mod", engines_at: Callable[[int], int | None] | None = None,
                 partitions: int | None = None) -> None:
        if capacity not in CAPACITY_MODES:
            raise ValueError(f"capacity must be one of {CAPACITY_MODES}, got {capacity!r}")
        if load not in LOAD_MEASURES:
            raise ValueError(f"load must be one of {LOAD_MEASURES}, got {load!r}")
        self.store = store
        self.name = strategy
        self.strategy = get_strategy(strategy)  # once per run: clb keeps its period
        self.n_engines = n_engines
        self.threshold = threshold
        self.statistics = LoadStatistics(window, decay,
                                         series_windows=SERIES_WINDOWS.get(strategy, 0))
        # measured: target shares from each engine's busy seconds per event (Schneider
        # et al.), so a slower engine is given less load; equal: every engine 1/N
        self.capacity = CapacityModel(n_engines) if capacity == "measured" else None
        # events: the paper's per-key load; cost: the seconds the key cost its engine
        # (``key_cost``), so that the engines' work, not their events, is balanced
        self.load = load
        # pays: a proposal's moves must save the busiest engine more than they cost
        # (``move_gain``); always: the paper's Balancer, moving whenever proposed
        self.gate = MoveGate(moves)
        # what the engines' row stages cost per touched key and per event, fitted over
        # recent batches: how a batch's measured seconds are split over its keys
        self.cost_shape = CostShape()
        self.texts: list[str] = []  # dense key id → key JSON text
        self.ids: dict[str, int] = {}
        self.kg = np.zeros(0, dtype=np.int32)  # dense key id → its key-grouping engine
        self.hash = hash  # KG's hash of the maps this Balancer writes (``--hash``)
        # the engine count of each map version (``migration.scaling.Schedule``, or the
        # newest ``cep scale`` request): a map with another count than the one before is
        # a scale change; None (or a None answer): the count of the maps stays
        self.engines_at = engines_at
        # Spark's tasks of the engines (engine e in task e mod P): the gate prices moves
        # by the busiest task, not engine (``MoveGate.judge``); None: a task per engine
        self.partitions = partitions

    def prepare(self) -> None:
        """Maps 0 and 1 are plain key grouping (the first decision lands in batch 2)."""
        for version in range(FIRST_DECIDED_BATCH):
            self.store.put_key_map(version, KeyMap(self.n_engines, {}, self.hash).encode())

    def __call__(self, batch: int, stats: list[dict], metrics: dict) -> None:
        self.cost_shape.observe(stats)
        alpha, beta = self.cost_shape.shape()
        metrics["row_cost_s"] = {"per_key": alpha, "per_event": beta}
        counts = self._batch_loads(stats)
        self.gate.costs.observe(metrics)
        nxt = key_map(self.store, batch + 1)
        self._follow(nxt)
        self._know(nxt.overrides)
        target = self.engines_at(batch + 2) if self.engines_at is not None else None
        if target is not None and target != nxt.n_engines:
            written = self.store.get_key_map(batch + 2)
            if written is not None:  # a replay: the map decided first is the change, or not
                target = KeyMap.decode(written).n_engines
        if target is not None and target != nxt.n_engines:
            self._rescale(batch, nxt, target, counts, metrics, stats)
            return
        current = self._owners(nxt)
        load = self.statistics.load
        shares = None
        if self.capacity is not None:
            n = self.n_engines  # the batch ran M[t]'s engines, M[t+1] may have other
            if len(metrics["rows_per_engine"]) == n:
                self.capacity.observe(metrics["rows_per_engine"],
                                      metrics["busy_s_per_engine"])
            shares = self.capacity.shares()
        series = self.statistics.series if self.name in SERIES_WINDOWS else None
        snapshot = LoadSnapshot(load, current, self.n_engines, threshold=self.threshold,
                                state_size=self.statistics.seen,  # a proxy
                                capacity=shares, load_series=series)
        proposal = np.asarray(self.strategy(snapshot))
        # the keys' measured work only where the gate weighs it, a proposal from events
        # that moves something (key_costs loops over the batch's keys on the driver)
        weighs_work = self.load == "events" and bool(np.any(proposal != current))
        verdict = self.gate.judge(load, current, proposal, self.n_engines,
                                  _busiest_busy_s(stats, self.partitions), shares,
                                  self.partitions,
                                  self._batch_work(stats) if weighs_work else None,
                                  settling=any(info.get("imported_keys", 0) for info in stats))
        if not verdict.pays:
            proposal = current  # the moves would cost more than they save: none
        overrides = {self.texts[i]: int(proposal[i])
                     for i in np.flatnonzero(proposal != self.kg).tolist()}
        written = KeyMap(self.n_engines, overrides, self.hash)
        if self.store.put_key_map(batch + 2, written.encode()):
            remember(self.store, batch + 2, written)  # next batch's M[t+1]: no read
        else:
            decided = key_map(self.store, batch + 2)  # a replay: the first decision stands
            self._know(decided.overrides)
            current, load = self._owners(nxt), self.statistics.load
            proposal = self._owners(decided)
        moved = proposal != current
        metrics.update({
            "strategy": self.name,
            "load_measure": self.load,
            "rebalanced": bool(moved.any()),
            "keys_moved": int(moved.sum()),
            "load_moved": self._events_moved(moved, load, counts),
            "load_rstd": round(snapshot.imbalance(), 3),  # what the strategy balanced
            "moves": self.gate.policy,
            "keys_proposed": verdict.keys_moved,
            **verdict.as_metrics(),
            "keys": len(self.texts),
            **({"capacity_shares": [round(x, 4) for x in shares.tolist()]}
               if shares is not None else {}),
            "batch_keys": len(counts),
        })
        self._collect(batch)

    def _collect(self, batch: int) -> None:
        """Every ``GC_EVERY`` batches, delete the documents before batch t-1 (batch t may
        be replayed: those of t-1 must stay). Four range deletes on the embedded server
        took ~7 ms of the driver's hook a batch (bench/bench_balance_cost.py); documents
        past the horizon are never read, so collecting them later changes nothing."""
        if batch >= 1 and batch % GC_EVERY == 0:
            self.store.gc(batch - 1)

    def _follow(self, nxt: KeyMap) -> None:
        """Take the layout (engine count, hash) of map ``M[t+1]``, the current
        assignment, once a scale change reached it (or a restart found another count in
        the maps than it was given): every known key's KG engine again, and capacity
        shares for the new engines."""
        if (nxt.n_engines, nxt.hash) == (self.n_engines, self.hash):
            return
        self.n_engines, self.hash = nxt.n_engines, nxt.hash
        values = np.empty(len(self.texts), dtype=object)
        values[:] = [json.loads(t) for t in self.texts]
        self.kg = kg_engine(values, self.n_engines, self.hash).astype(np.int32)
        if self.capacity is not None:
            self.capacity = CapacityModel(self.n_engines)

    def _rescale(self, batch: int, nxt: KeyMap, target: int, counts: dict[str, int],
                 metrics: dict, stats: list[dict]) -> None:
        """Write ``M[t+2]`` at ``target`` engines (``migration.scaling.rescale_map``):
        no balancing decision in the same map, so what the change moves is its own."""
        decided = rescale_map(nxt, target, self.hash)
        if self.name not in UNBALANCED and self.texts:  # place the loaded keys by load
            decided = self._balanced(nxt, decided, self._placement_load(stats))
        if not self.store.put_key_map(batch + 2, decided.encode()):
            decided = key_map(self.store, batch + 2)  # a replay: the first decision stands
        self._know(decided.overrides)
        current = self._owners(nxt)
        after = (decided.owners_of(self.texts) if self.texts
                 else np.zeros(0, dtype=np.int32))
        moved = after != current
        metrics.update({
            "strategy": self.name, "load_measure": self.load,
            "rebalanced": bool(moved.any()), "keys_moved": int(moved.sum()),
            "load_moved": self._events_moved(moved, self.statistics.load, counts),
            "moves": self.gate.policy, "keys": len(self.texts), "batch_keys": len(counts),
            "rescaled": {"at_batch": batch + 2, "from": nxt.n_engines,
                         "to": decided.n_engines, "hash": decided.hash},
        })
        self._collect(batch)

    def _placement_load(self, stats: list[dict]) -> np.ndarray:
        """What a scale change places the keys by: the Balancer's load where it measures
        work (``--load cost``); where it counts events, the keys' measured work in the
        batch, and for a key of the load window the batch did not touch, its events at
        the batch's seconds per event (the events alone when nothing was measured).

        Why: placed by events, a 2 -> 4 engine change of an FSD job left one engine
        1.2-1.5 CPU s a batch against 0.16-0.46 for two others, the keys' seconds per
        event differing (``bench/results/scale_midrun-gate.json``, batches 19-22)."""
        load = self.statistics.load[:len(self.texts)]
        if self.load != "events":
            return load
        events, work = load, self._batch_work(stats)
        touched = work > 0
        if not touched.any() or not events[touched].sum() > 0:
            return events
        rate = work[touched].sum() / events[touched].sum()
        return np.where(touched, work, events * rate)

    def _balanced(self, nxt: KeyMap, plain: KeyMap, load: np.ndarray) -> KeyMap:
        """The map at ``plain``'s count with the keys that have ``load`` placed by
        ``migration.scaling.balanced_owners`` (from where they are now), the others
        where ``plain`` puts them; overrides wherever that differs from KG."""
        load = load[:len(self.texts)]
        kg = KeyMap(plain.n_engines, {}, plain.hash).owners_of(self.texts)  # hashed once
        start = np.where(load > 0, self._owners(nxt), self._owners(plain, kg))
        owners = balanced_owners(start, load, plain.n_engines)
        return KeyMap(plain.n_engines,
                      {self.texts[i]: int(owners[i]) for i in np.flatnonzero(owners != kg)},
                      plain.hash)

    def _events_moved(self, moved: np.ndarray, load: np.ndarray, counts: dict[str, int]
                      ) -> int:
        """Events of the moved keys: in their load window (events measured), or in this
        batch (cost measured: the window holds seconds)."""
        if self.load == "events":
            return int(load[moved].sum())
        return sum(counts.get(self.texts[i], 0) for i in np.flatnonzero(moved).tolist())

    def _owners(self, key_map: KeyMap, kg: np.ndarray | None = None) -> np.ndarray:
        """Engine of every known key under ``key_map`` (whose keys must all be known):
        the KG engines already computed per dense id (``kg``, at another count than the
        current one), with the map's overrides applied (no key is hashed again)."""
        owners = (self.kg if kg is None else kg).copy()
        for text, engine in key_map.overrides.items():
            owners[self.ids[text]] = engine
        return owners

    def _know(self, texts: Iterable[str]) -> None:
        """Give dense ids (and KG engines, zero load) to the keys not seen before."""
        new = [t for t in dict.fromkeys(texts) if t not in self.ids]
        if new:
            for text in new:
                self.ids[text] = len(self.texts)
                self.texts.append(text)
            values = np.empty(len(new), dtype=object)
            values[:] = [json.loads(t) for t in new]
            self.kg = np.concatenate([self.kg, kg_engine(values, self.n_engines, self.hash)
                                      .astype(np.int32)])
        self.statistics.ensure_keys(len(self.texts))

    def _batch_work(self, stats: list[dict]) -> np.ndarray:
        """The keys' measured seconds in the batch, for the gate's second look at a
        proposal made from events (``MoveGate.judge``'s ``work``); 0 for the keys it
        did not touch."""
        work = np.zeros(len(self.texts), dtype=np.float64)
        costs = key_costs(stats, self.cost_shape.shape())
        if costs:
            ids = np.fromiter((self.ids[t] for t in costs), dtype=np.int64, count=len(costs))
            np.add.at(work, ids, np.fromiter(costs.values(), dtype=np.float64,
                                             count=len(costs)))
        return work

    def _batch_loads(self, stats: list[dict]) -> dict[str, int]:
        """Merge the engines' per-key counts and record them in the statistics (as
        events, or as each key's measured cost spread over its events)."""
        counts: dict[str, int] = {}
        for info in stats:
            for text, n in info["key_load"].items():
                counts[text] = counts.get(text, 0) + n
        self._know(counts)
        ids = np.fromiter((self.ids[t] for t in counts), dtype=np.int64, count=len(counts))
        events = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
        weights = None
        if self.load == "cost":
            costs = key_costs(stats, self.cost_shape.shape())
            weights = np.repeat([costs[t] / n for t, n in counts.items()], events)
        self.statistics.update(np.repeat(ids, events), weights)
        return counts


def _busiest_busy_s(stats: list[dict], partitions: int | None = None) -> float:
    """The busy seconds of the batch's busiest engine (its stats rows summed: a chain's
    stages report one row each), or of its busiest task, engine e in task e mod
    ``partitions``."""
    busy: dict[int, float] = {}
    for info in stats:
        engine = int(info.get("engine", 0))
        task = engine % partitions if partitions else engine
        busy[task] = busy.get(task, 0.0) + float(info.get("busy_s", 0.0))
    return max(busy.values(), default=0.0)
