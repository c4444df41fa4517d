"""Spark's own figures of bench_spark.py's queries: progress events and event-log stages.

A ``StreamingQueryListener`` collects every query's progress (``durationMs``, the state
operators' commit time) by run id; with ``--stages`` Spark's event log gives each
micro-batch's stages (operators, tasks, wall time, task and SQL timing metrics). Both are
summarised as medians over the steady batches (all but the first).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path


def progress_listener(spark):
    """Collect every query's progress (JSON dicts) by run id, and the order queries start."""
    from pyspark.sql.streaming import StreamingQueryListener

    class Collect(StreamingQueryListener):
        def __init__(self) -> None:
            self.started: list[str] = []
            self.query_ids: dict[str, str] = {}  # run id → query id
            self.terminated: set[str] = set()
            self.progress: dict[str, list[dict]] = {}
            self.lock = threading.Lock()

        def onQueryStarted(self, event) -> None:
            with self.lock:
                self.started.append(str(event.runId))
                self.query_ids[str(event.runId)] = str(event.id)

        def onQueryProgress(self, event) -> None:
            with self.lock:
                p = json.loads(event.progress.json)
                self.progress.setdefault(p["runId"], []).append(p)

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            with self.lock:
                self.terminated.add(str(event.runId))

    listener = Collect()
    spark.streams.addListener(listener)
    return listener


def take_progress(listener, since: int) -> tuple[list[dict], str | None]:
    """Progress of the first query started after ``since`` queries had started. The
    listener bus is ordered and asynchronous: wait for that query's termination event,
    which comes after all its progress events. Also returns the query's id."""
    deadline = time.time() + 30
    run_id = None
    while time.time() < deadline:
        with listener.lock:
            if len(listener.started) > since:
                run_id = listener.started[since]
                if run_id in listener.terminated:
                    break
        time.sleep(0.05)
    with listener.lock:
        got = list(listener.progress.get(run_id, [])) if run_id else []
    out = []
    for p in got:
        state = p.get("stateOperators") or [{}]
        out.append({
            "batch": p["batchId"], "rows_in": p["numInputRows"],
            "duration_ms": p["durationMs"],
            "state_commit_ms": sum(s.get("commitTimeMs", 0) for s in state),
            "state_rows_total": sum(s.get("numRowsTotal", 0) for s in state),
            "state_memory_bytes": sum(s.get("memoryUsedBytes", 0) for s in state),
        })
    return out, listener.query_ids.get(run_id) if run_id else None


def stage_breakdown(directory: Path, query_id: str) -> list[dict]:
    """Per micro-batch of one query, its Spark stages from the event log: operators,
    tasks, wall time, summed task run/CPU/GC time and the SQL timing metrics (ms)."""
    jobs: dict[int, int] = {}  # stage id → batch id
    stages: dict[int, dict] = {}
    for path in (p for p in directory.rglob("*") if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                if props.get("sql.streaming.queryId") != query_id:
                    continue
                batch = int(props.get("streaming.sql.batchId", -1))
                for stage_id in event.get("Stage IDs", []):
                    jobs[stage_id] = batch
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                stages[info["Stage ID"]] = info
    rows = []
    for stage_id in sorted(jobs):
        info = stages.get(stage_id)
        if info is None or "Submission Time" not in info:
            continue  # skipped stage (its shuffle output was reused)
        ops = sorted({json.loads(r["Scope"])["name"] for r in info.get("RDD Info", [])
                      if r.get("Scope")})
        metrics: dict[str, float] = {}
        for acc in info.get("Accumulables", []):
            name = acc.get("Name", "")
            try:
                value = float(acc.get("Value"))
            except (TypeError, ValueError):
                continue
            if name in ("internal.metrics.executorRunTime", "internal.metrics.jvmGCTime",
                        "internal.metrics.executorDeserializeTime"):
                metrics[name.rsplit(".", 1)[1] + "_ms"] = value
            elif name == "internal.metrics.executorCpuTime":
                metrics["executorCpuTime_ms"] = round(value / 1e6, 1)
            elif name == "internal.metrics.shuffle.write.writeTime":
                metrics["shuffleWriteTime_ms"] = round(value / 1e6, 1)
            elif not name.startswith("internal.") and ("time" in name or "duration" in name):
                metrics[name] = value
        rows.append({"batch": jobs[stage_id], "stage": stage_id, "operators": ops,
                     "tasks": info.get("Number of Tasks"),
                     "wall_ms": info["Completion Time"] - info["Submission Time"],
                     **metrics})
    return rows


def stage_summary(stages: list[dict]) -> list[dict]:
    """Median over steady batches (all but the first) of each stage's figures, stages
    told apart by their operators."""
    if not stages:
        return []
    first = min(st["batch"] for st in stages)
    steady = [st for st in stages if st["batch"] > first] or stages
    groups: dict[str, list[dict]] = {}
    for st in steady:
        groups.setdefault(",".join(st["operators"]), []).append(st)
    out = []
    for ops, rows in groups.items():
        names = sorted({k for r in rows for k in r} - {"batch", "stage", "operators"})
        med = {k: statistics.median(r.get(k, 0) or 0 for r in rows) for k in names}
        out.append({"operators": ops, "stages_per_batch": len(rows) / len({
            r["batch"] for r in rows}), **med})
    return out


def spark_overhead(progress: list[dict]) -> dict:
    """Median over steady batches of Spark's per-batch durations (ms)."""
    steady = progress[1:] or progress
    if not steady:
        return {}
    keys = sorted({k for p in steady for k in p["duration_ms"]})
    med = {k: statistics.median(p["duration_ms"].get(k, 0) for p in steady) for k in keys}
    med["state_commit_ms"] = statistics.median(p["state_commit_ms"] for p in steady)
    return med
