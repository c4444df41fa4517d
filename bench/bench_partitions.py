"""What more state partitions than engines cost at low scale (issue 51, engines onto
partitions).

A job that may scale (``--engines auto:LO-HI``) starts with a shuffle partition per
engine up to HI (capped by a local master's task slots), since Spark freezes the
stateful operator's partitions in the checkpoint and engines beyond them share tasks.
This measures what that costs a small job that runs few engines: the same 3-engine
key-grouping job (routed by key maps, ``--engines auto:3-16`` with a band the policy
never leaves, so its count stays 3) with its partitions forced to P = 3 and P = 16,
each run a whole process, the sides interleaved round by round, the input read into
the page cache first. Figures per side: the median micro-batch trigger time (Spark's
``triggerExecution``) over the batches after the first two, and the run's seconds.

    python bench/bench_partitions.py [--events 40000] [--batch 2000] [--rounds 3]

Writes ``bench/results/partitions.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_speed import SENSOR, state_file
from common import load_average, write_results

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys
import cep.spark.runtime as runtime
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_file
partitions, path, out, batch = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
runtime.engine_partitions = lambda engines, master: partitions  # the side measured
module = compile_file(sys.argv[5])
result = run(module, RunConfig({module.input_streams[0]: path}, output=Output(out),
             engines=3, autoscale=(3, 16), autoscale_band=(0.0, 1e9), batch_size=batch,
             master="local[2]", progress=False, strategy="kg"))
triggers = [m["spark_ms"]["trigger"] for m in sorted(result.metrics, key=lambda m: m["batch"])
            if "spark_ms" in m][2:]
print(json.dumps({"seconds": result.seconds, "triggers_ms": triggers,
                  "engines": sorted({len(m["rows_per_engine"]) for m in result.metrics})}))
"""


def one(partitions: int, path: Path, workdir: Path, batch: int) -> dict:
    out = workdir / f"out-{partitions}.jsonl"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", CHILD, str(partitions), str(path), str(out),
                           str(batch), str(SENSOR)], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {"partitions": partitions, "load": load_average(), **figures,
            "median_trigger_ms": statistics.median(figures["triggers_ms"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", default="3,16")
    args = parser.parse_args()
    sides = [int(p) for p in args.sides.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="cep-partitions-"))
    path = workdir / "in.jsonl"
    state_file(path, 0, 200, args.batch, args.events // args.batch)
    runs = []
    for r in range(args.rounds):
        for p in sides if r % 2 == 0 else sides[::-1]:
            path.read_bytes()  # into the page cache
            runs.append(one(p, path, workdir, args.batch))
            print(f"round {r}: P={p}: median trigger {runs[-1]['median_trigger_ms']} ms, "
                  f"{runs[-1]['seconds']:.1f} s (load {runs[-1]['load']})", flush=True)
    summary = {str(p): {
        "median_trigger_ms": statistics.median(x["median_trigger_ms"] for x in runs
                                                if x["partitions"] == p),
        "median_seconds": round(statistics.median(x["seconds"] for x in runs
                                                  if x["partitions"] == p), 2)}
        for p in sides}
    write_results({"bench": "partitions", "events": args.events, "batch_size": args.batch,
                   "engines": 3, "master": "local[2]", "rule": SENSOR.name,
                   "summary": summary, "runs": runs}, "partitions.json")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
