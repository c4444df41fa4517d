"""Does an executor's JVM heap stay bounded over a long FSD run on the emulated cluster?

Issue 51: runs of ``bench_scale_midrun.py`` with a longer input (33 batches of 120,000
tweets) lost their executors at batch 30 to exit code 52 (``OutOfMemoryError``) on the
emulated cluster's 1 GB executor heaps. This bench runs FSD (``rules/fsd.epl`` on the
``tweets`` generator) at a fixed ``--engines`` on ``--nodes`` emulated nodes of
``--node-cpus`` cores, as ``cep bench --nodes`` does, and follows every executor's heap
while it runs: ``jstat -gc`` every ``--every`` seconds, summed per batch (from the commit
before it to its own) as the most heap used and the most old generation used (and the
resident memory of the JVM and of its Python workers, where the engines live), with the
engines' state blob bytes the batch wrote (the metrics' ``state_bytes``, summed over
engines, and how many were bases). ``--gc-log`` adds the JVM's GC log per executor and a
heap dump on ``OutOfMemoryError`` (under ``--keep``, with the executors' stderr).

Oracle: none for the events (the differential tests are); this bench measures memory.
A run that ends reads ``completed: true``; one that dies keeps the executors' stderr.

    python bench/bench_executor_heap.py [--nodes 4] [--node-cpus 0.4] [--engines 4]
        [--n 3960000] [--batch-size 120000] [--strategy kg] [--every 1]
        [--gc-log] [--keep DIR] [--side TEXT] [--out executor_heap.json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT, load_average, process_table, root_of, write_results

from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_file

RULES = ROOT / "rules" / "fsd.epl"
EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"
# per executor and batch, the most of: heap used, old generation used, the JVM's
# resident memory, its Python workers' resident memory (MB)
PEAKS = ("heap", "old", "rss", "python")


def executors(root: Path) -> dict[int, str]:
    """The cluster's executor JVMs: pid -> its work directory's ``app-*/N`` tail (their
    working directory is under the cluster's root, which tells ours from other runs')."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if EXECUTOR_CLASS not in (entry / "cmdline").read_bytes().decode(errors="replace"):
                continue
            cwd = Path(os.readlink(entry / "cwd"))
            if root in cwd.parents:
                found[int(entry.name)] = str(cwd.relative_to(root))
    return found


def heap_mb(pid: int) -> dict[str, float] | None:
    """``jstat -gc``'s used heap (survivors, eden, old) and old generation in MB."""
    # a JVM that starts or ends while it is read answers nothing or half a table
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError, IndexError,
                             KeyError):
        out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True,
                             timeout=10).stdout.split("\n")
        row = dict(zip(out[0].split(), out[1].split(), strict=False))  # "-": none
        used = sum(float(row[k]) for k in ("S0U", "S1U", "EU", "OU"))
        return {"heap": round(used / 1024, 1), "old": round(float(row["OU"]) / 1024, 1),
                "full_gcs": int(row["FGC"])}
    return None


def rss_mb(pid: int) -> float:
    """A process's resident memory in MB (0 if it ended)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return 0.0


def python_rss_mb(execs: dict[int, str]) -> dict[int, float]:
    """Per executor, the resident memory of the processes it forked (its Python
    workers: where the engines' state lives)."""
    table = process_table()
    out = dict.fromkeys(execs, 0.0)
    for pid in table:
        root = root_of(table[pid][1], table, execs) if pid not in execs else None
        if root is not None:
            out[root] += rss_mb(pid)
    return out


class Sampler(threading.Thread):
    """Samples every executor's heap until ``done``; ``samples``: (time, executor, heap
    with the JVM's resident memory and its Python workers')."""

    def __init__(self, root: Path, every: float, done: threading.Event) -> None:
        super().__init__(daemon=True)
        self.root, self.every, self.done = root, every, done
        self.samples: list[tuple[float, str, dict]] = []

    def run(self) -> None:
        while not self.done.is_set():
            execs = executors(self.root)
            python = python_rss_mb(execs)
            for pid, name in execs.items():
                heap = heap_mb(pid)
                if heap is not None:
                    heap.update(rss=round(rss_mb(pid), 1), python=round(python[pid], 1))
                    self.samples.append((time.time(), name, heap))
            self.done.wait(self.every)


def per_batch(metrics: list[dict], samples: list[tuple[float, str, dict]]) -> list[dict]:
    """Per batch: its events, state bytes written, bases, and per executor the most heap
    and old generation used from the commit before it to its own."""
    rows, before = [], float("-inf")
    for m in sorted(metrics, key=lambda m: m["batch"]):
        inside = [(name, heap) for t, name, heap in samples if before < t <= m["wall_time"]]
        peak: dict[str, dict] = {}
        for name, heap in inside:
            top = peak.setdefault(name, dict.fromkeys(PEAKS, 0.0))
            for field in PEAKS:
                top[field] = max(top[field], heap[field])
        rows.append({"batch": m["batch"], "events": m.get("events_in", 0),
                     "state_bytes": m.get("state_bytes"), "saved": m.get("state_saved"),
                     "executors_mb": dict(sorted(peak.items()))})
        before = m["wall_time"]
    return rows


FULL_GC = re.compile(r"Pause Full .*?(\d+)M->(\d+)M\((\d+)M\)")


def gc_summary(root: Path) -> dict[str, dict]:
    """Per executor, from its GC log (``--gc-log``): its full collections and the most
    heap still live after one (what the executor needed at once, which a 1 s sample
    can miss), in MB."""
    out = {}
    for path in sorted(root.glob("work-*/app-*/*/gc.log")):
        fulls = [tuple(map(int, m.groups())) for m in FULL_GC.finditer(path.read_text())]
        out[str(path.parent.relative_to(root))] = {
            "full_gcs": len(fulls), "most_live_after_full_gc_mb": max(
                (after for _before, after, _size in fulls), default=None)}
    return out


def keep_logs(root: Path, keep: Path) -> None:
    """Copy the executors' stderr, GC logs and heap dumps from the cluster's work dirs."""
    for path in root.glob("work-*/app-*/*/*"):
        if path.name == "stderr" or path.suffix in {".log", ".hprof"}:
            target = keep / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def measure(args: argparse.Namespace, work: Path) -> dict:
    from cep.spark.cluster.emulated import on_nodes
    from cep.spark.prepare import run_training_query

    module = compile_file(str(RULES))
    spec = f"tweets:n={args.n},mode={args.mode},rate=1000"
    base = RunConfig((spec,), engines=args.engines, batch_size=args.batch_size,
                     progress=False, strategy=args.strategy)
    with on_nodes(base, args.nodes, args.node_cpus) as (placed, cluster):
        conf = dict(placed.spark_conf)
        if args.gc_log:  # relative paths land in each executor's work directory
            conf["spark.executor.extraJavaOptions"] += (
                " -Xlog:gc:file=gc.log -XX:+HeapDumpOnOutOfMemoryError")
        placed = dataclasses.replace(placed, spark_conf=conf)
        run_training_query(placed)
        done = threading.Event()
        sampler = Sampler(cluster.cluster.root, args.every, done)
        sampler.start()
        metrics = work / "metrics.jsonl"
        load, error = load_average(), None
        started = time.time()
        try:
            result = run(module, dataclasses.replace(
                placed, metrics_file=str(metrics), output=Output(str(work / "out.jsonl"))))
        except Exception as err:  # the failure is the measurement
            result, error = None, f"{type(err).__name__}: {str(err)[:2000]}"
        finally:
            done.set()
            sampler.join(10)
            gc = gc_summary(cluster.cluster.root)
            if args.keep:
                keep_logs(cluster.cluster.root, Path(args.keep))
    batches = [json.loads(line) for line in metrics.read_text().splitlines()
               if line.strip()] if metrics.exists() else []
    batches = [b for b in batches if "batch" in b]
    rows = per_batch(batches, sampler.samples)
    peak = {}
    for row in rows:
        for name, top in row["executors_mb"].items():
            peak[name] = max(peak.get(name, 0.0), top["heap"])
    return {"load_average_run": load, "seconds": round(time.time() - started, 1),
            "completed": result is not None, "error": error,
            "events_in": result.events if result else None,
            "batches_committed": len(rows), "peak_heap_mb": peak, "gc_log": gc,
            "batches": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--node-cpus", type=float, default=0.4)
    parser.add_argument("--engines", type=int, default=4)
    parser.add_argument("--n", type=int, default=3_960_000)
    parser.add_argument("--mode", default="default")
    parser.add_argument("--batch-size", type=int, default=120_000)
    parser.add_argument("--strategy", default="kg")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--gc-log", action="store_true",
                        help="GC logs and a heap dump on OutOfMemoryError per executor")
    parser.add_argument("--keep", default=None, metavar="DIR",
                        help="copy the executors' stderr, GC logs and dumps here")
    parser.add_argument("--side", default=None,
                        help="what the code under test is (a commit, a change), recorded")
    parser.add_argument("--out", default="executor_heap.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cep-bench-heap-") as tmp:
        figures = measure(args, Path(tmp))
    result = {"bench": "executor_heap", "side": args.side, "rules": "rules/fsd.epl",
              "nodes": args.nodes,
              "node_cpus": args.node_cpus, "engines": args.engines, "n": args.n,
              "batch_size": args.batch_size, "strategy": args.strategy, **figures}
    for row in result["batches"]:
        heaps = " ".join("/".join(f"{top[field]:.0f}" for field in PEAKS)
                         for top in row["executors_mb"].values())
        print(f"batch {row['batch']:3d} state {row['state_bytes']} {row['saved']} "
              f"MB {'/'.join(PEAKS)} per executor {heaps}")
    print(f"GC logs: {result['gc_log']}")
    print(f"completed {result['completed']} after {result['batches_committed']} batches, "
          f"{result['seconds']} s, load {result['load_average_run']}; error {result['error']}")
    write_results(result, args.out)
    return 0 if result["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
