"""Guo & Zhou's Fig. 6 on cep: how throughput grows as FSD scales out over emulated nodes,
beside the ideal line and the bound Spark's serial frame allows.

    python bench/bench_speedup.py [--nodes 1,2,3,4,5] [--node-cpus 0.4] [--n 600000]
        [--rate 1000] [--batch-size 120000] [--strategies kg,dlb-l,elb,clb,pkg]
        [--rounds 1] [--sweeps 1] [--first-sweep 1] [--also PATH] [--out speedup.json]

For each N, one ``cep bench --nodes N --node-cpus C`` process (a whole process per N,
the strategies in turn in it, KG first, as ``cep bench`` runs them): N one-slot nodes,
each capped at the same C cores, so N nodes have N·C cores and an engine per node. Each
strategy's throughput is over its runs' measured windows (from the first batch's commit:
the first batch holds the session's warm-up); speedup(N) = throughput(N) / KG's at N = 1.
``--sweeps`` repeats the whole 1..N sweep, so that the load of a shared machine weighs on
every N alike. Each ``cep bench`` file is kept in ``bench/results/speedup/``.

The bound (:func:`bound`), from the N = 1 KG runs: the nodes' cgroups say how long the
one node worked (its CPU seconds over its share), and the rest of the run's wall clock
is the driver's serial part (Spark's planning, scheduling, commits; nothing more nodes
can share). Amdahl's law then bounds speedup(N) at ``T / (S + P / N)``. A placement that
keeps each key on one engine cannot split a batch's heaviest key either: the engines'
part of a batch cannot drop below its heaviest key's share of it, which gives the
key-preserving bound (PKG splits keys and is not held by it). The machine's bound: the
nodes are capped but the driver, its JVM, Spark's master and the embedded MongoDB share
the same cores outside any quota, so what the 1-node KG windows cost the whole machine
per event (``machine_window_cpu_s``, ``cep.machine_cpu``) bounds every N's rate at the
machine's cores over that cost, assuming an event costs no less CPU on more nodes (each
point's own cost is kept beside it: ``machine_cores_busy``, and :func:`machine_at_cost`
turns the cheapest into the bound at each N's own cost).

Writes ``bench/results/speedup.json``; ``cep report bench/results/speedup.json -o DIR``
draws the figure (``cep.speedup_figure``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import RESULTS, ROOT, write_results

from cep.provenance import load_average

RAW = RESULTS / "speedup"


def bench_command(args: argparse.Namespace, nodes: int, out: Path) -> list[str]:
    """The ``cep bench`` of one point of the curve."""
    return [sys.executable, "-m", "cep.cli", "bench", "rules/fsd.epl", "--input",
            input_spec(args), "--nodes", str(nodes),
            "--node-cpus", str(args.node_cpus), "--batch-size", str(args.batch_size),
            "--warm-up", "1", "--strategies", args.strategies, "--rounds", str(args.rounds),
            "--json", str(out)]


def input_spec(args: argparse.Namespace) -> str:
    return f"tweets:n={args.n},mode=zipf-periodic,rate={args.rate:g}"


def run_point(args: argparse.Namespace, nodes: int, sweep: int) -> dict:
    """One ``cep bench`` process for ``nodes`` nodes; its figures and the machine's load.
    Its file is named after ``--out`` (``speedup.json``'s points keep the plain names), so
    that an invocation with other settings does not write over another's points."""
    out = RAW / point_name(args.out, nodes, sweep)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's cep, not an installed one
    before, started = load_average(), time.time()
    done = subprocess.run(bench_command(args, nodes, out), cwd=ROOT, env=env, text=True,
                          capture_output=True)
    after, seconds = load_average(), round(time.time() - started, 1)
    print(f"N={nodes} sweep {sweep}: {seconds} s, load {before} -> {after}, "
          f"exit {done.returncode}", flush=True)
    if done.returncode != 0 or not out.exists():
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"cep bench --nodes {nodes} failed (exit {done.returncode})")
    bench = json.loads(out.read_text())
    return {"nodes": nodes, "sweep": sweep, "file": str(out.relative_to(ROOT)),
            "seconds": seconds, "load_average_before": before, "load_average_after": after,
            "load_average_runs": [r["load_average"] for r in bench["results"]],
            "strategies": point_figures(bench)}


def point_name(out: str, nodes: int, sweep: int) -> str:
    """``nodes4-sweep2.json`` for ``speedup.json``; ``X-nodes4-sweep2.json`` for
    ``speedup-X.json`` (or ``X.json``)."""
    stem = Path(out).stem.removeprefix("speedup").removeprefix("-")
    return f"{stem + '-' if stem else ''}nodes{nodes}-sweep{sweep}.json"


def point_figures(bench: dict) -> dict[str, dict]:
    """Per strategy of one ``cep bench`` file: throughput over the measured windows of its
    rounds (``table1``'s, as ``cep bench`` prints it), events equal to KG's, the load
    RSTD, keys moved per round."""
    runs: dict[str, list[dict]] = {}
    for r in bench["results"]:
        runs.setdefault(r["strategy"], []).append(r)
    out = {}
    quota = bench.get("cpus_per_node") or 1.0
    for row in bench["table1"]:
        mine = runs.get(row["strategy"], [])
        out[row["strategy"]] = {
            "tweets_per_s": row["tweets_per_s"], "equal_to_kg": row["equal_to_kg"],
            "avg_rstd": row["avg_rstd"],
            "keys_moved": [r["keys_moved"] for r in mine],
            "rates": [round(window_rate(r), 1) for r in mine],
            # the nodes' CPU seconds over the run, and the busiest node's mean use of its
            # quota: well under 1 where the node waited (on the driver, or on a machine
            # that other work kept busy), not its quota
            "node_cpu_s": [round(sum(r.get("node_cpu_s") or []), 2) for r in mine],
            "busiest_node_quota_used": [
                round(max(r.get("node_cpu_s") or [0.0]) / (quota * r["seconds"]), 3)
                for r in mine if r["seconds"]],
            # the whole machine's busy cores over the measured window (None: not metered)
            "machine_cores_busy": [machine_cores_busy(r) for r in mine]}
    return out


def window_seconds(r: dict) -> float:
    """A run's measured window: from its first batch's commit to its last."""
    elapsed = r.get("batch_elapsed_s") or []
    return elapsed[-1] - elapsed[0] if len(elapsed) > 1 else 0.0


def machine_cores_busy(r: dict) -> float | None:
    """The machine's busy cores over a run's measured window (None: not metered)."""
    cpu, seconds = r.get("machine_window_cpu_s"), window_seconds(r)
    return round(cpu / seconds, 3) if cpu is not None and seconds > 0 else None


def window_rate(r: dict) -> float:
    """A run's events per second from its first batch's commit to its last."""
    seconds = window_seconds(r)
    return sum(r["batch_events"][1:]) / seconds if seconds > 0 else r["events_per_s"]


def machine_bound(runs: list[dict], cores: int) -> float | None:
    """The most speedup the machine's ``cores`` allow over these 1-node runs: their
    windows' seconds over the CPU seconds the machine spent in them, times the cores
    (None where a run was not metered)."""
    spent = [r.get("machine_window_cpu_s") for r in runs]
    if not spent or any(cpu is None or cpu <= 0 for cpu in spent):
        return None
    return round(cores * sum(window_seconds(r) for r in runs) / sum(spent), 3)


def machine_at_cost(points: list[dict], nodes: list[int], curves: dict[str, list],
                    cores: int) -> list[float | None]:
    """Per N, the most speedup the machine's ``cores`` allow at the least CPU an event
    was measured to cost the machine on N nodes: over the strategies, a point's speedup
    times the cores over the cores its measured window kept busy (each a mean over the
    sweeps), the highest, and never above the ideal line. Why beside the 1-node bound:
    each node pays a batch's fixed costs, so an event costs the machine more CPU on more
    nodes, and the 1-node cost overstates what the cores allow at 5."""
    out: list[float | None] = []
    for i, n in enumerate(nodes):
        caps = []
        for name, curve in curves.items():
            busy = [b for p in points if p["nodes"] == n
                    for b in p["strategies"].get(name, {}).get("machine_cores_busy") or []
                    if b]
            if busy and curve[i]:
                caps.append(curve[i] * cores / (sum(busy) / len(busy)))
        ideal = n / nodes[0]  # no bound above the ideal line
        out.append(round(min(ideal, max(caps)), 3) if caps else None)
    return out


def bound(runs: list[dict], cpus_per_node: float, nodes: list[int],
          cores: int | None = None) -> dict:
    """Amdahl's bound on speedup(N) from N = 1 runs (``cep bench`` results on one node).

    A run's wall clock ``T`` (its ``seconds``) splits into the node's busy time ``P`` and
    the serial rest ``S = T - P``. A node capped at ``c`` cores is busy at least
    ``cpu / c`` seconds (it cannot use more than ``c`` while busy) and, where its quota
    held it back, about ``cpu + throttled``: the larger of the two is taken, so ``S`` is
    the least serial part the figures allow and the bound the highest. The engines'
    tasks (``batch_makespan_s``) are the part of ``P`` a key placement shares out; a
    batch's engines cannot drop below its heaviest key's share ``h_b`` of it, so on N
    nodes they take at least ``Σ_b e_b · max(1/N, h_b)`` of the engines' ``Σ_b e_b``."""
    wall = busy = engines = 0.0
    batches: list[tuple[float, float]] = []  # (engine seconds, heaviest key's share)
    for r in runs:
        cpu, throttled = sum(r["node_cpu_s"]), sum(r["node_throttled_s"])
        run_busy = min(r["seconds"], max(cpu / cpus_per_node, cpu + throttled))
        run_engines = min(run_busy, sum(r["batch_makespan_s"]))
        wall, busy, engines = wall + r["seconds"], busy + run_busy, engines + run_engines
        scale = run_engines / max(sum(r["batch_makespan_s"]), 1e-9)
        batches += [(e * scale, k / n if n else 0.0) for e, k, n in zip(
            r["batch_makespan_s"], r["batch_heaviest_key"], r["batch_events"], strict=True)]
    serial, other = wall - busy, busy - engines

    def engines_on(n: int) -> float:
        return sum(e * max(1 / n, share) for e, share in batches)

    heaviest = sum(e * share for e, share in batches) / max(engines, 1e-9)
    cap = machine_bound(runs, cores or os.cpu_count() or 1)
    return {"machine_cap": cap,
            "machine": None if cap is None else [round(min(n, cap), 3) for n in nodes],
            "runs": len(runs), "wall_s": round(wall, 2), "node_busy_s": round(busy, 2),
            "engines_s": round(engines, 2), "serial_s": round(serial, 2),
            "serial_share": round(serial / wall, 3) if wall else None,
            "heaviest_key_share": round(heaviest, 3),
            "amdahl": [round(wall / (serial + busy / n), 3) for n in nodes],
            "key_preserving": [round(wall / (serial + other / n + engines_on(n)), 3)
                               for n in nodes]}


def speedups(points: list[dict], nodes: list[int]) -> tuple[float, dict[str, list]]:
    """KG's throughput at N = 1 (over every sweep) and each strategy's speedup at each N
    (its throughput over the sweeps, as a mean of rates, over that)."""
    def mean_rate(strategy: str, n: int) -> float | None:
        rates = [p["strategies"][strategy]["tweets_per_s"] for p in points
                 if p["nodes"] == n and strategy in p["strategies"]]
        return sum(rates) / len(rates) if rates else None

    base = mean_rate("kg", min(nodes))
    assert base, "no KG run at the fewest nodes"
    names = list(dict.fromkeys(s for p in points for s in p["strategies"]))
    return base, {s: [None if (x := mean_rate(s, n)) is None else round(x / base, 3)
                      for n in nodes] for s in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,2,3,4,5")
    parser.add_argument("--node-cpus", type=float, default=0.4)
    parser.add_argument("--n", type=int, default=600_000)
    parser.add_argument("--rate", type=float, default=1000.0,
                        help="tweets per second of event time (the generator's default): "
                        "600,000 tweets span the periodic Zipf law's balanced first 5 "
                        "minutes and 5 of its skewed 10")
    parser.add_argument("--batch-size", type=int, default=120_000)
    parser.add_argument("--strategies", default="kg,dlb-l,elb,clb,pkg")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sweeps", type=int, default=1)
    parser.add_argument("--first-sweep", type=int, default=1,
                        help="the number of this invocation's first sweep (its files' names)")
    parser.add_argument("--also", metavar="PATH",
                        help="an earlier invocation's results (same settings): its sweeps "
                        "count beside this one's")
    parser.add_argument("--out", default="speedup.json")
    args = parser.parse_args(argv)
    nodes = [int(n) for n in args.nodes.split(",")]
    RAW.mkdir(parents=True, exist_ok=True)
    started = (json.loads(Path(args.also).read_text())["load_average_at_start"]
               if args.also else load_average())
    # an earlier invocation's points, their figures read again from their files
    earlier = [{**p, "strategies": point_figures(json.loads((ROOT / p["file"]).read_text()))}
               for p in json.loads(Path(args.also).read_text())["points"]] if args.also else []
    points = earlier + [run_point(args, n, sweep) for sweep in
                        range(args.first_sweep, args.first_sweep + args.sweeps) for n in nodes]
    base, curves = speedups(points, nodes)
    one = [r for p in points if p["nodes"] == min(nodes)
           for r in json.loads((ROOT / p["file"]).read_text())["results"]
           if r["strategy"] == "kg"]
    limits = bound(one, args.node_cpus, [n // min(nodes) for n in nodes])
    limits["machine_at_cost"] = machine_at_cost(points, nodes, curves, os.cpu_count() or 1)
    peak = max(max(p["load_average_before"][0], p["load_average_after"][0]) for p in points)
    dates = sorted(json.loads((ROOT / p["file"]).read_text())["date"] for p in points)
    write_results({
        "bench": "speedup", "rules": "rules/fsd.epl", "input": input_spec(args),
        "batch_size": args.batch_size,
        "node_cpus": args.node_cpus, "nodes": nodes, "strategies": args.strategies.split(","),
        "rounds": args.rounds, "sweeps": len({p["sweep"] for p in points}),
        "warm_up_batches": 1,
        "load_average_at_start": started, "load_average_peak": peak,
        "measured_from": dates[0], "measured_to": dates[-1],  # the points' files' dates
        "kg_tweets_per_s_at_1": round(base, 1), "ideal": [n / min(nodes) for n in nodes],
        "speedup": curves, "bound": limits, "points": points}, args.out)
    for name, curve in curves.items():
        print(f"{name:6s} " + "  ".join(f"{x:.2f}" if x is not None else "-" for x in curve))
    print("bound  " + "  ".join(f"{x:.2f}" for x in limits["amdahl"]) + "  (Amdahl, frame)")
    print("kp     " + "  ".join(f"{x:.2f}" for x in limits["key_preserving"]))
    if any(limits["machine_at_cost"]):
        print("mcost  " + "  ".join(f"{x:.2f}" if x else "-" for x in limits["machine_at_cost"])
              + "  (the cores at the least CPU per event measured on N nodes)")
    if limits["machine"]:
        print("mach   " + "  ".join(f"{x:.2f}" for x in limits["machine"])
              + f"  (the machine's {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
