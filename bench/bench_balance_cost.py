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
processes have (and, where the tree does so, the maps the input task sends the engines
in the payloads), and times each part per batch: wall and this process's CPU seconds,
the MongoDB round trips, and the server process's CPU seconds (read from /proc).

Cases: ``kg`` (the hash; what routing costs without maps), ``dlb-l`` at the defaults
(``--moves pays``), and ``dlb-l/always`` (the paper's Balancer: maps that override
thousands of keys, which every engine's bookkeeping walks). The engines' own work and
the parcels' export and import are not here: ``cep bench`` measures them (stage
``import``/``export``); what is here is the fixed price of the balancing machinery,
which is what a run pays where balancing cannot help.

With ``--before DIR`` (a checkout, e.g. ``git worktree add`` or ``git archive``) each
round runs both trees, each in a process of its own, in turn; the file keeps every
round and the medians. ``--bound`` reads ``cep bench --nodes`` files for what balancing
can buy at most there (the engines' share of KG's batch and KG's headroom) and what the
machinery costs a batch where it buys nothing.

``--end-to-end DIR`` adds, to the same file, the ``cep bench --nodes 5 --strategies
kg,dlb-l --json DIR/<side>-<input>.json`` runs of each checkout.

Run: ``python bench/bench_balance_cost.py [--before DIR] [--rounds 3]``.
Writes ``bench/results/balance-cost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from common import RESULTS, ROOT, write_results

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
NODE_CPUS = 0.4  # cep bench --nodes 5 on this 2-core machine
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
        maps_for = getattr(router, "maps_for", None)  # trees that send the engines maps
        with meter.part("route", "input"):
            owners, _ = owners_of(router, keys, t)
            maps = maps_for(t) if maps_for is not None else None
        stats = []
        for e in range(ENGINES):
            mine = keys[owners == e]
            with meter.part("key_load", f"engine-{e}"):  # both sides: the Balancer's input
                load = key_counts(mine) if len(mine) else {}
            if store is not None:
                with meter.part("handoff_maps", f"engine-{e}"):
                    if maps:  # what engines/batch.py does with the payload's maps
                        keymaps.prime(store, maps)
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


def measure(args: argparse.Namespace) -> list[dict]:
    """Every case of ``args.cases`` in this process, one after the other."""
    keys = np.asarray(generate_tweets(n=args.n, mode=args.mode, rate=args.rate).keys)
    batches = [keys[lo:lo + args.batch_size] for lo in range(0, len(keys), args.batch_size)]
    rows = []
    with EmbeddedMongo() as mongo:
        pid = mongo._proc.pid if mongo._proc is not None else None
        for case in args.cases.split(","):
            strategy, _, moves = case.partition("/")
            rows.append(run_case(strategy, moves or "pays", batches, mongo.uri, pid))
    return rows


def side_rows(side: str, tree: str, args: argparse.Namespace) -> list[dict]:
    """The cases measured by a process of their own importing cep from ``tree``."""
    with tempfile.NamedTemporaryFile(suffix=".json") as raw:
        command = [sys.executable, __file__, "--raw", raw.name, "--n", str(args.n),
                   "--mode", args.mode, "--rate", str(args.rate),
                   "--batch-size", str(args.batch_size), "--cases", args.cases]
        env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
        subprocess.run(command, check=True, env=env)
        rows = json.loads(Path(raw.name).read_text())
    for row in rows:
        row["side"] = side
    return rows


def medians(rows: list[dict]) -> list[dict]:
    """Per side and case: each part's median over the rounds."""
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        cells[(row["side"], row["strategy"])].append(row)
    out = []
    for (side, strategy), runs in cells.items():
        cell: dict[str, Any] = {"side": side, "strategy": strategy, "rounds": len(runs)}
        for field in ("wall_ms_per_batch", "cpu_ms_per_batch", "mongo_round_trips_per_batch"):
            parts = sorted({p for r in runs for p in r[field]})
            cell[field] = {p: round(statistics.median(r[field].get(p, 0.0) for r in runs), 2)
                           for p in parts}
        for field in ("server_cpu_ms_per_batch", "overrides_per_map_median", "keys_exported"):
            cell[field] = statistics.median(r[field] for r in runs)
        cell["critical_path_ms_per_batch"] = critical_path_ms(cell)
        out.append(cell)
    return out


def critical_path_ms(cell: dict) -> float:
    """What the machinery adds to a batch on emulated nodes of ``NODE_CPUS`` cores, in
    CPU terms (wall times on this shared machine move with its load): the driver's hook
    and the server's work (the hook waits for its writes, between two batches), plus
    the input task's routing and one engine's map bookkeeping, each on a node of its
    own. The part KG has too (the engines' per-key loads) is left out."""
    cpu = cell["cpu_ms_per_batch"]
    return round(cpu.get("balancer", 0.0) + cell["server_cpu_ms_per_batch"]
                 + (cpu.get("route", 0.0) + cpu.get("handoff_maps", 0.0) / ENGINES) / NODE_CPUS,
                 2)


def bounds(paths: list[str], machinery_ms: float) -> list[dict]:
    """From ``cep bench --nodes`` files: KG's batch, the engines' share of it, KG's
    headroom by events (``verify.balance_headroom``), the most balancing can buy end to
    end (``1 / (1 - share (1 - 1/headroom))``) and what ``machinery_ms`` a batch costs
    where it buys nothing (``batch / (batch + machinery)``)."""
    out = []
    for path in paths:
        data = json.loads(Path(path).read_text())
        kg = next(r for r in data["results"] if r["strategy"] == "kg")
        bound = kg_bound([kg])
        out.append({"file": Path(path).name, **bound,
                    "no_gain_x_kg": round(bound["kg_batch_ms"]
                                          / (bound["kg_batch_ms"] + machinery_ms), 3)})
    return out


def kg_bound(kg_runs: list[dict]) -> dict:
    """What balancing can buy at most end to end, from ``cep bench`` KG runs (medians
    over the runs): the engines' share of KG's batches and KG's headroom by events
    (``verify.balance_headroom``: the engines' part cannot end sooner than the work over
    the slots, nor than the heaviest key), so the best rate over KG is
    ``1 / (1 - share (1 - 1/headroom))``, with moving keys free."""
    share = statistics.median(r["wall_s"]["engines"] / r["wall_s"]["batches"]
                              for r in kg_runs)
    room = statistics.median(r["headroom_events"] for r in kg_runs)
    batch_ms = statistics.median(1000 * r["wall_s"]["batches"] / len(r["batch_events"])
                                 for r in kg_runs)
    bound = {"kg_batch_ms": round(batch_ms), "engines_share": round(share, 3),
             "kg_headroom_events": room,
             "best_x_kg": round(1 / (1 - share * (1 - 1 / room)), 3)}
    if all("headroom_cpu" in r for r in kg_runs):  # the same by the engines' CPU seconds
        cpu_room = statistics.median(r["headroom_cpu"] for r in kg_runs)
        bound |= {"kg_headroom_cpu": cpu_room,
                  "best_x_kg_cpu": round(1 / (1 - share * (1 - 1 / cpu_room)), 3)}
    return bound


def gain_captured(x_kg: float | None, best_x_kg: float) -> float | None:
    """The share of the bound's gain a strategy's rate over KG took: ``(x - 1) /
    (best - 1)``; None where the bound allows no gain (``best`` at most 1.005)."""
    if x_kg is None or best_x_kg <= 1.005:
        return None
    return round((x_kg - 1) / (best_x_kg - 1), 2)


def end_to_end(folder: Path) -> list[dict]:
    """Per ``cep bench`` file ``<side>-<input>.json``: each run's seconds, rate and load at
    its start, and DLB-L's rate over KG's (Table 1's, over both rounds' windows), with
    whether the events equalled KG's, the bound its own KG runs give (``kg_bound``) and
    the share of the bound's gain DLB-L took."""
    out = []
    for path in sorted(folder.glob("*-*.json")):
        side, _, name = path.stem.partition("-")
        data = json.loads(path.read_text())
        table = {row["strategy"]: row for row in data["table1"]}
        bound = kg_bound([r for r in data["results"] if r["strategy"] == "kg"])
        out.append({
            "side": side, "input": name, "inputs": data.get("inputs"),
            "date": data.get("date"), "load_average_at_start": data.get("load_average_at_start"),
            "x_kg": {k: r.get("x_kg") for k, r in table.items()},
            "skewed_x_kg": {k: r.get("skewed_x_kg") for k, r in table.items()},
            "equal_to_kg": all(r.get("equal_to_kg") for r in table.values()),
            "bound": bound,
            "captured": {k: gain_captured(r.get("x_kg"), bound["best_x_kg"])
                         for k, r in table.items() if k != "kg"},
            "captured_cpu": {k: gain_captured(r.get("x_kg"), bound.get("best_x_kg_cpu", 1.0))
                             for k, r in table.items() if k != "kg"},
            "runs": [{k: r.get(k) for k in ("strategy", "round", "seconds", "events_per_s",
                                            "keys_moved", "load_average")}
                     for r in data["results"]]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=240_000)
    parser.add_argument("--mode", default="zipf-periodic")
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--batch-size", type=int, default=20_000)
    parser.add_argument("--cases", default="kg,dlb-l/pays,dlb-l/always")
    parser.add_argument("--before", help="a checkout to measure beside this one")
    parser.add_argument("--before-name", help="what to call it (default: its commit)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bound", nargs="*", default=[
        str(RESULTS / "gate-5nodes" / "zipf-pays-1.json"),
        str(RESULTS / "gate-5nodes" / "default-pays-1.json")],
        help="cep bench --nodes files whose KG runs give the bound")
    parser.add_argument("--end-to-end", metavar="DIR",
                        help="only add to the result file the cep bench --nodes files "
                             "DIR/<side>-<input>.json (KG and DLB-L, each side a checkout)")
    parser.add_argument("--raw", help=argparse.SUPPRESS)  # a side's process writes here
    parser.add_argument("--out", default=str(RESULTS / "balance-cost.json"))
    args = parser.parse_args()
    if args.raw:
        Path(args.raw).write_text(json.dumps(measure(args)))
        return
    if args.end_to_end:
        # the file's date stays the in-process rounds' (each end-to-end entry has its own)
        out = Path(args.out) if Path(args.out).parent != Path() else RESULTS / args.out
        kept = json.loads(out.read_text()).get("date") if out.exists() else None
        path = write_results({"end_to_end": end_to_end(Path(args.end_to_end))}, out,
                             merge=True)
        if kept:
            document = json.loads(path.read_text())
            path.write_text(json.dumps({**document, "date": kept}, indent=2) + "\n",
                            encoding="utf-8")
        return
    start_load = load_average()
    sides = [("before", args.before)] if args.before else []
    sides.append(("after", str(ROOT)))
    rows = []
    for turn in range(args.rounds):  # interleaved: each round runs every side once
        for side, tree in sides:
            rows += [{**r, "round": turn + 1} for r in side_rows(side, tree, args)]
            print(f"round {turn + 1} {side} done, load {load_average()}", flush=True)
    cells = medians(rows)
    after = next(c for c in cells if c["side"] == "after" and c["strategy"] == "dlb-l/pays")
    write_results({"input": f"tweets:n={args.n},mode={args.mode},rate={args.rate}",
                   "batch_size": args.batch_size, "engines": ENGINES,
                   "node_cpus": NODE_CPUS, "rounds": args.rounds,
                   "sides": {side: (args.before_name if side == "before" and args.before_name
                                     else _describe(tree)) for side, tree in sides},
                   "load_average_at_start": start_load, "cells": cells,
                   "bounds": bounds(args.bound, after["critical_path_ms_per_batch"]),
                   "runs": rows}, args.out)
    for cell in cells:
        print(cell["side"], cell["strategy"], "CPU ms", cell["cpu_ms_per_batch"],
              "server", cell["server_cpu_ms_per_batch"], "critical path ms",
              cell["critical_path_ms_per_batch"])


def _describe(tree: str) -> str:
    """A checkout as its commit (and whether its tree has changes)."""
    def git(*words: str) -> str:
        return subprocess.run(["git", "-C", tree, *words], capture_output=True,
                              text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or Path(tree).name
    return commit + (" (with changes)" if git("status", "--porcelain") else "")


if __name__ == "__main__":
    main()
