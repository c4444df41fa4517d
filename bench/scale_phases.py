"""What a scaled run's batches say (``bench_scale_midrun.py``): one row per batch, the
run's phases between its scale changes and node joins or leaves, each change's extra
time, the throughput ratios between phases and against the unscaled run batch for
batch, and the bounds. Pure functions of the metrics and the bench's records, split
from the bench that drives the cluster so that each stays small; ``tests/test_bench.py``
checks them on hand-built batches.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from common import ROOT

WARM_UP_BATCHES = 2  # maps 0 and 1: the start's count, and the session's first batches


def batch_rows(metrics: list[dict], node_cpu: dict[int, list[float]] | None = None
               ) -> list[dict]:
    """One row per batch, in order: its engines, events, wall seconds from the commit
    before it (None for the first), events/s, and the nodes' CPU seconds between the
    two commits where the cgroups were sampled at both (``node_cpu``: batch -> each
    node's CPU seconds read when the bench saw that batch's metrics)."""
    rows, before = [], None
    for m in sorted(metrics, key=lambda m: m["batch"]):
        seconds = m["wall_time"] - before["wall_time"] if before is not None else None
        cpu = None
        if node_cpu and before is not None and {m["batch"], before["batch"]} <= node_cpu.keys():
            cpu = [round(b - a, 3) for a, b in zip(node_cpu[before["batch"]],
                                                   node_cpu[m["batch"]], strict=True)]
        rows.append({"batch": m["batch"], "engines": len(m.get("rows_per_engine", [])),
                     "events": m.get("events_in", 0),
                     "seconds": round(seconds, 3) if seconds is not None else None,
                     "events_per_s": round(m.get("events_in", 0) / seconds, 1)
                     if seconds else None,
                     "rstd": m.get("rstd"), "keys_moved": m.get("keys_moved", 0),
                     "engine_cpu_s": m.get("cpu_s_per_engine"),
                     "engine_busy_s": m.get("busy_s_per_engine"),
                     # where each engine came from: resident in its worker, caught up,
                     # rebuilt from the state store (a task on another worker)
                     "restored": m.get("keys_restored"), "stage_s": m.get("stage_s"),
                     # the driver's sink: the batch's job (collect), then its hooks
                     # (the Balancer), delivery and metrics after it
                     "sink_s": m.get("sink_s"), "write_s": m.get("write_s"),
                     # the engines' state log: blobs written as bases and as deltas
                     "state_saved": m.get("state_saved"),
                     # the Balancer's fit of the row stages' cost per key and per event
                     **({"row_cost_s": m["row_cost_s"]} if "row_cost_s" in m else {}),
                     "node_cpu_s": cpu})
        before = m
    return rows


def began_after(rows: list[dict], metrics: list[dict], moment: float | None) -> int | None:
    """The first batch that began (at the commit before it) at ``moment`` (seconds since
    the epoch) or later: once the joining nodes' cores were granted to the job, or once
    the leaving nodes were gone."""
    if moment is None:
        return None
    commits = {m["batch"]: m["wall_time"] for m in metrics}
    return next((r["batch"] for r in rows
                 if commits.get(r["batch"] - 1, float("-inf")) >= moment), None)


def phases(rows: list[dict], starts: list[int], nodes: dict[int, int],
           batch_size: int, measure_from: int = WARM_UP_BATCHES) -> list[dict]:
    """The run's phases and the batches each one measures. A phase begins at each of
    ``starts`` (the scale changes' ``at_batch``, the batch the joined nodes' cores were
    there for) and at the first batch after the warm-up; ``nodes`` maps a phase's first
    batch to the cluster's nodes from then on. A phase measures its batches except its
    first (it adopts moved keys, or its new nodes warm up), its last before the next
    phase (it hands keys over, or nodes join during it), the batches before
    ``measure_from`` (the warm-up; FSD's windows filling), and batches of fewer than
    ``batch_size`` events (the input's tail, the empty last batch)."""
    bounds = sorted({WARM_UP_BATCHES, *[s for s in starts if s > WARM_UP_BATCHES]})
    out, count = [], None
    for i, first in enumerate(bounds):
        end = bounds[i + 1] if i + 1 < len(bounds) else None
        count = nodes.get(first, count)
        inside = [r for r in rows if r["batch"] >= first and (end is None or r["batch"] < end)]
        measured = [r for r in inside
                    if not (first in starts and r["batch"] == first)
                    and not (end is not None and r["batch"] == end - 1)
                    and r["seconds"] and r["events"] >= batch_size
                    and r["batch"] >= measure_from]
        out.append({"first_batch": first, "end_batch": end,
                    "engines": sorted({r["engines"] for r in inside}), "nodes": count,
                    "measured_batches": [r["batch"] for r in measured],
                    **phase_figures(measured)})
    return out


def phase_figures(measured: list[dict]) -> dict:
    """A phase's median events/s and batch seconds over its measured batches, and its
    nodes' CPU per second of wall time (how many cores of the nodes it kept busy)."""
    if not measured:
        return {"events_per_s": None, "batch_s": None, "node_cores_busy": None}
    wall = sum(r["seconds"] for r in measured)
    cpus = [r["node_cpu_s"] for r in measured if r["node_cpu_s"] is not None]
    busy = ([round(sum(col) / wall, 3) for col in zip(*cpus, strict=True)]
            if cpus and len(cpus) == len(measured) else None)
    return {"events_per_s": round(statistics.median(r["events_per_s"] for r in measured), 1),
            "batch_s": round(statistics.median(r["seconds"] for r in measured), 3),
            "node_cores_busy": busy}


def change_costs(rows: list[dict], changes: list[dict], spans: list[dict]) -> list[dict]:
    """Each change's extra wall time: the batch that hands the keys over (``at - 1``)
    against its phase's median batch, plus the first batch at the new count (``at``)
    against the new phase's, and that extra over the shorter of the two medians (the
    issue's target: at most 1, one normal batch)."""
    by_batch = {r["batch"]: r for r in rows}
    phase_at = {p["first_batch"]: p for p in spans}
    out = []
    for c in sorted(changes, key=lambda c: c["at_batch"]):
        at = c["at_batch"]
        after = phase_at.get(at)
        before = next((p for p in reversed(spans) if p["first_batch"] < at), None)
        handing, first = by_batch.get(at - 1), by_batch.get(at)
        entry = {"at_batch": at, "from": c["from"], "to": c["to"], "keys": c.get("keys"),
                 "bytes": c.get("bytes"),
                 "handing_over_s": handing and handing["seconds"],
                 "first_new_s": first and first["seconds"]}
        if (before and after and before["batch_s"] and after["batch_s"]
                and handing and first and handing["seconds"] and first["seconds"]):
            extra = (handing["seconds"] - before["batch_s"]) + (first["seconds"] - after["batch_s"])
            normal = min(before["batch_s"], after["batch_s"])
            entry.update(extra_s=round(extra, 3), normal_batch_s=normal,
                         extra_over_normal=round(extra / normal, 3))
        out.append(entry)
    return out


def leave_cost(rows: list[dict], metrics: list[dict], step: dict | None,
               left: int | None, spans: list[dict]) -> dict | None:
    """What the nodes' leaving cost: the batches that committed after it began up to
    the first batch after they were gone (``left``, which takes their stateful
    partitions over from the checkpoint), their wall time over the median batch of the
    phase after it, and that extra in normal batches."""
    if step is None or left is None:
        return None
    commits = {m["batch"]: m["wall_time"] for m in metrics}
    during = [r for r in rows if commits.get(r["batch"], 0.0) > step["began"]
              and r["batch"] <= left and r["seconds"]]
    after = next((p for p in spans if p["first_batch"] == left), None)
    entry = {"batches": [r["batch"] for r in during],
             "seconds": [r["seconds"] for r in during],
             "restored": [r["restored"] for r in during]}
    if after and after["batch_s"] and during:
        extra = sum(r["seconds"] - after["batch_s"] for r in during)
        entry.update(extra_s=round(extra, 3), normal_batch_s=after["batch_s"],
                     extra_over_normal=round(extra / after["batch_s"], 3))
    return entry


def ratios(spans: list[dict], lo: int, hi: int, start_nodes: int | None = None
           ) -> dict[str, float | None]:
    """Throughput ratios between phases (medians of events/s): ``out``, the first phase
    at ``hi`` engines over the first at ``lo`` (the issue's mid-run scale-out, nodes
    and engines); ``nodes``, ``lo`` engines after the nodes joined over before;
    ``engines``, ``hi`` engines over ``lo`` on the same nodes; ``in``, the first
    measured ``lo`` phase after the ``hi`` one over it; ``left``, ``lo`` engines on
    ``start_nodes`` nodes after the ``hi`` phase (the joined nodes left) over the same
    shape before it. None where a phase is missing or measured nothing."""
    def rate(pick) -> float | None:
        found = next((p for p in spans if pick(p)), None)
        return found["events_per_s"] if found else None

    at_hi = next((i for i, p in enumerate(spans) if p["engines"] == [hi]), None)
    if at_hi is None:
        return {"out": None, "nodes": None, "engines": None, "in": None, "left": None}
    high = spans[at_hi]["events_per_s"]
    first_lo = rate(lambda p: p["engines"] == [lo])
    nodes = spans[at_hi]["nodes"]
    lo_there = rate(lambda p: p["engines"] == [lo] and p["nodes"] == nodes
                    and p["first_batch"] < spans[at_hi]["first_batch"])
    after = next((p["events_per_s"] for p in spans[at_hi + 1:]
                  if p["engines"] == [lo] and p["events_per_s"]), None)
    left = next((p["events_per_s"] for p in spans[at_hi + 1:] if p["engines"] == [lo]
                 and p["nodes"] == start_nodes != nodes and p["events_per_s"]), None)
    return {"out": ratio_of(high, first_lo), "nodes": ratio_of(lo_there, first_lo),
            "engines": ratio_of(high, lo_there), "in": ratio_of(after, high),
            "left": ratio_of(left, first_lo)}


def against_unscaled(rows: list[dict], unscaled: list[dict], spans: list[dict],
                     changes: list[dict], hi: int) -> dict | None:
    """The scale-out against the same job left at its first count, over the same
    batches (FSD's batches cost more as the run goes on, as its windows and buckets
    fill, so a later phase compared with an earlier one understates what scaling
    gave): ``steady``, the median events/s of the ``hi`` phase's measured batches over
    the unscaled run's median over those batch numbers; ``with_change``, events over
    wall seconds from the batch that hands the keys over to the ``hi`` phase's end,
    the change's own cost included, over the unscaled run's over the same batches."""
    at_hi = next((p for p in spans if p["engines"] == [hi]), None)
    out_change = next((c for c in changes if c["to"] == hi), None)
    if at_hi is None or out_change is None or not unscaled:
        return None
    theirs = {r["batch"]: r for r in unscaled}
    mine = {r["batch"]: r for r in rows}
    steady = [b for b in at_hi["measured_batches"] if theirs.get(b, {}).get("events_per_s")]
    end = at_hi["end_batch"] if at_hi["end_batch"] is not None else max(mine) + 1
    span = [b for b in range(out_change["at_batch"] - 1, end)
            if b in mine and b in theirs and mine[b]["seconds"] and theirs[b]["seconds"]]

    def rate(by: dict[int, dict], batches: list[int]) -> float | None:
        wall = sum(by[b]["seconds"] for b in batches)
        return round(sum(by[b]["events"] for b in batches) / wall, 1) if wall else None

    unscaled_steady = (round(statistics.median(theirs[b]["events_per_s"] for b in steady), 1)
                       if steady else None)
    return {"batches": steady, "scaled_events_per_s": at_hi["events_per_s"],
            "unscaled_events_per_s": unscaled_steady,
            "steady": ratio_of(at_hi["events_per_s"], unscaled_steady),
            "with_change_batches": span,
            "with_change": ratio_of(rate(mine, span), rate(theirs, span))}


def ratio_of(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def phase_bound(phase: dict, cpus_per_node: float, nodes_to: int) -> dict | None:
    """Amdahl's bound on what ``nodes_to`` nodes can give over a measured phase, from
    the phase itself: its nodes were busy a share ``f`` of their quota (their CPU per
    wall second over ``nodes · cpus_per_node``), the rest of its time, ``1 - f``, is
    what no node did (the driver's serial part, and waits); spread evenly over
    ``nodes_to`` nodes the busy part takes ``f · nodes / nodes_to``, so throughput
    grows at most ``1 / ((1 - f) + f · nodes / nodes_to)``. Optimistic: it takes the
    nodes' work as evenly spread, and none of it serial."""
    busy, nodes = phase.get("node_cores_busy"), phase.get("nodes")
    if not busy or not nodes:
        return None
    share = min(1.0, sum(busy[:nodes]) / (nodes * cpus_per_node))
    return {"busy_share": round(share, 3),
            "amdahl": round(1 / ((1 - share) + share * nodes / nodes_to), 3)}


def differences(got: list[str], want: list[str]) -> int:
    """Rows that differ, position by position, plus the longer side's surplus."""
    return sum(a != b for a, b in zip(got, want, strict=False)) + abs(len(got) - len(want))


def newest_speedup(results: Path, node_cpus: float, nodes: tuple[int, ...] = (),
                   batch_size: int | None = None) -> Path | None:
    """The newest ``bench_speedup.py`` result in ``results`` (by the date it records)
    measured on nodes of ``node_cpus`` at every node count in ``nodes``: the one whose
    bounds a scale change is set beside. One at ``batch_size`` is preferred (the
    driver's serial share, and so the bound, depends on it); without one, any.

    Why the node counts: a result of 1 and 4 nodes only, the newest, gave a 2 -> 4 run
    no bound at all (``scale_midrun-defaultbatch-2.json`` before this)."""
    dated = []
    for path in results.glob("speedup*.json"):
        data = json.loads(path.read_text())
        if (data.get("node_cpus") == node_cpus and data.get("date")
                and set(nodes) <= set(data.get("nodes", ()))):
            dated.append((data.get("batch_size") == batch_size, data["date"], path))
    return max(dated)[2] if dated else None


def speedup_bound(path: Path | None, lo: int, hi: int, node_cpus: float) -> dict | None:
    """The bound on throughput(hi) / throughput(lo) from ``bench_speedup.py``'s results
    at the same node size: Amdahl's bound at hi over its bound at lo (the driver's
    serial part measured on one node), its key-preserving bound likewise, and the
    measured static speedups' ratios, per strategy."""
    if path is None or not path.exists():
        return None
    data = json.loads(path.read_text())
    if data.get("node_cpus") != node_cpus or not {lo, hi} <= set(data["nodes"]):
        return None
    i, j = data["nodes"].index(lo), data["nodes"].index(hi)

    def ratio(curve: list) -> float | None:
        return round(curve[j] / curve[i], 3) if curve[i] and curve[j] else None

    return {"file": str(path.relative_to(ROOT)), "load_average_peak":
            data.get("load_average_peak"),
            "amdahl": ratio(data["bound"]["amdahl"]),
            "key_preserving": ratio(data["bound"]["key_preserving"]),
            "measured_static": {s: ratio(c) for s, c in data["speedup"].items()}}
