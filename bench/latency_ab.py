"""bench_latency.py's cases with two source trees, interleaved: a before and an after.

Each case is one ``bench_latency.py`` process (this tree's bench script, run with the
tree's ``cep`` on ``PYTHONPATH``), in this order per round and rate: every ``--ab-sinks``
sink with each tree in turn, then every ``--sinks`` sink with the last tree only (the
controls: a path the change does not touch, such as the file path and the file path
with a Kafka case's load beside it). The cases land in one JSON in the shape of
``kafka_latency_ab.json`` (``tree``, ``round`` and the case's figures, its stage medians
included), which the performance page shows.

    python bench/latency_ab.py --trees before=DIR,after=DIR [--rates 50000,100000]
        [--ab-sinks kafka] [--sinks file,file+kafka-load] [--rounds 1] [--seconds 20]
        --what TEXT --out NAME.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, load_average, write_results

BENCH = ROOT / "bench" / "bench_latency.py"


def run_case(tree: Path, sink: str, rate: int, seconds: float, out: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(BENCH), "--sinks", sink, "--rates", str(rate),
               "--triggers", "default", "--seconds", str(seconds), "--out", str(out)]
    print(f"[{tree.name}] {sink} {rate} (load {load_average()})", flush=True)
    subprocess.run(command, cwd=tree, env=env, check=True)
    return json.loads(out.read_text())["cases"]


def earlier(spec: str) -> tuple[list[dict], list[str]]:
    """The cases of an earlier run's case files (see ``--earlier``), round ``r0``."""
    if not spec:
        return [], []
    folder, _, renames = spec.partition(":")
    names = dict(item.split("=", 1) for item in renames.split(",") if item)
    cases, order = [], []
    for path in sorted(Path(folder).glob("*.json")):
        tree = path.name.split("-", 1)[0]
        tree = names.get(tree, tree)
        for case in json.loads(path.read_text())["cases"]:
            cases.append({"tree": tree, "round": "r0", **case})
            order.append(f"{tree}-r0 {case['sink']} {case['rate']}")
    return cases, order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", required=True, help="NAME=DIR,NAME=DIR (before first)")
    parser.add_argument("--rates", default="50000,100000")
    parser.add_argument("--ab-sinks", default="kafka")
    parser.add_argument("--sinks", default="file,file+kafka-load")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--earlier", default="",
                        help="DIR[:OLD=NEW,...]: case files TREE-…-ROUND.json an earlier "
                             "run of this script left (its temporary directory), shown "
                             "first, trees renamed OLD to NEW")
    parser.add_argument("--what", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    trees = [(name, Path(path).resolve()) for name, path in
             (item.split("=", 1) for item in args.trees.split(","))]
    cases, order = earlier(args.earlier)
    with tempfile.TemporaryDirectory(prefix="latency-ab-") as tmp:
        for round_ in range(1, args.rounds + 1):
            for rate in (int(r) for r in args.rates.split(",")):
                runs = [(name, tree, sink) for sink in args.ab_sinks.split(",") if sink
                        for name, tree in trees]
                runs += [(trees[-1][0], trees[-1][1], sink)
                         for sink in args.sinks.split(",") if sink]
                for name, tree, sink in runs:
                    out = Path(tmp) / f"{name}-{sink}-{rate}-{round_}.json"
                    for case in run_case(tree, sink, rate, args.seconds, out):
                        cases.append({"tree": name, "round": f"r{round_}", **case})
                    order.append(f"{name}-r{round_} {sink} {rate}")
    write_results({"what": args.what, "trees": {name: str(tree) for name, tree in trees},
                   "order": order, "cases": cases}, args.out)


if __name__ == "__main__":
    main()
