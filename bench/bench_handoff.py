"""What handing moved keys over costs, before and after a change, side by side: FSD under
the periodic Zipf law on an emulated cluster (``cep bench --nodes``), DLB-L moving keys.

Each side is a checkout of cep (``--before DIR``, ``--after DIR``) whose ``cep bench``
runs with that checkout first on ``PYTHONPATH`` (KG, then DLB-L; the emulated nodes run
the driver's cep). The sides alternate, ``--rounds`` times, because this machine is
shared and its speed drifts. Per DLB-L run: keys and state bytes moved, the engines'
task seconds of export (the sender: take the keys out, encode, write to MongoDB) and of
import (the receiver: read, decode, adopt), per thousand keys, the restore stage of DLB-L
and of KG (where each engine also works out from the key maps which keys leave it), and
DLB-L's rate against the KG run beside it. Writes ``bench/results/handoff.json``, or
``--out NAME``.

``--reuse DIR`` summarises the ``cep bench`` JSON files an earlier invocation left in
DIR (``before-<round>.json``, ``after-<round>.json``) instead of running.

Run (``../before``: ``git worktree add ../before <commit>`` before the change)::

    python bench/bench_handoff.py --before ../before --after . --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from common import write_results  # noqa: E402

from cep.provenance import load_average  # noqa: E402

SIDES = ("before", "after")


def bench_side(checkout: Path, args: argparse.Namespace, out: Path) -> None:
    """One ``cep bench`` of ``checkout``: KG, then DLB-L, on ``--nodes`` emulated nodes."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    subprocess.run(
        [sys.executable, "-m", "cep.cli", "bench", "rules/fsd.epl", "--input", args.input,
         "--nodes", str(args.nodes), "--batch-size", str(args.batch_size),
         "--strategies", "kg,dlb-l", "--json", str(out)],
        cwd=checkout, env=env, check=True)


def summary(path: Path) -> dict:
    """A side's DLB-L run: what it moved, what moving cost, its rate against KG's."""
    results = {r["strategy"]: r for r in json.loads(path.read_text())["results"]}
    moved = results["dlb-l"]
    kg = results.get("kg")  # a file of ``--strategies dlb-l`` has no KG run in it
    stages = moved["stage_s"]
    keys = max(moved["keys_moved"], 1)
    return {
        "keys_moved": moved["keys_moved"],
        "state_mb_moved": round(moved["state_bytes_moved"] / 1e6, 1),
        "export_s": stages.get("export", 0.0),
        "import_s": stages.get("import", 0.0),
        "export_ms_per_1000_keys": round(1e6 * stages.get("export", 0.0) / keys, 1),
        "import_ms_per_1000_keys": round(1e6 * stages.get("import", 0.0) / keys, 1),
        "restore_s": stages.get("restore", 0.0),
        "kg_restore_s": kg["stage_s"].get("restore", 0.0) if kg else None,
        "events_per_s": moved["events_per_s"],
        "x_kg": round(moved["events_per_s"] / kg["events_per_s"], 3) if kg else None,
        "events_equal_to_kg": moved["equal_to_kg"],
        "load_average": moved["load_average"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=20_000)
    parser.add_argument("--input",
                        default="Tweet=tweets:n=480000,mode=zipf-periodic,seed=7,rate=500")
    parser.add_argument("--reuse", type=Path, help="summarise these runs, do not run")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default="handoff.json", help="file under bench/results/")
    args = parser.parse_args()
    started = load_average()
    if args.reuse is not None:
        runs = args.reuse
    else:
        if args.before is None:
            parser.error("--before DIR is needed unless --reuse")
        runs = Path(tempfile.mkdtemp(prefix="cep-handoff-"))
        for r in range(1, args.rounds + 1):
            for name, checkout in zip(SIDES, (args.before, args.after), strict=True):
                print(f"round {r}: {name}", file=sys.stderr, flush=True)
                bench_side(checkout.resolve(), args, runs / f"{name}-{r}.json")
    sides = {name: [summary(p) for p in sorted(runs.glob(f"{name}-*.json"))]
             for name in SIDES}
    medians = {name: {k: statistics.median(run[k] for run in rounds if run[k] is not None)
                      for k in ("export_ms_per_1000_keys", "import_ms_per_1000_keys",
                                "restore_s", "kg_restore_s", "events_per_s", "x_kg")
                      if any(run[k] is not None for run in rounds)}
               for name, rounds in sides.items() if rounds}
    for name, rounds in sides.items():
        for i, run in enumerate(rounds, 1):
            print(f"{name} #{i}: {run['keys_moved']:,} keys ({run['state_mb_moved']} MB), "
                  f"export {run['export_s']} s, import {run['import_s']} s, restore "
                  f"{run['restore_s']} s (KG {run['kg_restore_s']} s), "
                  f"{run['events_per_s']:,.0f} tweets/s ({run['x_kg']}x KG), "
                  f"events = KG: {run['events_equal_to_kg']}")
    for name, m in medians.items():
        print(f"{name} (medians): export {m['export_ms_per_1000_keys']} ms and import "
              f"{m['import_ms_per_1000_keys']} ms per 1,000 keys, DLB-L "
              f"{m['events_per_s']:,.0f} tweets/s ({m.get('x_kg', '-')}x KG)")
    config = json.loads(next(runs.glob("after-*.json")).read_text())
    write_results({
        "input": config["inputs"], "nodes": config["nodes"],
        "cpus_per_node": config["cpus_per_node"], "batch_size": config["batch_size"],
        "note": args.note, "runs": sides, "medians": medians,
        "load_average_at_start": started,
    }, args.out)


if __name__ == "__main__":
    main()
