"""What a key-moving strategy costs per micro-batch beyond key grouping, part by part,
in process and without Spark (issue 51, item 7: "balancing that never costs").

A DLB-L run differs from a KG run, batch after batch, even when its Balancer moves
nothing: the input tasks route by the key map ``M[t]`` instead of by the hash, every
engine task reads maps ``M[t-1]``, ``M[t]``, ``M[t+1]`` and works out which keys it
imports and exports, the driver's Balancer folds the loads, runs the strategy and the
gate and writes ``M[t+2]`` and collects old documents, and all of it goes through the
embedded MongoDB server (SecantusDB: a Python process of its own, sharing the cores).
This bench replays FSD's real keys (the LSH buckets of ``tweets``, batches of 20,000)
through exactly those calls, each role with a key-map cache of its own as separate
processes have, and times each part per batch: wall and this process's CPU seconds,
the MongoDB round trips, and the server process's CPU seconds (read from /proc).

Cases: ``kg`` (the hash; what routing costs without maps), ``dlb-l`` at the defaults
(``--moves pays``), and ``dlb-l/always`` (the paper's Balancer: maps that override
thousands of keys, which every engine's bookkeeping walks). The engines' own work and
the parcels' export and import are not here: ``cep bench`` measures them (stage
``import``/``export``); what is here is the fixed price of the balancing machinery,
which is what a run pays where balancing cannot help.

Run: ``python bench/bench_balance_cost.py [--n 240000] [--mode zipf-periodic]``.
Writes ``bench/results/balance-cost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from common import RESULTS, write_results

from cep.io.tweets.generator import generate_tweets
from cep.provenance import load_average
from cep.servers.mongo import EmbeddedMongo
from cep.spark.engines.batch import key_counts, leaving_keys
from migration.protocol import parcel_name, parcel_receivers, parcel_senders
from migration.store import StateStore
from splitter import keymaps
from splitter.balancer import Balancer
from splitter.keymaps import key_map
from splitter.routing import key_grouping, map_grouping, owners_of

ENGINES = 5
# an engine's busy seconds per event of FSD on a 0.4-core node (the gate's saving is
# proportional to it; cep bench --nodes 5 measured 0.3-0.9 s per 20,000-tweet batch)
BUSY_S_PER_EVENT = 6e-5


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its reaped children."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


class Meter:
    """Wall and CPU seconds, and MongoDB round trips, per part over the batches."""

    def __init__(self, store: StateStore | None) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.trips: dict[str, int] = defaultdict(int)
        self.caches: dict[str, OrderedDict] = defaultdict(OrderedDict)
        self.current = "driver"
        if store is not None:  # count the round trips of every store call by part
            for name in ("get_key_map", "put_key_map", "get_states", "put_states", "gc"):
                method = getattr(store, name)
                setattr(store, name, self._counting(name, method))

    def _counting(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.trips[self.current] += 1
            return method(*args, **kwargs)
        return call

    @contextmanager
    def part(self, name: str, role: str) -> Iterator[None]:
        """Time ``name`` as process ``role`` (its own key-map cache, as on Spark)."""
        keymaps._CACHE = self.caches[role]  # a process of its own
        self.current = name
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.process_time() - cpu


def handoff(store: StateStore, e: int, t: int) -> list[str]:
    """Engine ``e``'s side of the protocol in batch ``t`` as ``engines/batch.py`` runs it
    (the maps it reads, the parcels it reads and writes, the keys it works out), with a
    placeholder blob per parcel: the keys' state is the engines' cost, not this one's."""
    prev = key_map(store, t - 1) if t > 0 else None
    cur = key_map(store, t)
    senders = parcel_senders(e, prev, cur)
    if senders:
        store.get_states(t - 1, [parcel_name(s, e) for s in senders])
    leaving = leaving_keys(store, e, t)
    if leaving:
        receivers = parcel_receivers(e, leaving, cur, key_map(store, t + 1))
        store.put_states(t, {parcel_name(e, r): b"state" for r in receivers})
    return leaving


def run_case(strategy: str, moves: str, batches: list[np.ndarray], uri: str | None,
             server_pid: int | None) -> dict:
    """One strategy over the batches; per-batch milliseconds of each part."""
    store = (StateStore(uri, run_id=f"bench-{uuid.uuid4().hex[:8]}")
             if strategy != "kg" else None)
    meter = Meter(store)
    if store is None:
        router = key_grouping(ENGINES)
    else:
        router = map_grouping(store)
        balancer = Balancer(store, strategy, ENGINES, moves=moves)
        with meter.part("balancer", "driver"):
            balancer.prepare()
    server_before = server_cpu_s(server_pid) if server_pid else 0.0
    overrides, moved = [], 0
    for t, keys in enumerate(batches):
        with meter.part("route", "input"):
            owners, _ = owners_of(router, keys, t)
        stats = []
        for e in range(ENGINES):
            mine = keys[owners == e]
            with meter.part("key_load", f"engine-{e}"):  # both sides: the Balancer's input
                load = key_counts(mine) if len(mine) else {}
            if store is not None:
                with meter.part("handoff_maps", f"engine-{e}"):
                    leaving = handoff(store, e, t)
                moved += len(leaving)
            stats.append({"engine": e, "key_load": load,
                          "busy_s": BUSY_S_PER_EVENT * len(mine)})
        if store is None:
            continue
        metrics = {"rows_per_engine": [len(s["key_load"]) for s in stats],
                   "busy_s_per_engine": [s["busy_s"] for s in stats], "stage_s": {}}
        with meter.part("balancer", "driver"):
            balancer(t, stats, metrics)
        overrides.append(len(key_map(store, t + 2).overrides))
    server = (server_cpu_s(server_pid) - server_before) if server_pid else 0.0
    n = len(batches)
    out = {
        "strategy": strategy if strategy == "kg" else f"{strategy}/{moves}",
        "batches": n,
        "wall_ms_per_batch": {k: round(1000 * v / n, 2) for k, v in meter.wall.items()},
        "cpu_ms_per_batch": {k: round(1000 * v / n, 2) for k, v in meter.cpu.items()},
        "mongo_round_trips_per_batch": {k: round(v / n, 2) for k, v in meter.trips.items()},
        "server_cpu_ms_per_batch": round(1000 * server / n, 2),
        "overrides_per_map_median": int(np.median(overrides)) if overrides else 0,
        "keys_exported": moved,
    }
    if store is not None:
        store.drop_run()
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=240_000)
    parser.add_argument("--mode", default="zipf-periodic")
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--batch-size", type=int, default=20_000)
    parser.add_argument("--cases", default="kg,dlb-l/pays,dlb-l/always")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default=str(RESULTS / "balance-cost.json"))
    args = parser.parse_args()
    keys = np.asarray(generate_tweets(n=args.n, mode=args.mode, rate=args.rate).keys)
    batches = [keys[lo:lo + args.batch_size] for lo in range(0, len(keys), args.batch_size)]
    start_load = load_average()
    rows = []
    with EmbeddedMongo() as mongo:
        pid = mongo._proc.pid if mongo._proc is not None else None
        for case in args.cases.split(","):
            strategy, _, moves = case.partition("/")
            row = run_case(strategy, moves or "pays", batches, mongo.uri, pid)
            rows.append(row)
            print(json.dumps(row), flush=True)
    kg_cpu = sum(rows[0]["cpu_ms_per_batch"].values()) if rows else 0.0
    for row in rows:
        row["extra_cpu_ms_per_batch_vs_kg"] = round(
            sum(row["cpu_ms_per_batch"].values()) + row["server_cpu_ms_per_batch"] - kg_cpu, 2)
    write_results({"input": f"tweets:n={args.n},mode={args.mode},rate={args.rate}",
                   "batch_size": args.batch_size, "engines": ENGINES, "label": args.label,
                   "load_average_at_start": start_load, "cases": rows}, args.out)


if __name__ == "__main__":
    main()
