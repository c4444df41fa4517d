"""Why N emulated nodes run FSD less than N times as fast as one: each stage of a batch,
every node's CPU seconds in it, and what that makes the stage cost.

    python bench/stage_cpu.py [--nodes 1,4] [--node-cpus 0.4] [--n 4000000]
        [--batch-size 1000000] [--strategies kg,dlb-l,elb] [--out stage-cpu.json]

For each N, one ``cep bench --nodes N`` process (as ``bench_speedup.py`` runs it) with
Spark's event log on, while this process samples every node's cgroup (its CPU seconds,
``cpuacct.usage``) every 0.1 s. A batch runs two stages one after the other: the input
stage (read, derive, route, shuffle write) and the engines' stage. The event log gives
each stage's span (first task launched to last task done); the samples give each node's
CPU seconds inside it. A node capped at C cores needs at least its CPU seconds over C
for its part, so a stage lasts at least its busiest node's seconds over C
(``at_quota_max``), and would last the nodes' mean (``at_quota_mean``) if their work
were even. Against one node, a batch on N nodes then splits into:

- the ideal, one node's batch over N;
- ``cpu``: the stage's CPU on N nodes over its CPU on one (more work for the same events:
  more tasks, more payloads, the cores' caches shared by more processes);
- ``imbalance``: the busiest node over the mean (the heaviest engine; an input task
  whose events cost more);
- the rest: the batch's wall time beyond the two stages at the busiest node's quota
  (the driver, waits).

Writes ``bench/results/stage-cpu.json``; the raw ``cep bench`` files go to
``bench/results/speedup/`` as ``stage-cpu-nodesN.json``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import scale_tasks
from bench_speedup import bench_command
from common import RESULTS, ROOT, write_results

from cep.provenance import load_average

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
STAGES = ("input", "engines")
Samples = list[tuple[float, dict[str, float]]]  # (time, node -> CPU seconds so far)


class NodeSampler(threading.Thread):
    """Every emulated node's CPU seconds so far, every ``period`` s, from the cgroups the
    cluster makes (``cep.spark.cluster.cpu_quota``: ``cep-nodes-*/node-i``)."""

    def __init__(self, period: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.period, self.samples, self.stop = period, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now, usage = time.time(), {}
            for node in CPUACCT.glob("cep-nodes-*/*/cpuacct.usage"):
                try:
                    usage[node.parent.name] = int(node.read_text()) / 1e9
                except (OSError, ValueError):  # the cluster removed it meanwhile
                    continue
            if usage:
                self.samples.append((now, usage))
            self.stop.wait(self.period)


def cpu_between(samples: Samples, node: str, t0: float, t1: float,
                times: list[float] | None = None) -> float:
    """The node's CPU seconds between two times, linear between the samples.
    ``times``: the samples' times, when the caller has them (one list for many calls)."""
    times = [s[0] for s in samples] if times is None else times
    return _usage_at(samples, times, node, t1) - _usage_at(samples, times, node, t0)


def _usage_at(samples: Samples, times: list[float], node: str, t: float) -> float:
    i = min(max(bisect.bisect_left(times, t), 1), len(samples) - 1)
    (ta, a), (tb, b) = samples[i - 1], samples[i]
    ua = a.get(node, 0.0)
    ub = b.get(node, ua)  # gone from the later sample: nothing more used
    share = min(max((t - ta) / (tb - ta), 0.0), 1.0) if tb > ta else 0.0
    return ua + share * (ub - ua)


def stage_spans(events: list[dict], query: str) -> dict[tuple[int, str], tuple[float, float]]:
    """(batch, stage kind) -> (first task's launch, last task's finish) in seconds since
    the epoch, for ``query``'s jobs (kinds as :func:`scale_tasks.query_stages` has them)."""
    found = scale_tasks.query_stages(events, query)
    spans: dict[tuple[int, str], tuple[float, float]] = {}
    for stage, done in found.tasks.items():
        key = (found.stages[stage]["batch"], found.stages[stage]["kind"])
        t0 = min(t["launch"] for t in done) / 1000
        t1 = max(t["finish"] for t in done) / 1000
        old = spans.get(key, (t0, t1))
        spans[key] = (min(old[0], t0), max(old[1], t1))
    return spans


def batch_rows(spans: dict, samples: Samples, walls: dict[int, float], cpus: float
               ) -> list[dict]:
    """Per measured batch (those in ``walls``): its wall time and, per stage, its span,
    every node's CPU seconds in it and the stage at the busiest node's and the mean
    node's quota."""
    nodes = sorted({n for _, usage in samples for n in usage})
    times = [t for t, _ in samples]
    rows = []
    for batch, wall in sorted(walls.items()):
        row: dict = {"batch": batch, "wall_s": round(wall, 3)}
        for stage in STAGES:
            if (batch, stage) not in spans:
                continue
            t0, t1 = spans[(batch, stage)]
            cpu = [cpu_between(samples, n, t0, t1, times) for n in nodes]
            row[stage] = {"span_s": round(t1 - t0, 3), "node_cpu_s": [round(c, 3) for c in cpu],
                          "at_quota_max_s": round(max(cpu) / cpus, 3),
                          "at_quota_mean_s": round(statistics.fmean(cpu) / cpus, 3)}
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """Medians over the batches of each figure in :func:`batch_rows`, with each stage's
    CPU summed over the nodes."""
    def med(get) -> float:
        return round(statistics.median(get(r) for r in rows), 3)
    out = {"wall_s": med(lambda r: r["wall_s"])}
    for stage in STAGES:
        out[stage] = {
            "span_s": med(lambda r, s=stage: r[s]["span_s"]),
            "cpu_s": med(lambda r, s=stage: sum(r[s]["node_cpu_s"])),
            "at_quota_max_s": med(lambda r, s=stage: r[s]["at_quota_max_s"]),
            "at_quota_mean_s": med(lambda r, s=stage: r[s]["at_quota_mean_s"])}
    return out


def decompose(one: dict, many: dict, nodes: int) -> dict:
    """A batch on ``nodes`` nodes (``many``) against one node's (``one``), both
    :func:`summary`: the ideal, then each stage's extra CPU and imbalance, in seconds of
    the batch, and the rest."""
    out: dict = {"ideal_s": round(one["wall_s"] / nodes, 3), "wall_s": many["wall_s"],
                 "speedup": round(one["wall_s"] / many["wall_s"], 3)}
    for stage in STAGES:
        a, b = one[stage], many[stage]
        even = a["at_quota_mean_s"] / nodes  # one node's stage, shared evenly
        out[stage] = {"ideal_s": round(even, 3),
                      "cpu_ratio": round(b["cpu_s"] / a["cpu_s"], 3),
                      "cpu_extra_s": round(b["at_quota_mean_s"] - even, 3),
                      "imbalance": round(b["at_quota_max_s"] / b["at_quota_mean_s"], 3),
                      "imbalance_s": round(b["at_quota_max_s"] - b["at_quota_mean_s"], 3)}
    out["rest_s"] = round(many["wall_s"] - sum(many[s]["at_quota_max_s"] for s in STAGES), 3)
    return out


def run_point(args: argparse.Namespace, nodes: int) -> list[dict]:
    """One ``cep bench --nodes`` process, sampled; per strategy its batches and summary."""
    raw = RESULTS / "speedup" / f"{Path(args.out).stem}-nodes{nodes}.json"
    with tempfile.TemporaryDirectory(prefix="cep-eventlog-") as log_dir:
        conf = scale_tasks.event_log_conf(Path(log_dir))
        env = {**os.environ, "PYSPARK_SUBMIT_ARGS": " ".join(
            [*(f"--conf {k}={v}" for k, v in conf.items()), "pyspark-shell"])}
        command = bench_command(args, nodes, raw)
        sampler = NodeSampler()
        sampler.start()
        try:
            subprocess.run(command, check=True, cwd=ROOT, env=env)
        finally:
            sampler.stop.set()
            sampler.join()
        events = list(scale_tasks.read_events(Path(log_dir)))
    bench = json.loads(raw.read_text())
    found = scale_tasks.queries(events)
    runs = bench["results"]
    ordered = sorted(found, key=lambda q: found[q]["first_ms"])[-len(runs):]
    out = []
    for query, run in zip(ordered, runs, strict=True):
        elapsed = run["batch_elapsed_s"]  # the first batch holds the warm-up, the last the tail
        walls = {b: elapsed[b] - elapsed[b - 1] for b in range(1, len(elapsed) - 1)}
        rows = batch_rows(stage_spans(events, query), sampler.samples, walls, args.node_cpus)
        out.append({"strategy": run["strategy"], "nodes": nodes,
                    "events_per_s": run["events_per_s"], "equal_to_kg": run["equal_to_kg"],
                    "summary": summary(rows), "batches": rows})
        print(nodes, run["strategy"], json.dumps(out[-1]["summary"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,4")
    parser.add_argument("--node-cpus", type=float, default=0.4)
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--batch-size", type=int, default=1_000_000)
    parser.add_argument("--strategies", default="kg,dlb-l,elb")
    parser.add_argument("--out", default="stage-cpu.json")
    parser.set_defaults(rounds=1)  # one run per strategy and N (bench_command passes it)
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.nodes.split(",")]
    started, load = time.strftime("%Y-%m-%dT%H:%M:%S%z"), load_average()
    runs = [run for n in counts for run in run_point(args, n)]
    one = next(r for r in runs if r["nodes"] == 1 and r["strategy"] == "kg")
    for run in runs:
        if run["nodes"] > 1:
            run["against_one_node"] = decompose(one["summary"], run["summary"], run["nodes"])
            print(run["nodes"], run["strategy"], json.dumps(run["against_one_node"]))
    write_results({"bench": "stage_cpu", "started": started, "load_average_at_start": load,
                   "rules": "rules/fsd.epl", "n": args.n, "batch_size": args.batch_size,
                   "cpus_per_node": args.node_cpus, "node_counts": counts, "runs": runs},
                  args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
