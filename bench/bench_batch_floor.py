"""Where a small micro-batch's time goes: Spark's own event log beside cep's metrics.

A run at cep's defaults for the engines (5, ``local[2]``) over batches of
``--events`` events (the sensor rule, 1,000 keys: the rule itself costs next to nothing),
with Spark's event log on. For every batch after the first two, the trigger is split
into what Spark records (``spark_ms``: offsets, planning, WAL, addBatch, commit) and
addBatch into its jobs; each job's stages into their wall time, the tasks' time in the
executor (deserialisation, run, result serialisation), the wait before the first task
starts and after the last one ends (scheduling, task launch, result collection); and
the engines' tasks into cep's own work (``stage_s``: unpack, restore, process, save,
output) and the rest of their run time (Arrow batches to and from the Python worker,
the state store: RocksDB's own figures are beside them), and what the driver does
after the job (cep's delivery of the events, dead letters and metrics: ``write_s``).
The medians over those batches are the profile of the floor.

    python bench/bench_batch_floor.py [--events 1000] [--batches 14]

Writes ``bench/results/batch-floor.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from bench_speed import SENSOR, state_file
from common import write_results

# the parts of an engine task that cep measures itself (cep.spark.engines.batch)
CEP_TASK_STAGES = ("unpack", "restore", "process", "save", "output", "import", "export")


def run_with_event_log(events: int, batches: int, engines: int, master: str,
                       workdir: Path) -> tuple[list[dict], Path]:
    """One run; its per-batch metrics and the event log's file."""
    from cep.run import run
    from cep.run_config import Output, RunConfig
    from grammar.compile import compile_file

    path = workdir / "in.jsonl"
    state_file(path, 0, 1_000, events, batches)
    logs = workdir / "event-log"
    logs.mkdir()
    module = compile_file(str(SENSOR))
    result = run(module, RunConfig(
        {module.input_streams[0]: str(path)}, output=Output(str(workdir / "out.jsonl")),
        engines=engines, batch_size=events, master=master, progress=False,
        spark_conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": logs.as_uri(),
                    "spark.eventLog.compress": "false",
                    "spark.eventLog.rolling.enabled": "false"}))
    [log] = [p for p in logs.rglob("*") if p.is_file() and not p.name.startswith(".")]
    return sorted(result.metrics, key=lambda m: m["batch"]), log


def read_event_log(log: Path) -> dict[int, list[dict]]:
    """The jobs of each streaming batch: per job its stages, and per stage its
    submission and completion times and its tasks' timings (ms)."""
    stages: dict[int, dict] = {}
    jobs: dict[int, dict] = {}
    for line in log.read_text().splitlines():
        event = json.loads(line)
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            batch = (event.get("Properties") or {}).get("streaming.sql.batchId")
            jobs[event["Job ID"]] = {"batch": None if batch is None else int(batch),
                                     "start": event["Submission Time"],
                                     "stages": event["Stage IDs"]}
        elif kind == "SparkListenerJobEnd":
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            stage = stages.setdefault(info["Stage ID"], {"tasks": []})
            stage.update(name=info["Stage Name"].split(" at ")[0],
                         submitted=info.get("Submission Time"),
                         completed=info.get("Completion Time"),
                         skipped=info.get("Submission Time") is None)
        elif kind == "SparkListenerTaskEnd":
            info, metrics = event["Task Info"], event.get("Task Metrics") or {}
            stages.setdefault(event["Stage ID"], {"tasks": []})["tasks"].append({
                "launch": info["Launch Time"], "finish": info["Finish Time"],
                "deserialize": metrics.get("Executor Deserialize Time", 0),
                "run": metrics.get("Executor Run Time", 0),
                "serialize": metrics.get("Result Serialization Time", 0),
                "gc": metrics.get("JVM GC Time", 0)})
    by_batch: dict[int, list[dict]] = defaultdict(list)
    for job in jobs.values():
        if job["batch"] is None or "end" not in job:
            continue
        job["stages"] = [stages[s] for s in job["stages"]
                         if s in stages and not stages[s].get("skipped")]
        by_batch[job["batch"]].append(job)
    return by_batch


def stage_profile(stage: dict) -> dict:
    """One stage's wall time (ms) and where it went."""
    tasks = stage["tasks"]
    wall = stage["completed"] - stage["submitted"]
    first = min((t["launch"] for t in tasks), default=stage["submitted"])
    last = max((t["finish"] for t in tasks), default=stage["completed"])
    return {"name": stage["name"], "tasks": len(tasks), "wall_ms": wall,
            "before_first_task_ms": first - stage["submitted"],
            "after_last_task_ms": stage["completed"] - last,
            "task_ms": sum(t["finish"] - t["launch"] for t in tasks),
            "run_ms": sum(t["run"] for t in tasks),
            "deserialize_ms": sum(t["deserialize"] for t in tasks),
            "serialize_ms": sum(t["serialize"] for t in tasks),
            "gc_ms": sum(t["gc"] for t in tasks)}


def batch_profile(metrics: dict, jobs: list[dict]) -> dict:
    """A batch's trigger split into Spark's parts, its jobs' stages, and the engines'
    own work (cep's ``stage_s``, seconds summed over engines)."""
    spark = metrics.get("spark_ms", {})
    stages = [stage_profile(s) for job in sorted(jobs, key=lambda j: j["start"])
              for s in job["stages"]]
    if len(stages) == 2:  # the input tasks' stage, then the engines' (Spark names both
        # after the Python call that submitted them)
        stages[0]["name"], stages[1]["name"] = "input tasks", "engine tasks"
    jobs_ms = sum(j["end"] - j["start"] for j in jobs)
    cep_task_ms = 1000 * sum(metrics["stage_s"].get(s, 0.0) for s in CEP_TASK_STAGES)
    return {"batch": metrics["batch"], "events": metrics["events_in"],
            "trigger_ms": spark.get("trigger", 0),
            "spark_ms": spark,
            "jobs": len(jobs), "jobs_ms": jobs_ms,
            "add_batch_beyond_jobs_ms": spark.get("add_batch", 0) - jobs_ms,
            "stages": stages,
            "cep_engine_work_ms": round(cep_task_ms, 1),
            "cep_input_work_ms": round(1000 * sum(metrics["stage_s"].get(s, 0.0)
                                                  for s in ("read", "derive", "route")), 1),
            "state_store": metrics.get("state_store", {}),
            "driver_after_job_ms": round(1000 * metrics.get("write_s", 0.0), 1)}


def medians(profiles: list[dict]) -> dict:
    """Medians over batches, per figure and per stage name (in order of appearance)."""
    def med(values: list[float]) -> float:
        return round(statistics.median(values), 1) if values else 0.0

    names = list(dict.fromkeys(s["name"] for p in profiles for s in p["stages"]))
    per_stage = {}
    for name in names:
        rows = [s for p in profiles for s in p["stages"] if s["name"] == name]
        per_stage[name] = {k: med([r[k] for r in rows]) for k in rows[0] if k != "name"}
    spark_keys = sorted({k for p in profiles for k in p["spark_ms"]})
    return {"trigger_ms": med([p["trigger_ms"] for p in profiles]),
            "spark_ms": {k: med([p["spark_ms"].get(k, 0) for p in profiles])
                         for k in spark_keys},
            "jobs": med([p["jobs"] for p in profiles]),
            "jobs_ms": med([p["jobs_ms"] for p in profiles]),
            "add_batch_beyond_jobs_ms": med([p["add_batch_beyond_jobs_ms"] for p in profiles]),
            "stages": per_stage,
            "state_store": {k: med([p["state_store"].get(k, 0) for p in profiles])
                            for k in sorted({k for p in profiles for k in p["state_store"]})},
            "driver_after_job_ms": med([p["driver_after_job_ms"] for p in profiles]),
            "cep_engine_work_ms": med([p["cep_engine_work_ms"] for p in profiles]),
            "cep_input_work_ms": med([p["cep_input_work_ms"] for p in profiles])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000, help="events per batch")
    parser.add_argument("--batches", type=int, default=14)
    parser.add_argument("--engines", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", default="batch-floor.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-batch-floor-") as tmp:
        metrics, log = run_with_event_log(args.events, args.batches, args.engines,
                                          args.master, Path(tmp))
        jobs = read_event_log(log)
    profiles = [batch_profile(m, jobs.get(m["batch"], [])) for m in metrics[2:]
                if m["events_in"] >= 0.9 * args.events]
    summary = medians(profiles)
    print(f"{len(profiles)} batches of {args.events:,} events, {args.engines} engines, "
          f"{args.master}: median trigger {summary['trigger_ms']:.0f} ms; Spark's parts "
          f"{summary['spark_ms']}; {summary['jobs']:.0f} jobs {summary['jobs_ms']:.0f} ms, "
          f"addBatch beyond them {summary['add_batch_beyond_jobs_ms']:.0f} ms (the driver's "
          f"delivery, dead letters and metrics after the job: "
          f"{summary['driver_after_job_ms']:.0f} ms)")
    for name, stage in summary["stages"].items():
        print(f"  stage {name}: {stage['tasks']:.0f} tasks, wall {stage['wall_ms']:.0f} ms "
              f"(before first task {stage['before_first_task_ms']:.0f}, after last "
              f"{stage['after_last_task_ms']:.0f}); tasks {stage['task_ms']:.0f} ms summed, "
              f"run {stage['run_ms']:.0f}, deserialize {stage['deserialize_ms']:.0f}")
    busy = {k: v for k, v in summary["state_store"].items() if v}
    print(f"  state stores (summed over engines, ms): {busy}")
    print(f"  cep's own work in the engine tasks {summary['cep_engine_work_ms']:.0f} ms "
          f"summed, in the input tasks {summary['cep_input_work_ms']:.0f} ms", flush=True)
    write_results({"events_per_batch": args.events, "engines": args.engines,
                   "master": args.master, "batches_profiled": len(profiles),
                   "median": summary, "per_batch": profiles}, args.out)


if __name__ == "__main__":
    sys.exit(main())
