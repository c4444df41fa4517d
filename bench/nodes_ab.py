"""Two trees of cep side by side on the emulated cluster: the same ``cep bench --nodes N``
of FSD from each, in interleaved rounds, and each strategy's throughput of the second over
the first.

    git worktree add --detach /work/wt/before COMMIT_A
    git worktree add --detach /work/wt/after COMMIT_B
    python bench/nodes_ab.py /work/wt/before /work/wt/after [--nodes 4] [--rounds 3]
        [--n 4000000] [--batch-size 1000000] [--strategies kg,dlb-l,elb]
        [--out nodes-ab.json]

Why: between two runs of the same tree a point of the speedup curve moves by a tenth or
more (``bench_speedup.py``), so a change's gain on the cluster is measured against the
tree before it in the same session, round by round, each side a whole process of its own
tree (``PYTHONPATH``) on the same generated input. Each side's ``cep bench`` files go to
``bench/results/speedup/`` as ``<out>-<side>-<round>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_speedup import bench_command
from common import RESULTS, write_results

from cep.provenance import load_average


def tree_commit(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()


def run_side(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, dict]:
    """One ``cep bench --nodes`` of ``tree`` (the speedup bench's command line): strategy
    -> its events/s and whether its events equalled KG's."""
    subprocess.run(bench_command(args, args.nodes, out), check=True, cwd=tree,
                   env={**os.environ, "PYTHONPATH": str(tree)})
    results = json.loads(out.read_text())["results"]
    return {r["strategy"]: {"events_per_s": r["events_per_s"], "equal_to_kg": r["equal_to_kg"]}
            for r in results}


def ratios(rounds: list[dict]) -> dict[str, dict]:
    """Per strategy: each round's after/before throughput and their median."""
    out = {}
    for strategy in rounds[0]["before"]:
        each = [r["after"][strategy]["events_per_s"] / r["before"][strategy]["events_per_s"]
                for r in rounds]
        out[strategy] = {"rounds": [round(x, 3) for x in each],
                         "median": round(statistics.median(each), 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--node-cpus", type=float, default=0.4)
    parser.add_argument("--rounds", dest="ab_rounds", type=int, default=3,
                        help="A/B rounds (each cep bench runs its strategies once)")
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--batch-size", type=int, default=1_000_000)
    parser.add_argument("--strategies", default="kg,dlb-l,elb")
    parser.add_argument("--out", default="nodes-ab.json")
    parser.set_defaults(rounds=1)  # cep bench's own --rounds, which bench_command passes
    args = parser.parse_args(argv)
    started, load = time.strftime("%Y-%m-%dT%H:%M:%S%z"), load_average()
    stem = Path(args.out).stem
    rounds = []
    for number in range(1, args.ab_rounds + 1):
        sides = {}
        for side, tree in (("before", args.before), ("after", args.after)):
            raw = RESULTS / "speedup" / f"{stem}-{side}-{number}.json"
            sides[side] = run_side(tree.resolve(), args, raw)
            print(number, side, json.dumps(sides[side]), flush=True)
        rounds.append(sides)
    found = ratios(rounds)
    for strategy, r in found.items():
        print(f"{strategy:6s} after/before {r['median']:.3f}  rounds {r['rounds']}")
    write_results({"bench": "nodes_ab", "started": started, "load_average_at_start": load,
                   "before": tree_commit(args.before), "after": tree_commit(args.after),
                   "nodes": args.nodes, "cpus_per_node": args.node_cpus, "n": args.n,
                   "batch_size": args.batch_size, "rounds": rounds,
                   "after_over_before": found}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
