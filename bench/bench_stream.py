"""The streaming runtime (issue 12) as a user meets it: ``cep run`` in a subprocess.

(a) ``memory``: the driver's peak memory must not grow with the input. ``cep run`` runs
    as a subprocess while a sampler reads, every 0.5 s, the resident set (``/proc``) of
    each process under it, summed per role:

    ``driver``            the Python process of ``cep run`` (plans nothing, holds no input);
    ``jvm``               its Java child: Spark's driver, and in local mode the executors'
                          JVM too (their heap and shuffle buffers are in this figure);
    ``source_planner``    the Python process that runs the input source's planning
                          (``pyspark.sql.streaming.python_streaming_source_runner``);
    ``driver_helpers``    Python processes Spark's driver starts for the query's set-up:
                          ``pyspark.sql.worker.*`` daemons (look the source up, create
                          it, plan its reads) and ``transform_with_state_driver_worker``;
    ``executor_workers``  ``pyspark.daemon pyspark.worker`` processes: executors' Python,
                          which read, route and run the engines (they should grow with a
                          batch, not with the input);
    ``other``             anything else (an embedded MongoDB; Spark's short shell commands).

    Cases: FSD over ``tweets:n=1000000`` and ``n=10000000`` (``--batch-size 200000``,
    events to a ``.jsonl`` file), and ``rules/sensor_average.epl`` (a per-sensor
    ``#length(5)`` average with HAVING) over 1M- and 10M-line JSON-lines files written
    once under /tmp (reused when present). Target: the 10M run's driver peak within
    1.2x of the 1M run's, for the Python driver and for ``driver+jvm`` (their sum, sample
    by sample; in local mode the JVM's share includes the executors' heap and shuffle
    buffers, and a JVM grows its heap lazily up to ``CEP_DRIVER_MEMORY``). Events/s is
    end to end: events in / the subprocess's wall time.
(b) ``follow``: latency under ``--follow``. A writer lands 500-reading files (a hidden
    temporary file, then ``os.replace``) every 0.1 s (5k events/s) for 60 s into the
    directory that ``cep run bench/rules/echo.epl --follow --trigger-interval 1``
    watches; echo emits one event per reading. The output file's new lines are read
    every 50 ms; an event's ``seq >> 36`` is its segment, which the run's input log
    (``CHECKPOINT/input/segments.jsonl``) maps to the file. A file's latency is the
    time its last event was seen minus its rename time. The run is stopped with
    SIGTERM, which must exit 0. Target: p99 under 3 micro-batch intervals (the median
    gap between the metrics' ``wall_time`` of consecutive batches).

The machine's load average is recorded with every part: on a shared machine the rates
and latencies move with it, the memory figures much less.

FSD's rate at the paper's scale is bench_fsd.py's question (and, an engine per node,
``cep bench --nodes``'s), not this bench's.

    python bench/bench_stream.py [--parts memory,follow] [--fsd-sizes 1000000,...]
        [--sensor-sizes ...] [--follow-seconds 60] [--out PATH]

Writes (merging into an existing file part by part) bench/results/stream.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from common import (
    ROOT,
    RULES,
    json_lines,
    load_average,
    new_lines,
    readings,
    write_jsonl,
    write_results,
)

from cep.io.inputlog import SEQ_SHIFT

DATA = Path(tempfile.gettempdir()) / "cep-bench-stream"
FSD = RULES / "fsd.epl"
SENSOR = RULES / "sensor_average.epl"
ECHO = ROOT / "bench" / "rules" / "echo.epl"
SENSORS = 10_000
SAMPLE_S = 0.5
POLL_S = 0.05
PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1 << 20
DRIVER_AND_JVM = "driver+jvm"  # the "driver": both, summed sample by sample


# --------------------------------------------------------------------------- processes

def process_table() -> dict[int, tuple[int, int, list[str]]]:
    """Every process: pid -> (parent pid, resident bytes, command line)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/statm", "rb") as fh:
                resident = int(fh.read().split()[1]) * PAGE
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().decode(errors="replace").split("\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # ended while listed
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])  # after "(comm) state"
        table[int(entry)] = (ppid, resident, cmd)
    return table


def role(pid: int, root: int, cmd: list[str]) -> str:
    """Which part of a run a process under ``root`` is (see the module docstring)."""
    line = " ".join(cmd)
    if pid == root:
        return "driver"
    if os.path.basename(cmd[0]) == "java":
        return "jvm"
    if "python_streaming_source_runner" in line:
        return "source_planner"
    if "pyspark.sql.worker" in line or "driver_worker" in line:
        return "driver_helpers"
    if "pyspark.daemon" in line or "pyspark.worker" in line:
        return "executor_workers"
    return "other"


class RssSampler(threading.Thread):
    """Samples the resident memory of ``root`` and its descendants every 0.5 s and keeps,
    per role, the peak of the role's summed RSS and its largest single process."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peak: Counter = Counter()
        self.peak_process: Counter = Counter()
        self.latest: Counter = Counter()
        self.others: set[str] = set()  # what the "other" processes were
        self.samples = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            self.sample()

    def sample(self) -> None:
        table = process_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        now: Counter = Counter()
        todo = [self.root] if self.root in table else []
        while todo:
            pid = todo.pop()
            _, rss, cmd = table[pid]
            name = role(pid, self.root, cmd)
            now[name] += rss
            if name == "other":
                self.others.add(" ".join(cmd[:3])[:120])
            self.peak_process[name] = max(self.peak_process[name], rss)
            todo.extend(children.get(pid, []))
        now[DRIVER_AND_JVM] = now["driver"] + now["jvm"]
        for name, rss in now.items():
            self.peak[name] = max(self.peak[name], rss)
        self.latest = now
        self.samples += 1

    def stop(self) -> dict:
        self.done.set()
        self.join()
        return {"peak_rss_mb": {k: round(v / MB, 1) for k, v in sorted(self.peak.items())},
                "peak_process_rss_mb": {k: round(v / MB, 1)
                                        for k, v in sorted(self.peak_process.items())},
                "other_processes": sorted(self.others), "samples": self.samples}


# --------------------------------------------------------------------------- inputs

def sensor_readings(start: int, n: int) -> pd.DataFrame:
    """``n`` readings numbered from ``start``, 1 ms apart, over SENSORS sensors."""
    return readings(np.random.default_rng(start).integers(0, SENSORS, n), seed=start,
                    start=start)


def sensor_file(n: int, chunk: int = 1_000_000) -> Path:
    """/tmp/cep-bench-stream/readings-<n>.jsonl, written once (in chunks of a million
    lines, so memory stays bounded) and reused by later runs."""
    path = DATA / f"readings-{n}.jsonl"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tmp = DATA / f".readings-{n}.jsonl.part"
    with open(tmp, "wb") as fh:
        for lo in range(0, n, chunk):
            fh.write(json_lines(sensor_readings(lo, min(chunk, n - lo))))
    os.replace(tmp, path)
    print(f"wrote {path} ({path.stat().st_size / MB:,.0f} MB) in "
          f"{time.perf_counter() - started:.1f}s", flush=True)
    return path


# --------------------------------------------------------------------------- a run

def cep_command(rule: Path, source: str, *options: str) -> list[str]:
    return [sys.executable, "-m", "cep.cli", "run", str(rule), "--input", source, *options]


def metrics_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def measured_run(name: str, command: list[str], workdir: Path) -> dict:
    """Run ``command`` (a ``cep run``) to its end, sampling memory and printing progress
    every 10 s; events/s from its metrics over the subprocess's wall time."""
    metrics = workdir / f"{name}.metrics.jsonl"
    log = workdir / f"{name}.log"
    command = [*command, "--metrics", str(metrics), "--quiet"]
    print(f"[{name}] {' '.join(command[2:])}", flush=True)
    started = time.perf_counter()
    with open(log, "wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    sampler = RssSampler(proc.pid)
    sampler.start()
    while proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        done = sum(m["events_in"] for m in metrics_lines(metrics))
        print(f"[{name}] {time.perf_counter() - started:6.0f}s {done:,} events, RSS MB "
              + " ".join(f"{k} {v / MB:.0f}" for k, v in sorted(sampler.latest.items())),
              flush=True)
    seconds = time.perf_counter() - started
    memory = sampler.stop()
    batches = metrics_lines(metrics)
    events = sum(m["events_in"] for m in batches)
    result = {"command": " ".join(command[3:]), "returncode": proc.returncode,
              "seconds": round(seconds, 2), "events": events,
              "events_out": sum(m["events_out"] for m in batches), "batches": len(batches),
              "events_per_s": round(events / seconds), **memory, "load_average": load_average()}
    if proc.returncode != 0:
        result["stderr_tail"] = log.read_text(errors="replace")[-2000:]
        print(result["stderr_tail"], file=sys.stderr)
    print(f"[{name}] {events:,} events in {seconds:.1f}s = {result['events_per_s']:,}/s, "
          f"peak RSS MB {memory['peak_rss_mb']}", flush=True)
    return result


# --------------------------------------------------------------------------- (a)

def memory_part(fsd_sizes: list[int], sensor_sizes: list[int], batch_size: int,
                extra: list[str], workdir: Path) -> dict:
    cases: dict[str, dict] = {}
    for n in fsd_sizes:
        cases[f"fsd-{n}"] = measured_run(f"fsd-{n}", cep_command(
            FSD, f"tweets:n={n}", "--batch-size", str(batch_size),
            "--output", str(workdir / f"fsd-{n}.jsonl"), *extra), workdir)
        (workdir / f"fsd-{n}.jsonl").unlink(missing_ok=True)
    for n in sensor_sizes:
        cases[f"sensor-{n}"] = measured_run(f"sensor-{n}", cep_command(
            SENSOR, str(sensor_file(n)), "--batch-size", str(batch_size),
            "--output", str(workdir / f"sensor-{n}.jsonl"), *extra), workdir)
        (workdir / f"sensor-{n}.jsonl").unlink(missing_ok=True)
    growth = {}
    for rule, sizes in (("fsd", fsd_sizes), ("sensor", sensor_sizes)):
        if len(sizes) < 2:
            continue
        small = cases[f"{rule}-{min(sizes)}"]["peak_rss_mb"]
        large = cases[f"{rule}-{max(sizes)}"]["peak_rss_mb"]
        ratios = {k: round(large[k] / small[k], 3) for k in large if small.get(k)}
        growth[f"{rule}-{max(sizes)}-over-{min(sizes)}"] = {
            **ratios, "target_driver_within_1_2x": ratios.get("driver", 99) <= 1.2,
            "target_driver_and_jvm_within_1_2x": ratios.get(DRIVER_AND_JVM, 99) <= 1.2}
    return {"batch_size": batch_size, "cases": cases, "growth": growth}


# --------------------------------------------------------------------------- (b)

class OutputWatcher(threading.Thread):
    """Reads the output file's new lines every 50 ms and notes, per input file, when its
    ``expected``-th event was seen (the file's last: echo emits one per reading)."""

    SEQ = re.compile(rb'"seq":(\d+)')

    def __init__(self, output: Path, segments: Path, expected: int) -> None:
        super().__init__(daemon=True)
        self.output = output
        self.segments = segments
        self.expected = expected
        self.paths: dict[int, str] = {}  # segment ordinal -> file name
        self.seen: Counter = Counter()  # file name -> events seen
        self.complete: dict[str, float] = {}  # file name -> when its last event was seen
        self.done = threading.Event()

    def run(self) -> None:
        for text, now in new_lines(self.output, self.done, POLL_S):
            seqs = np.array(self.SEQ.findall(text), dtype=np.int64)
            if not len(seqs):
                continue
            ordinals, counts = np.unique(seqs >> SEQ_SHIFT, return_counts=True)
            if any(int(o) not in self.paths for o in ordinals):
                self._read_segments()
            for ordinal, count in zip(ordinals.tolist(), counts.tolist(), strict=True):
                name = self.paths[ordinal]
                self.seen[name] += count
                if self.seen[name] >= self.expected and name not in self.complete:
                    self.complete[name] = now

    def _read_segments(self) -> None:
        for line in self.segments.read_text().splitlines():
            segment = json.loads(line)
            self.paths[segment["ordinal"]] = os.path.basename(segment["path"])


def land(folder: Path, name: str, frame: pd.DataFrame) -> float:
    """Write a file whole and rename it into the watched directory; the rename's time."""
    write_jsonl(frame, folder / name)
    return time.time()


def wait_for(predicate, proc: subprocess.Popen, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while not predicate():
        if proc.poll() is not None:
            raise RuntimeError(f"cep run ended (exit {proc.returncode}) waiting for {what}")
        if time.time() > deadline:
            raise RuntimeError(f"no {what} after {seconds:.0f}s")
        time.sleep(0.2)


def follow_part(seconds: float, rate: int, file_events: int, trigger_s: float,
                extra: list[str], workdir: Path) -> dict:
    folder, checkpoint = workdir / "follow-in", workdir / "follow-run"
    output, metrics = workdir / "follow.jsonl", workdir / "follow.metrics.jsonl"
    folder.mkdir()
    period = file_events / rate
    files = round(seconds / period)
    landed = {"warm-000000.jsonl": land(folder, "warm-000000.jsonl",
                                        sensor_readings(0, file_events))}
    command = [*cep_command(ECHO, str(folder), "--follow", "--trigger-interval",
                            str(trigger_s), "--checkpoint", str(checkpoint),
                            "--output", str(output), "--metrics", str(metrics), "--quiet"),
               *extra]
    print(f"[follow] {' '.join(command[3:])}", flush=True)
    with open(workdir / "follow.log", "wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    sampler = RssSampler(proc.pid)
    sampler.start()
    watcher = OutputWatcher(output, checkpoint / "input" / "segments.jsonl", file_events)
    watcher.start()
    try:
        wait_for(lambda: "warm-000000.jsonl" in watcher.complete, proc, 900,
                 "output of the warm-up file")
        print(f"[follow] running; landing {files} files of {file_events} events every "
              f"{period:.3f}s ({rate:,} events/s)", flush=True)
        steady_start = time.time()
        for i in range(files):
            time.sleep(max(0.0, steady_start + i * period - time.time()))
            name = f"f-{i:06d}.jsonl"
            landed[name] = land(folder, name, sensor_readings((i + 1) * file_events,
                                                              file_events))
            if i % round(10 / period) == 0:
                print(f"[follow] {i}/{files} files landed, {len(watcher.complete) - 1} "
                      f"complete in the output", flush=True)
        wait_for(lambda: len(watcher.complete) == len(landed), proc, 120,
                 "output of every landed file")
        steady_end = time.time()
    finally:
        proc.send_signal(signal.SIGTERM)
        returncode = proc.wait(timeout=300)
        watcher.done.set()
        watcher.join()
        memory = sampler.stop()
    latency = np.array([watcher.complete[n] - t for n, t in landed.items()
                        if n.startswith("f-")])
    walls = sorted(m["wall_time"] for m in metrics_lines(metrics)
                   if steady_start <= m["wall_time"] <= steady_end)
    interval = statistics.median(np.diff(walls)) if len(walls) > 1 else None
    p50, p99 = (float(np.percentile(latency, q)) for q in (50, 99))
    times = sorted(t for n, t in landed.items() if n.startswith("f-"))
    landed_rate = (len(times) - 1) * file_events / (times[-1] - times[0])  # as achieved
    result = {
        "rate_events_per_s": rate, "landed_events_per_s": round(landed_rate),
        "file_events": file_events, "files": files,
        "seconds": seconds, "trigger_interval_s": trigger_s,
        "latency_p50_s": round(p50, 3), "latency_p99_s": round(p99, 3),
        "latency_max_s": round(float(latency.max()), 3),
        "median_batch_interval_s": round(interval, 3) if interval else None,
        "batches_in_window": len(walls),
        "p99_in_batch_intervals": round(p99 / interval, 2) if interval else None,
        "target_p99_under_3_intervals": bool(interval and p99 < 3 * interval),
        "sigterm_returncode": returncode, **memory, "load_average": load_average(),
    }
    if returncode != 0:
        result["stderr_tail"] = (workdir / "follow.log").read_text(errors="replace")[-2000:]
    print(f"[follow] latency p50 {p50:.2f}s p99 {p99:.2f}s, median batch interval "
          f"{result['median_batch_interval_s']}s, SIGTERM exit {returncode}", flush=True)
    return result


# --------------------------------------------------------------------------- report

def print_table(results: dict) -> None:
    for key in ("memory", "memory-cluster"):
        if key in results:
            print(f"\n{key}:")
            print_memory(results[key])
    print_follow(results)


def print_memory(memory: dict) -> None:
    if memory:
        roles = sorted({r for c in memory["cases"].values() for r in c["peak_rss_mb"]})
        print(f"\n{'case':22s} {'events':>11s} {'s':>8s} {'ev/s':>8s}  peak RSS MB: "
              + " ".join(roles))
        for name, case in memory["cases"].items():
            print(f"{name:22s} {case['events']:>11,} {case['seconds']:>8.1f} "
                  f"{case['events_per_s']:>8,}  "
                  + " ".join(f"{case['peak_rss_mb'].get(r, 0):.0f}" for r in roles))
        for name, ratios in memory["growth"].items():
            print(f"  {name}: {ratios}")


def print_follow(results: dict) -> None:
    follow = results.get("follow")
    if follow:
        print(f"\nfollow at {follow['rate_events_per_s']:,} ev/s: latency p50 "
              f"{follow['latency_p50_s']}s p99 {follow['latency_p99_s']}s, median batch "
              f"interval {follow['median_batch_interval_s']}s "
              f"(p99 = {follow['p99_in_batch_intervals']} intervals), SIGTERM exit "
              f"{follow['sigterm_returncode']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="memory,follow")
    parser.add_argument("--fsd-sizes", default="1000000,10000000")
    parser.add_argument("--sensor-sizes", default="1000000,10000000")
    parser.add_argument("--batch-size", type=int, default=200_000,
                        help="events per micro-batch of the memory cases")
    parser.add_argument("--follow-seconds", type=float, default=60.0)
    parser.add_argument("--follow-rate", type=int, default=5_000, help="events/s landed")
    parser.add_argument("--file-events", type=int, default=500)
    parser.add_argument("--trigger-interval", type=float, default=1.0)
    parser.add_argument("--master", default=None, help="Spark master (cep's default if unset)")
    parser.add_argument("--cluster", action="store_true",
                        help="run on a standalone master with two 1-core workers started on "
                        "127.0.0.1, so the executors are processes of their own and the "
                        "driver's JVM is measured alone (results keyed 'memory-cluster', …)")
    parser.add_argument("--out", default="stream.json")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    with contextlib.ExitStack() as stack:
        if args.cluster:
            from cep.spark.cluster.standalone import LocalStandaloneCluster

            cluster = stack.enter_context(LocalStandaloneCluster())
            args.master = cluster.master_url
            os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # executors call the driver back here
        run_parts(args, parts)


def run_parts(args: argparse.Namespace, parts: list[str]) -> None:
    extra = ["--master", args.master] if args.master else []
    results = {"cep_driver_memory": os.environ.get("CEP_DRIVER_MEMORY", "4g (default)"),
               "master": args.master or "local[*] (cep's default)"}
    print(f"load average at start: {load_average()} ({os.cpu_count()} CPUs)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        workdir = Path(tmp)
        for part in parts:
            started_load = load_average()
            if part == "memory":
                result = memory_part(_sizes(args.fsd_sizes), _sizes(args.sensor_sizes),
                                     args.batch_size, extra, workdir)
            elif part == "follow":
                result = follow_part(args.follow_seconds, args.follow_rate,
                                     args.file_events, args.trigger_interval, extra, workdir)
            else:
                raise SystemExit(f"unknown part {part!r}: memory or follow")
            key = f"{part}-cluster" if args.cluster else part
            results[key] = {**result, "load_average_at_start": started_load,
                             "load_average_at_end": load_average()}
            out = write_results(results, args.out, merge=True)  # each part as it ends
    print_table(json.loads(out.read_text()))


def _sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


if __name__ == "__main__":
    main()
