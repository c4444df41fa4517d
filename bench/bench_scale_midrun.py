"""Does ``cep scale`` add throughput mid-run on the emulated cluster (issue 51)?

An FSD job (``rules/fsd.epl`` on the ``tweets`` generator, the engine-bound setup of
``bench_speedup.py``) runs on an emulated cluster of one-slot nodes of ``--node-cpus``
cores each (``cep.spark.cluster.emulated``, as ``cep bench --nodes`` starts it) with a
run directory (``--checkpoint``). The whole input is there from the start (a backlog
the job reads at its own pace, one ``--batch-size`` per batch), so a batch's events over
its wall time is the job's throughput. The job starts at ``--hi`` engines, so that
Spark's state partitions (fixed in the checkpoint at the first start) are ``--hi`` and
scaling out adds cores; the bench then writes scale requests into the run directory
exactly as ``cep scale RUN_DIR N`` does (``cep.io.scale_changes.scale``):

* ``--lo`` at once (it applies at batch 2, the first map the job writes);
* ``--hi`` once batch ``--out-after`` committed (the job applies it two batches on),
  after the cluster grew from ``--start-nodes`` (default ``--lo``) to ``--nodes`` nodes:
  the new workers join while the job runs, and the request is written once the master
  has granted the job their cores (a Spark executor on each);
* ``--lo`` once batch ``--in-after`` committed (the nodes stay: this phase shows that
  scaling in loses no event, on ``--nodes`` nodes);
* or, with ``--leave-after B`` (in place of ``--in-after``), ``--lo`` once batch B
  committed and, once a batch ran at ``--lo``, the nodes that joined leave
  (``EmulatedCluster.leave``: decommissioned as Spark does it, then stopped) while the
  job runs on: the last phase is ``--lo`` engines on ``--start-nodes`` nodes again.

So the run has a ``lo`` phase on ``--start-nodes`` nodes, a ``hi`` phase on ``--nodes``
and a ``lo`` phase again. Spark runs every stage of a batch on every executor it has, so
a cluster of 4 nodes from the start (``--start-nodes 4``) would run the input's tasks
on all 4 in the ``lo`` phase too, and only the engines' part would scale. How this is
driven: ``cep run`` has no ``--nodes`` (the emulated cluster is ``cep bench``'s), so
this script is the driver, as ``cep bench`` is: it starts the cluster
(``emulated.on_nodes``), warms its executors (``prepare.run_training_query``) and calls
``cep.run.run`` (what ``cep run`` calls) in one process. The input is a bounded
generator, not ``--follow``: the scale requests take the same path either way (the
Balancer reads the run directory's newest request at every key-map decision).

Per phase: the median events/s over its batches (a batch's events over the wall time
from the commit before it to its own; the warm-up batches 0 and 1, the batch that hands
the keys over, the first batch at the new count and the input's short tail excluded),
and the nodes' CPU over the phase (the cgroups', sampled at each commit). Per change:
the keys and bytes handed over (the run directory's ``scale/applied.json``) and the
change's extra time: the handing-over batch's and the first new batch's wall time over
their phases' median batch (the issue's target: at most one normal batch more).

The yardstick (skipped by ``--no-unscaled``): the same job run first, on the
``--start-nodes`` nodes, brought to ``--lo`` engines and never scaled again. FSD's
batches cost more as the run goes on (its windows and buckets fill), so the ``hi``
phase is also compared with that run's batches of the same numbers: the ratio the
scale-out gave the rest of the run, its change cost included or not.

Where Spark ran the tasks (``scale_tasks.py``): the session writes Spark's event log,
and per run (unscaled, scaled, KG) the file keeps per batch its jobs' span, the input
and engine stages' spans, which executor ran each engine partition and how long its
task waited for a slot (``placement``), with medians over the ``hi`` phase's measured
batches; and KG's batches themselves (``kg_batches``), so that KG started at ``--hi``
is compared with the ``hi`` phase and the unscaled run over the same batch numbers
(``kg_fixed_same_batches``: the most the scale-out can give on this cluster).

Oracle for the events: a key-grouping run at a fixed ``--hi`` engines over the same
input on the whole cluster after the scaled run (whose events equal the reference
evaluator's, ``tests/spark/test_differential.py``), compared row for row with the scaled
run's output; both must hold rows.

    python bench/bench_scale_midrun.py [--nodes 4] [--start-nodes 2] [--node-cpus 0.4]
        [--lo 2] [--hi 4]
        [--n 3480000] [--mode default] [--batch-size 120000] [--strategy dlb-l]
        [--measure-from 8] [--join-after 11] [--out-after 16] [--in-after 22]
        [--leave-after B] [--locality-wait S] [--no-unscaled] [--load events|cost]
        [--out scale_midrun.json]

Writes ``bench/results/scale_midrun.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import RESULTS, ROOT, load_average, write_results
from scale_phases import (  # re-exported: tests/test_bench.py reads them here
    WARM_UP_BATCHES,
    against_unscaled,
    batch_rows,
    began_after,
    change_costs,
    differences,
    leave_cost,
    newest_speedup,
    phase_bound,
    phases,
    ratio_of,
    ratios,
    speedup_bound,
)
from scale_tasks import event_log_conf, queries, query_between, read_events, summary, task_breakdown

from cep.io.scale_changes import ScaleError, ScaleLog, scale
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.spark.jvm.session import CLUSTER_SETTINGS
from grammar.compile import compile_file

RULES = ROOT / "rules" / "fsd.epl"


class Watcher(threading.Thread):
    """Follows the job's metrics file: samples the nodes' CPU at each new commit and
    carries out the plan's steps, ``(after_batch, action, n)``, once that batch
    committed (-1: as soon as the run directory exists): ``("join", k)`` starts k more
    nodes (in a thread of its own, so that sampling goes on) and notes when the master
    granted the job their cores; ``("scale", n)`` writes a scale request for n engines
    as ``cep scale`` writes it, once any join before it is done; ``("leave", k)``, in a
    thread of its own, waits until the last scale request applied and a batch ran at
    its count, then the k nodes that joined last leave (``EmulatedCluster.leave``)."""

    def __init__(self, metrics: Path, workdir: list[Path], cluster, nodes: int,
                 plan: list[tuple[int, str, int]], done: threading.Event) -> None:
        super().__init__(daemon=True)
        self.metrics, self.workdir, self.cluster = metrics, workdir, cluster
        self.nodes = nodes  # the most the cluster will have: samples are padded to it
        self.plan, self.done = list(plan), done
        self.node_cpu: dict[int, list[float]] = {}
        self.engines: dict[int, int] = {}  # each committed batch's engines
        self.steps: list[dict] = []
        self.joining: threading.Thread | None = None
        self.leaving: threading.Thread | None = None

    def run(self) -> None:
        seen = 0
        while not self.done.is_set():
            lines = self.metrics.read_text().splitlines() if self.metrics.exists() else []
            for line in lines[seen:]:
                entry = json.loads(line)
                batch = entry["batch"]
                self.engines[batch] = len(entry.get("rows_per_engine", []))
                self._sample(batch)
                while self.plan and batch >= self.plan[0][0]:
                    self._step(*self.plan.pop(0), batch)
            seen = len(lines)
            if self.workdir and self.plan and self.plan[0][0] < 0:
                self._step(*self.plan.pop(0), None)
            time.sleep(0.05)

    def _sample(self, batch: int) -> None:
        cpu = [c or 0.0 for c in self.cluster.node_cpu_s()]
        self.node_cpu[batch] = cpu + [0.0] * (self.nodes - len(cpu))  # nodes yet to join

    def _step(self, _after: int, action: str, n: int, batch: int | None) -> None:
        step: dict = {"after_batch": batch, "action": action, "n": n, "began": time.time()}
        self.steps.append(step)
        if action == "join":
            self.joining = threading.Thread(target=self._join, args=(n, step), daemon=True)
            self.joining.start()
            return
        if action == "leave":
            self.leaving = threading.Thread(target=self._leave, args=(n, step), daemon=True)
            self.leaving.start()
            return
        if self.joining is not None:
            self.joining.join()
        step["request"] = scale(self.workdir[0], n)
        step["requested"] = time.time()

    def _join(self, count: int, step: dict) -> None:
        self.cluster.join(count)
        step["alive"] = time.time()
        waited = wait_for_cores(self.cluster, self.cluster.nodes)
        step["granted"] = time.time() if waited is not None else None

    def _leave(self, count: int, step: dict) -> None:
        """Once the newest scale request applied and a batch committed at its count,
        ``count`` nodes leave; the step records when and how (``nodes``: per node,
        whether Spark's decommissioning drained it or it was stopped anyway)."""
        request = next(s for s in reversed(self.steps) if s["action"] == "scale")
        log = ScaleLog(self.workdir[0])
        while not self.done.is_set():
            with contextlib.suppress(ScaleError):
                at = next((c["at_batch"] for c in log.applied()
                           if c["request"] == request.get("request")), None)
                if at is not None and any(b >= at and n == request["n"]
                                          for b, n in list(self.engines.items())):
                    break
            time.sleep(0.1)
        else:
            return
        step["began"] = time.time()
        step["nodes"] = self.cluster.leave(
            count, report=lambda node: print(f"leaving: {node}", flush=True))
        step["gone"] = time.time()
        print(f"left: {step['nodes']}", flush=True)  # said even if the run fails after
        with contextlib.suppress(OSError, ValueError):
            step["alive_workers"] = sum(
                w.get("state") == "ALIVE"
                for w in self.cluster.cluster.master_state().get("workers", []))


def wait_for_cores(cluster, cores: int, timeout: float = 300.0) -> float | None:
    """Seconds until the master has granted the running application ``cores`` cores
    (its executors on the new nodes launched), None after ``timeout``."""
    started = time.time()
    while time.time() - started < timeout:
        with contextlib.suppress(OSError, ValueError):
            apps = cluster.cluster.master_state().get("activeapps", [])
            if apps and apps[0].get("cores", 0) >= cores:
                return round(time.time() - started, 2)
        time.sleep(0.25)
    return None


def input_spec(args: argparse.Namespace) -> str:
    return f"tweets:n={args.n},mode={args.mode},rate={args.rate:g}"


def output_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def watched_run(module, placed: RunConfig, args: argparse.Namespace, cluster, work: Path,
                name: str, plan: list[tuple[int, str, int]]):
    """One run of the job under ``--strategy`` with a run directory, a metrics file and
    output under ``work`` named ``name``, its ``plan`` carried out by a :class:`Watcher`;
    the run's result, the watcher (steps, nodes' CPU) and the load at its start."""
    done, workdir = threading.Event(), []
    metrics = work / f"{name}.metrics.jsonl"
    watcher = Watcher(metrics, workdir, cluster, args.nodes, plan, done)
    watcher.start()
    load = load_average()
    watcher.span = [time.time(), None]  # the run's wall span: its query in the event log
    try:
        result = run(module, dataclasses.replace(
            placed, strategy=args.strategy, checkpoint=str(work / f"{name}-run"),
            metrics_file=str(metrics), output=Output(str(work / f"{name}.jsonl"))),
            on_workdir=workdir.append)
    finally:
        done.set()
        watcher.join(5)
        watcher.span[1] = time.time()
    return result, watcher, load


def unscaled_run(module, placed: RunConfig, args: argparse.Namespace, cluster,
                 work: Path) -> dict:
    """The counterfactual: the same job on the ``--start-nodes`` nodes, brought to
    ``--lo`` engines at once as the scaled run is, and never scaled again; run first,
    before any node joins. Its batches are the scaled run's yardstick batch for batch
    (:func:`against_unscaled`)."""
    result, watcher, load = watched_run(module, placed, args, cluster, work, "unscaled",
                                        [(-1, "scale", args.lo)])
    print(f"unscaled: {args.strategy} at {args.lo} engines on {args.start_nodes} nodes: "
          f"{result.events:,} events in {result.seconds:.1f} s, load {load}", flush=True)
    metrics = work / "unscaled.metrics.jsonl"
    batches = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return {"engines": args.lo, "nodes": args.start_nodes, "events": result.events,
            "seconds": round(result.seconds, 2), "load_average": load,
            "batches": batch_rows(batches, watcher.node_cpu), "span": watcher.span,
            "lines": output_lines(work / "unscaled.jsonl")}


def measure(args: argparse.Namespace, work: Path) -> dict:
    """The scaled run, then the key-grouping run at a fixed ``--hi`` engines (on the
    whole cluster, the oracle), in one session on one emulated cluster."""
    from cep.spark.cluster.emulated import on_nodes
    from cep.spark.prepare import run_training_query

    module = compile_file(str(RULES))
    spec = input_spec(args)
    base = RunConfig((spec,), engines=args.hi, batch_size=args.batch_size, progress=False,
                     load=args.load)
    with on_nodes(base, args.start_nodes, args.node_cpus) as (placed, cluster):
        # one session for every run of the process: it must take the joining nodes' cores
        conf = cluster.room_for(args.nodes)
        if args.locality_wait is not None:
            conf["spark.locality.wait"] = args.locality_wait
        conf.update(event_log_conf(work / "eventlog"))  # where the tasks ran, per batch
        placed = dataclasses.replace(placed, spark_conf=conf)
        run_training_query(placed)
        unscaled = (unscaled_run(module, placed, args, cluster, work)
                    if args.unscaled and args.start_nodes < args.nodes else None)
        out, metrics, run_dir = (work / "scaled.jsonl", work / "scaled.metrics.jsonl",
                                 work / "scaled-run")
        plan = [(-1, "scale", args.lo), (args.out_after, "scale", args.hi)]
        if args.nodes > args.start_nodes:
            plan.insert(1, (args.join_after, "join", args.nodes - args.start_nodes))
        if args.leave_after is None:
            plan.append((args.in_after, "scale", args.lo))
        else:
            plan += [(args.leave_after, "scale", args.lo),
                     (args.leave_after, "leave", args.nodes - args.start_nodes)]
        scaled, watcher, load_scaled = watched_run(module, placed, args, cluster, work,
                                                   "scaled", plan)
        print(f"{args.strategy} {args.hi}->{args.lo}->{args.hi}->{args.lo} engines on "
              f"{args.start_nodes}->{args.nodes}->{cluster.nodes} nodes: "
              f"{scaled.events:,} events in {scaled.seconds:.1f} s, load {load_scaled}",
              flush=True)
        kg_out = work / "kg.jsonl"
        load_kg, kg_nodes, kg_span = load_average(), cluster.nodes, [time.time()]
        kg = run(module, dataclasses.replace(placed, strategy="kg", output=Output(str(kg_out))))
        kg_span.append(time.time())
        print(f"KG at {args.hi} engines on {kg_nodes} nodes: {kg.events:,} events in "
              f"{kg.seconds:.1f} s, load {load_kg}", flush=True)
    got, want = output_lines(out), output_lines(kg_out)
    changes = ScaleLog(run_dir).applied()
    batches = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    rows = batch_rows(batches, watcher.node_cpu)
    join = next((s for s in watcher.steps if s["action"] == "join"), None)
    joined = began_after(rows, batches, join.get("granted")) if join else None
    leave = next((s for s in watcher.steps if s["action"] == "leave"), None)
    left = began_after(rows, batches, leave.get("gone")) if leave else None
    starts = [c["at_batch"] for c in changes] + [b for b in (joined, left) if b is not None]
    nodes = {WARM_UP_BATCHES: args.start_nodes, **({joined: args.nodes} if joined else {}),
             **({left: args.start_nodes} if left else {})}
    spans = phases(rows, starts, nodes, args.batch_size, args.measure_from)
    costs = change_costs(rows, changes, spans)
    ratio = ratios(spans, args.lo, args.hi, args.start_nodes)
    first_lo = next((p for p in spans if p["engines"] == [args.lo]), None)
    kg_phase = phases(batch_rows(kg.metrics), [], {WARM_UP_BATCHES: kg_nodes},
                      args.batch_size, args.measure_from)[0]
    unscaled_rows = unscaled["batches"] if unscaled else []
    kg_rows = batch_rows(kg.metrics)
    at_hi = next((p for p in spans if p["engines"] == [args.hi]), None)
    runs = {"scaled": (watcher.span, rows), "kg": (kg_span, kg_rows),
            **({"unscaled": (unscaled["span"], unscaled_rows)} if unscaled else {})}
    tasks = placement(work / "eventlog", runs, at_hi["measured_batches"] if at_hi else [])
    return {
        "unscaled": unscaled and {
            **{k: v for k, v in unscaled.items() if k not in ("batches", "lines", "span")},
            "events_equal_kg": bool(want) and unscaled["lines"] == want,
            "batches": unscaled_rows},
        "against_unscaled": against_unscaled(rows, unscaled_rows, spans, changes, args.hi),
        "load_average_kg": load_kg, "load_average_scaled": load_scaled,
        # KG at a fixed --hi engines on all the nodes: its steady batches are what the
        # scaled job's hi phase would be had it started that way
        "kg_fixed": {"engines": args.hi, "nodes": kg_nodes, "events": kg.events,
                     "seconds": round(kg.seconds, 2),
                     **kg_phase},
        "steps": watcher.steps, "joined_at_batch": joined, "left_at_batch": left,
        "changes": changes, "phases": spans, "change_costs": costs,
        "leave_cost": leave_cost(rows, batches, leave, left, spans), "ratios": ratio,
        # KG at --hi from the start over the same batches as the hi phase, and over the
        # unscaled run there: what the scale-out could give at most on this cluster
        "kg_fixed_same_batches": same_batches(kg_rows, at_hi, unscaled_rows),
        "kg_batches": kg_rows,
        # where Spark ran each batch's tasks (event log): scaled, KG, unscaled
        "placement": tasks,
        "kg_fixed_over_first": ratio_of(kg_phase["events_per_s"],
                                        first_lo and first_lo["events_per_s"]),
        "bound_from_first_phase": first_lo and phase_bound(first_lo, args.node_cpus,
                                                           args.nodes),
        "events_in": scaled.events, "output_rows": len(got), "kg_rows": len(want),
        "differences": differences(got, want),
        "events_equal_kg": bool(want) and got == want,
        "batches": rows,
    }


def same_batches(kg_rows: list[dict], at_hi: dict | None, unscaled: list[dict]
                 ) -> dict | None:
    """KG's median events/s over the ``hi`` phase's measured batches, and the unscaled
    run's over the same: their ratio bounds what the scale-out can give (FSD's batches
    cost more as the run goes on, so only the same batches compare)."""
    if at_hi is None or not at_hi["measured_batches"]:
        return None
    mine = {r["batch"]: r for r in kg_rows}
    theirs = {r["batch"]: r for r in unscaled}
    picked = [b for b in at_hi["measured_batches"] if mine.get(b, {}).get("events_per_s")]
    kg = (round(statistics.median(mine[b]["events_per_s"] for b in picked), 1)
          if picked else None)
    both = [b for b in picked if theirs.get(b, {}).get("events_per_s")]
    base = (round(statistics.median(theirs[b]["events_per_s"] for b in both), 1)
            if both else None)
    return {"batches": picked, "kg_events_per_s": kg, "unscaled_events_per_s": base,
            "kg_over_unscaled": ratio_of(kg, base),
            "scaled_over_kg": ratio_of(at_hi["events_per_s"], kg)}


def placement(directory: Path, runs: dict[str, tuple[list, list[dict]]],
              batches: list[int]) -> dict:
    """Per run (its wall span and batch rows): the event log's per-batch task breakdown
    (``scale_tasks``) and its summary over ``batches`` (the hi phase's measured ones)."""
    if not directory.is_dir():
        return {}
    events = list(read_events(directory))
    found = queries(events)
    out = {}
    for name, (span, rows) in runs.items():
        query = query_between(found, span[0], span[1] or time.time())
        if query is None:
            continue
        breakdown = task_breakdown(events, query)
        walls = {r["batch"]: r["seconds"] for r in rows if r["seconds"]}
        out[name] = {"summary": summary(breakdown, batches, walls), "batches": breakdown}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="the nodes at the end")
    parser.add_argument("--start-nodes", type=int, default=None,
                        help="the nodes at the start (default --lo); the rest join "
                        "when the bench scales out")
    parser.add_argument("--node-cpus", type=float, default=0.4)
    parser.add_argument("--lo", type=int, default=2)
    parser.add_argument("--hi", type=int, default=4)
    parser.add_argument("--n", type=int, default=3_480_000)
    parser.add_argument("--mode", default="default")
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--batch-size", type=int, default=120_000)
    parser.add_argument("--strategy", default="dlb-l")
    parser.add_argument("--load", choices=("events", "cost"), default="events",
                        help="the Balancer's load of a key, as cep run --load (KG ignores it)")
    parser.add_argument("--measure-from", type=int, default=8,
                        help="the first batch a phase may measure: FSD's windows (H tweets "
                        "per key) fill over the first batches, and each batch costs more "
                        "until they are full")
    parser.add_argument("--locality-wait", default=None, metavar="SECONDS",
                        help="spark.locality.wait for the session (default cep's on a "
                        "cluster, 0s: cep.spark.jvm.session.CLUSTER_SETTINGS)")
    parser.add_argument("--join-after", type=int, default=11,
                        help="the nodes beyond --start-nodes join once this batch committed")
    parser.add_argument("--out-after", type=int, default=16,
                        help="request --hi once this batch committed")
    parser.add_argument("--in-after", type=int, default=22,
                        help="request --lo once this batch committed")
    parser.add_argument("--no-unscaled", dest="unscaled", action="store_false",
                        help="skip the counterfactual run that never scales (it runs "
                        "first, on --start-nodes nodes, and gives the same-batch ratios)")
    parser.add_argument("--leave-after", type=int, default=None, metavar="B",
                        help="instead of --in-after: request --lo once batch B committed "
                        "and, once a batch ran at --lo, the nodes that joined leave")
    parser.add_argument("--out", default="scale_midrun.json")
    args = parser.parse_args(argv)
    if args.start_nodes is None:
        args.start_nodes = args.lo
    if not 1 <= args.start_nodes <= args.nodes:
        parser.error("--start-nodes must be 1..--nodes")
    if args.strategy == "kg":  # found by running it: the request failed, the bench waited
        parser.error("a key-grouping job started at a fixed count routes by hash and "
                     "cep scale refuses it (docs/guide.md#scaling-a-running-job): give a "
                     "strategy that routes by key maps")
    if args.leave_after is not None and args.start_nodes == args.nodes:
        parser.error("--leave-after retires the nodes that joined: give --nodes above "
                     "--start-nodes")
    started = load_average()
    with tempfile.TemporaryDirectory(prefix="cep-bench-scale-") as tmp:
        figures = measure(args, Path(tmp))
    bound = speedup_bound(newest_speedup(RESULTS, args.node_cpus, (args.lo, args.hi),
                                         args.batch_size), args.lo, args.hi,
                          args.node_cpus)
    result = {"bench": "scale_midrun", "rules": "rules/fsd.epl",
              "input": input_spec(args), "nodes": args.nodes,
              "start_nodes": args.start_nodes, "node_cpus": args.node_cpus,
              "lo": args.lo, "hi": args.hi,
              "strategy": args.strategy, "load": args.load, "batch_size": args.batch_size,
              "measure_from": args.measure_from, "locality_wait": args.locality_wait
              or f"{CLUSTER_SETTINGS['spark.locality.wait']} (cep's on a cluster)",
              "join_after": args.join_after, "out_after": args.out_after,
              "in_after": args.in_after if args.leave_after is None else None,
              "leave_after": args.leave_after,
              "load_average_at_start": started, "load_average_at_end": load_average(),
              "bound": bound, **figures}
    for p in result["phases"]:
        print(f"batches {p['first_batch']}..{p['end_batch']} at {p['engines']} engines on "
              f"{p['nodes']} nodes: "
              f"{p['events_per_s']} events/s (median batch {p['batch_s']} s over "
              f"{p['measured_batches']}), node cores busy {p['node_cores_busy']}")
    for c in result["change_costs"]:
        print(f"{c['from']} -> {c['to']} at batch {c['at_batch']}: {c['keys']} keys, "
              f"{c['bytes']} bytes; extra {c.get('extra_s')} s = "
              f"{c.get('extra_over_normal')} normal batches")
    for step in result["steps"]:
        if step["action"] == "leave" and "nodes" in step:
            print(f"leave after batch {step['after_batch']}: {step['nodes']}; "
                  f"{step.get('alive_workers')} ALIVE workers after; first batch without "
                  f"the nodes {result['left_at_batch']}; cost {result['leave_cost']}")
    print(f"ratios {result['ratios']}; bound from the first phase "
          f"{result['bound_from_first_phase']}; KG at {args.hi} from the start over the "
          f"first phase {result['kg_fixed_over_first']}; "
          f"bound {bound and bound['amdahl']} (Amdahl), "
          f"{bound and bound['key_preserving']} (key-preserving)")
    print(f"against the unscaled run, same batches: {result['against_unscaled']}")
    print(f"KG at {args.hi} from the start, same batches: {result['kg_fixed_same_batches']}")
    for name, found in result["placement"].items():
        print(f"tasks of the {name} run over the hi phase's batches: {found['summary']}")
    print(f"events equal KG at {args.hi}: {result['events_equal_kg']} "
          f"({result['output_rows']:,} rows, {result['differences']} differences)")
    write_results(result, args.out)
    return 0 if result["events_equal_kg"] else 1


if __name__ == "__main__":
    sys.exit(main())
