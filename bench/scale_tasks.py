"""Where a run's batches spend their wall time on the cluster, from Spark's event log
(``bench_scale_midrun.py``, issue 51): per batch, its jobs' span, the input stage's and
the engines' stage's spans, which executor ran each engine partition (and at which
locality level, after how long a wait for a slot), and the driver's time between the
jobs (planning, the sink's hooks, the commit). The metrics say what the engines did
inside their tasks; only Spark's scheduler knows where it put the tasks and how long
they queued, so a phase that runs slower than key grouping on the same nodes is
explained by comparing these rows batch for batch.

The event log is Spark's own JSON lines (``spark.eventLog.enabled``); a job belongs to a
query's batch by the local properties Structured Streaming sets on it
(``sql.streaming.queryId``, ``streaming.sql.batchId``). Pure functions of the parsed
events; ``tests/test_bench.py`` checks them on hand-built events.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

QUERY_ID = "sql.streaming.queryId"
BATCH_ID = "streaming.sql.batchId"


def event_log_conf(directory: Path) -> dict[str, str]:
    """The Spark settings that write the session's event log into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": directory.as_uri(),
            "spark.eventLog.compress": "false"}


def read_events(directory: Path) -> Iterator[dict]:
    """Every event of every log under ``directory`` (Spark 4 writes a folder of rolled
    files per application), in order; a line cut short by a stop is skipped."""
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):  # Spark 4: a folder
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue


def queries(events: Iterable[dict]) -> dict[str, dict]:
    """Per streaming query id: the first and last job submission (ms since the epoch),
    so that a run's query is the one whose jobs fall inside the run."""
    out: dict[str, dict] = {}
    for e in events:
        if e.get("Event") != "SparkListenerJobStart":
            continue
        query = (e.get("Properties") or {}).get(QUERY_ID)
        if query is None:
            continue
        seen = out.setdefault(query, {"first_ms": e["Submission Time"], "last_ms": 0})
        seen["last_ms"] = max(seen["last_ms"], e["Submission Time"])
    return out


def query_between(found: dict[str, dict], start_s: float, end_s: float) -> str | None:
    """The query whose first job was submitted between ``start_s`` and ``end_s``."""
    return next((q for q, t in found.items()
                 if start_s * 1000 <= t["first_ms"] <= end_s * 1000), None)


@dataclass
class QueryStages:
    """A query's jobs, stages and finished tasks in an event log, one walk of it."""

    jobs: dict[int, dict] = field(default_factory=dict)  # job id -> batch, start, end, stages
    stages: dict[int, dict] = field(default_factory=dict)  # stage id -> batch, kind, times
    tasks: dict[int, list[dict]] = field(default_factory=dict)  # stage id -> :func:`_task`s


def query_stages(events: Iterable[dict], query: str) -> QueryStages:
    """``query``'s batches in the event log. A stage's ``kind``: ``input`` for a stage
    without a parent in its job (the source's read, route and shuffle write),
    ``engines`` for one that reads a shuffle (the stateful operator)."""
    found = QueryStages()
    for e in events:
        kind = e.get("Event")
        if kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            if props.get(QUERY_ID) != query or props.get(BATCH_ID) is None:
                continue
            batch = int(props[BATCH_ID])
            found.jobs[e["Job ID"]] = {"batch": batch, "start": e["Submission Time"],
                                       "end": None, "stages": e.get("Stage IDs", [])}
            parents = {s["Stage ID"]: s.get("Parent IDs", []) for s in e.get("Stage Infos", [])}
            for stage in e.get("Stage IDs", []):
                found.stages.setdefault(stage, {}).update(
                    batch=batch, kind="engines" if parents.get(stage) else "input")
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in found.jobs:
            found.jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            if info["Stage ID"] in found.stages:
                found.stages[info["Stage ID"]].update(
                    submitted=info.get("Submission Time"), completed=info.get("Completion Time"),
                    tasks=info.get("Number of Tasks"))
        elif kind == "SparkListenerTaskEnd" and e.get("Stage ID") in found.stages:
            found.tasks.setdefault(e["Stage ID"], []).append(_task(e))
    return found


def task_breakdown(events: list[dict], query: str) -> list[dict]:
    """One row per batch of ``query``: ``jobs_s`` (first job submitted to last job
    done), and per stage kind (:func:`query_stages`): its tasks, its span (first launch
    to last finish), per executor the tasks and their seconds, and for the engines each
    partition's executor, locality, seconds, run seconds and wait (stage submitted to
    the task's launch: a slot or a locality wait)."""
    found = query_stages(events, query)
    by_batch: dict[int, dict] = {}
    for job in found.jobs.values():
        row = by_batch.setdefault(job["batch"], {"batch": job["batch"], "jobs": 0,
                                                 "start": job["start"], "end": job["end"],
                                                 "stages": []})
        row["jobs"] += 1
        row["start"] = min(row["start"], job["start"])
        row["end"] = max(filter(None, (row["end"], job["end"])), default=None)
        row["stages"] += [s for s in job["stages"] if s in found.tasks]
    return [_batch_row(by_batch[b], found.stages, found.tasks) for b in sorted(by_batch)]


def _task(e: dict) -> dict:
    info, metrics = e["Task Info"], e.get("Task Metrics") or {}
    return {"partition": info.get("Partition ID", info.get("Index")),
            "executor": info["Executor ID"], "locality": info.get("Locality"),
            "launch": info["Launch Time"], "finish": info["Finish Time"],
            "run_ms": metrics.get("Executor Run Time", 0),
            "cpu_ms": metrics.get("Executor CPU Time", 0) / 1e6,
            "failed": bool(info.get("Failed"))}


def _batch_row(row: dict, stage_info: dict[int, dict], tasks: dict[int, list[dict]]) -> dict:
    out = {"batch": row["batch"], "jobs": row["jobs"],
           "jobs_s": round((row["end"] - row["start"]) / 1000, 3) if row["end"] else None}
    for stage in sorted(row["stages"]):
        info, done = stage_info[stage], tasks[stage]
        kind = info["kind"]
        first, last = min(t["launch"] for t in done), max(t["finish"] for t in done)
        executors: dict[str, list] = {}
        for t in done:
            slot = executors.setdefault(t["executor"], [0, 0.0])
            slot[0] += 1
            slot[1] = round(slot[1] + (t["finish"] - t["launch"]) / 1000, 3)
        entry = {"tasks": len(done), "span_s": round((last - first) / 1000, 3),
                 "per_executor": dict(sorted(executors.items()))}
        if kind == "engines":
            submitted = info.get("submitted") or first
            entry["partitions"] = [
                {"partition": t["partition"], "executor": t["executor"],
                 "locality": t["locality"], "s": round((t["finish"] - t["launch"]) / 1000, 3),
                 "run_s": round(t["run_ms"] / 1000, 3), "cpu_s": round(t["cpu_ms"] / 1000, 3),
                 "wait_s": round((t["launch"] - submitted) / 1000, 3)}
                for t in sorted(done, key=lambda t: (t["partition"], t["launch"]))]
        out.setdefault(kind, entry if kind not in out else _merged(out[kind], entry))
    return out


def _merged(a: dict, b: dict) -> dict:
    """Two stages of one kind in a batch (a retried stage): tasks and spans added."""
    executors = dict(a["per_executor"])
    for ex, (n, s) in b["per_executor"].items():
        m, t = executors.get(ex, [0, 0.0])
        executors[ex] = [m + n, round(t + s, 3)]
    return {**a, "tasks": a["tasks"] + b["tasks"], "span_s": round(a["span_s"] + b["span_s"], 3),
            "per_executor": executors,
            **({"partitions": a.get("partitions", []) + b.get("partitions", [])}
               if "partitions" in a or "partitions" in b else {})}


def summary(rows: list[dict], batches: Iterable[int], walls: dict[int, float]) -> dict | None:
    """Medians over ``batches`` of the breakdown ``rows``: the batch's wall time
    (``walls``, commit to commit), its jobs' span, the driver's part (wall minus jobs),
    the input and engine stages' spans, the slowest engine task and the longest wait for
    one; how many engine tasks shared an executor at most, and the executors that ran
    engine tasks, counted over the batches."""
    by = {r["batch"]: r for r in rows}
    picked = [by[b] for b in batches if b in by and walls.get(b) and by[b].get("jobs_s")]
    if not picked:
        return None

    def med(values: list[float]) -> float | None:
        return round(statistics.median(values), 3) if values else None

    engines = [r["engines"] for r in picked if "engines" in r]
    return {
        "batches": [r["batch"] for r in picked],
        "wall_s": med([walls[r["batch"]] for r in picked]),
        "jobs_s": med([r["jobs_s"] for r in picked]),
        "driver_s": med([walls[r["batch"]] - r["jobs_s"] for r in picked]),
        "input_span_s": med([r["input"]["span_s"] for r in picked if "input" in r]),
        "input_tasks_per_executor": _counts(r["input"]["per_executor"] for r in picked
                                            if "input" in r),
        "engines_span_s": med([e["span_s"] for e in engines]),
        "slowest_engine_task_s": med([max(p["s"] for p in e["partitions"]) for e in engines]),
        "longest_engine_wait_s": med([max(p["wait_s"] for p in e["partitions"])
                                      for e in engines]),
        "most_engine_tasks_on_one_executor": max(
            (max(n for n, _ in e["per_executor"].values()) for e in engines), default=None),
        "engine_tasks_per_executor": _counts(e["per_executor"] for e in engines),
        "localities": _localities(engines),
    }


def _counts(per_executor: Iterable[dict]) -> dict[str, int]:
    total: dict[str, int] = {}
    for entry in per_executor:
        for ex, (n, _) in entry.items():
            total[ex] = total.get(ex, 0) + n
    return dict(sorted(total.items()))


def _localities(engines: list[dict]) -> dict[str, int]:
    total: dict[str, int] = {}
    for e in engines:
        for p in e["partitions"]:
            total[str(p["locality"])] = total.get(str(p["locality"]), 0) + 1
    return total
