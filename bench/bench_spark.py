"""cep on Spark against the same rule hand-written in PySpark, and against Spark's floor.

1M events (``k`` long in [0, 4096), ``ts`` timestamp 1 ms apart, ``v`` double uniform in
[0, 1) to 6 decimals, so its JSON text reads back exactly), one per-key length-window
rule, local[2], 5 engines / 5 shuffle partitions, the same micro-batch size and the same
SparkSession for every query:

(a) ``cep``: :func:`cep.run.run` on Spark over one JSON-lines file, written
    once (timed apart: *writing the input*): executors read and route it (cep's Python
    data source) → 5 engines in ``transformWithStateInPandas``, each writing its events
    as parts → ``foreachBatch`` sink. ``--batch-size`` is turned into bytes from the
    file's first 64 KiB, so cep's batches hold about, not exactly, that many events.
    Its events (an ``Output(dir)`` run read back with ``read_output``) are compared with
    the reference evaluator's over the same file, record for record.
(b) ``hand``: what a user would write instead: typed Parquet, one file per micro-batch,
    ``groupBy("k").applyInPandasWithState`` keeping the last 10 ``v`` of each key in
    state (as float64 bytes: see HAND_STATE), one output row per event whose window
    average is > 0.9; ``foreachBatch`` collects (``toPandas``) and counts. Its rows are
    compared with the reference's (key, ts, n, mean, top). It reads typed Parquet, cep
    reads JSON text: (b) and (c) leave out the parsing that (a) pays.
(c) floors, on the same Parquet files and batches:
    ``floor``    read + shuffle every event into 5 groups (cep's engine labels, one group
                 per shuffle partition) + ``applyInPandasWithState`` whose function reads
                 every row, stores a row count and emits nothing: the cheapest honest
                 "read + shuffle + Python stateful no-op" (the ratio a/c uses this one);
    ``floor-key`` the same no-op grouped by ``k`` (4096 groups: the per-group cost (b) pays);
    ``floor-tws`` / ``floor-tws-blob`` cep's operator, ``transformWithStateInPandas``
                 by engine, rewriting an 8-byte / an engine-sized state blob (the size of
                 one engine's snapshot after the first batch) per batch;
    ``floor-jvm`` ``repartition(5, "k")`` + ``foreachBatch`` count: no Python, no state.

Timing. The session is started once (``spark_session``, the first thing a Spark run
does; timed as *session start*), then cep runs cold (its first micro-batch pays the
Python workers' imports and the first stateful batch). Then each query runs once on a tiny
input (warm-up), and the measured queries run warm, round-robin, ``--rounds`` times; the
tables show each query's best round (the machine is shared: see the load average).
*total* = query start → terminated (cep: the whole ``cep.run.run`` call over the JSON
file, written beforehand like the Parquet files of b/c, both reported apart);
*first batch* = start → first batch's sink done; *steady* = events of batches 2.. over
the time from the first batch's sink to the last's. Spark's own per-batch figures come
from a StreamingQueryListener (``durationMs``, state operator commit time).

``--stages`` turns Spark's event log on and adds every stage's time and SQL metrics
(RocksDB commit phases, Python time) per batch. ``--spark-conf KEY=VALUE`` runs with an
extra session setting and files the results under ``what_if_spark_conf`` of an existing
output file instead of replacing it.

Writes bench/results/spark.json. The queries (b) and (c) and the inputs are in
``spark_hand.py``, Spark's own figures (progress events, event-log stages) in
``spark_progress.py``; this script runs (a), drives the rounds and writes the results.

    python bench/bench_spark.py [--events 1000000] [--batch-sizes 200000,500000] [--stages]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

from common import RESULTS, make_events, write_results
from spark_hand import (
    ENGINES,
    MASTER,
    hand_matches,
    reference_rows,
    run_plain,
    stage_typed,
    timing,
    write_input,
)
from spark_progress import (
    progress_listener,
    spark_overhead,
    stage_breakdown,
    stage_summary,
    take_progress,
)

from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.table import Table
from cep.io.inputs import load_inputs
from cep.reference import input_watermark, run_reference
from cep.run import run as run_rules
from cep.run_config import Output, RunConfig
from cep.spark.jvm.session import spark_session
from cep.spark.output.delivery import read_output
from cep.spark.output.event_parts import EventParts
from grammar.compile import compile_text
from splitter.engine_labels import engine_labels
from splitter.routing import key_grouping, route_part

SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double) TIMESTAMP ts;\n"
RULE = SCHEMA + """@Name('agg') SELECT k, count(*) AS n, avg(v) AS mean, max(v) AS top
FROM S#groupwin(k)#length(10) HAVING avg(v) > 0.9;"""

QUERIES = ("cep", "hand", "floor", "floor-tws", "floor-tws-blob", "floor-key", "floor-jvm")
FLOORS = ("floor", "floor-tws", "floor-tws-blob", "floor-key", "floor-jvm")


def run_cep(module, source: Path, batch_size: int, workdir: Path) -> dict:
    """A Spark run over the JSON-lines file, events to a parts directory in
    ``workdir`` (read back after the clock stops, for the comparison)."""
    out = workdir / "out"
    wall_start = time.time()
    run = run_rules(module, RunConfig({"S": str(source)}, output=Output(str(out)),
                                      engines=ENGINES, batch_size=batch_size, master=MASTER,
                                      checkpoint=str(workdir / "run"), progress=False))
    result = timing(run.seconds, wall_start + run.session_s, run.metrics,
                    sum(m["events_out"] for m in run.metrics))
    result["first_batch_s"] = run.first_batch_s  # query start → first batch's sink done
    result.update({
        "session_s": run.session_s,
        "busy_s_per_engine": [m["busy_s_per_engine"] for m in run.metrics],
        "rows_per_engine": [m["rows_per_engine"] for m in run.metrics],
        "sink_s": [m["sink_s"] for m in run.metrics],
    })
    result["records"] = read_output(EventParts(str(out)),
                                    {name: i for i, name in enumerate(module.outputs)})
    return result


def engine_state_bytes(module, table: Table, batch_size: int) -> int:
    """Engine 0's snapshot after the first batch, routed as cep routes it: the blob size
    ``floor-tws-blob`` rewrites per group and batch."""
    first = {name: column[:batch_size] for name, column in table.items()}
    rows = route_part(module, {"S": first}, engine_labels(ENGINES), key_grouping(ENGINES),
                      0, {})
    _, mine, _, _, _, _ = pickle.loads(rows[0][1])  # made by this process just now
    engine = Engine(module)
    engine.process(mine, dataclasses.replace(input_watermark(module, {"S": first}), final=False))
    return len(engine.snapshot())


def summarise(kind: str, events: int, run: dict) -> dict:
    steady_events = events - events / run["batches"] if run["batches"] else 0
    out = {
        "seconds": round(run["seconds"], 3),
        "events_per_s": round(events / run["seconds"]),
        "first_batch_s": round(run["first_batch_s"], 3),
        "steady_events_per_s": (round(steady_events / run["steady_span_s"])
                                if run["steady_span_s"] else None),
        "batches": run["batches"], "rows_out": run["rows_out"],
        "batch_ends_s": run["batch_ends_s"], "sink_s": run["sink_s"],
    }
    if run.get("stages"):  # the first batch's stages; steady ones are summarised apart
        first = min(st["batch"] for st in run["stages"])
        out["stages_first_batch"] = [st for st in run["stages"] if st["batch"] == first]
    for extra in ("session_s", "busy_s_per_engine", "rows_per_engine",
                  "spark_progress", "equal_to_reference"):
        if run.get(extra) is not None:
            value = run[extra]
            out[extra] = round(value, 3) if isinstance(value, float) else value
    return out


def size_entry(size: int, n_files: int, typed_staging_s: float, rounds: int,
               runs: dict[str, list[dict]], events: int, state_bytes: int) -> dict:
    """One batch size's results: each query's best round summarised, cep's rate against
    (b)'s and the floors', and whether the events equal the reference's."""
    best = {k: min(v, key=lambda x: x["seconds"]) for k, v in runs.items() if v}
    entry: dict = {"batch_size": size, "batches": n_files,
                   "typed_parquet_staging_s": round(typed_staging_s, 3),
                   "rounds": rounds, "queries": {}}
    for kind, run in best.items():
        entry["queries"][kind] = summarise(kind, events, run)
        entry["queries"][kind]["all_rounds_s"] = [round(x["seconds"], 3)
                                                  for x in runs[kind]]
        entry["queries"][kind]["spark_median_steady_ms"] = spark_overhead(
            run["spark_progress"])
        if run.get("stages"):
            entry["queries"][kind]["stages_median_steady"] = stage_summary(
                run["stages"])
    q = entry["queries"]
    if "cep" in q:
        cep_eq = all(x["equal_to_reference"] for x in runs["cep"])
        q["cep"]["equal_to_reference"] = cep_eq
        if "hand" in q:
            q["hand"]["equal_to_reference"] = all(x["equal_to_reference"]
                                                  for x in runs["hand"])
            q["hand"]["same_count_as_cep"] = q["hand"]["rows_out"] == q["cep"]["rows_out"]
            entry["a_over_b"] = round(q["cep"]["seconds"] / q["hand"]["seconds"], 3)
            entry["a_over_b_steady"] = ratio(q["hand"], q["cep"])
            entry["target_a_le_1_2_b"] = entry["a_over_b"] <= 1.2
        for floor in FLOORS:
            if floor in q:
                name = "a_over_c" if floor == "floor" else f"a_over_{floor}"
                entry[name] = round(q["cep"]["seconds"] / q[floor]["seconds"], 3)
                entry[name + "_steady"] = ratio(q[floor], q["cep"])
    entry["engine_state_bytes"] = state_bytes
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=4096)
    parser.add_argument("--batch-sizes", default="200000",
                        help="comma-separated micro-batch sizes (events)")
    parser.add_argument("--rounds", type=int, default=2, help="warm rounds per batch size")
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--stages", action="store_true",
                        help="event log on: per-batch Spark stage times of every query")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting for the session (what-if runs)")
    parser.add_argument("--out", default=str(RESULTS / "spark.json"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    queries = [q for q in args.queries.split(",") if q]
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({os.cpu_count()} CPUs)")

    table = make_events(args.events, args.keys, kinds=0)
    module = compile_text(RULE, "agg")
    root = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    source = root / "events.jsonl"
    write_s = write_input(table, source)
    print(f"writing the input: {args.events:,} JSON lines in {write_s:.2f}s")
    started = time.perf_counter()
    ref = run_reference(module, load_inputs(module, [str(source)], None).tables)
    reference_s = time.perf_counter() - started
    expected_records = output_records(ref)
    expected_rows = reference_rows(ref)
    print(f"reference evaluator: {len(expected_records):,} events out in {reference_s:.2f}s "
          "(reading the file included)")

    event_log = root / "event-log"
    submit = [f"--conf {c}" for c in args.spark_conf]
    if args.stages:
        event_log.mkdir(parents=True)
        submit += [f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file:{event_log}",
                   "--conf spark.eventLog.compress=false",
                   "--conf spark.eventLog.rolling.enabled=false"]
    if submit:
        os.environ["PYSPARK_SUBMIT_ARGS"] = " ".join([*submit, "pyspark-shell"])
    results: dict = {
        "events": args.events, "keys": args.keys, "master": MASTER, "engines": ENGINES,
        "shuffle_partitions": ENGINES, "rule": RULE.split("\n", 1)[1],
        "load_average_at_start": [round(x, 2) for x in load],
        "reference_events_out": len(expected_records),
        "reference_s": round(reference_s, 3), "write_input_s": round(write_s, 3),
        "spark_conf": args.spark_conf,
        "by_batch_size": {},
    }
    try:
        started = time.perf_counter()
        spark = spark_session(MASTER, ENGINES)
        session_s = time.perf_counter() - started
        listener = progress_listener(spark)
        print(f"session start: {session_s:.2f}s")

        # cold: the first cep query of the session (Python workers start, imports, first
        # stateful batch)
        mark = len(listener.started)
        cold = run_cep(module, source, sizes[0], root / "cold-cep")
        cold["spark_progress"] = take_progress(listener, mark)[0]
        cold["equal_to_reference"] = cold.pop("records") == expected_records
        results["cold_cep"] = {"session_start_s": round(session_s, 3),
                               "batch_size": sizes[0],
                               **summarise("cep", args.events, cold)}
        print(f"cold cep (batch {sizes[0]:,}): session start {session_s:.2f}s, "
              f"first batch {cold['first_batch_s']:.2f}s, run {cold['seconds']:.2f}s, "
              f"equal to reference: {cold['equal_to_reference']}")

        # warm-up: every query once on a tiny input
        tiny = {k: v[:20_000] for k, v in table.items()}
        warm_stage = root / "warm-stage"
        stage_typed(tiny, 10_000, warm_stage)
        warm_source = root / "warm.jsonl"
        write_input(tiny, warm_source)
        for kind in queries:
            t0 = time.perf_counter()
            mark = len(listener.started)
            if kind == "cep":
                run_cep(module, warm_source, 10_000, root / "warm-cep")
            else:
                run_plain(spark, kind, warm_stage, root / f"warm-{kind}", 8)
            take_progress(listener, mark)
            print(f"warm-up {kind}: {time.perf_counter() - t0:.2f}s")

        for size in sizes:
            state_bytes = engine_state_bytes(module, table, size)
            stage = root / f"typed-{size}"
            t0 = time.perf_counter()
            n_files = stage_typed(table, size, stage)
            typed_staging_s = time.perf_counter() - t0
            runs: dict[str, list[dict]] = {k: [] for k in queries}
            for r in range(args.rounds):
                for kind in queries:
                    workdir = root / f"{kind}-{size}-{r}"
                    mark = len(listener.started)
                    if kind == "cep":
                        run = run_cep(module, source, size, workdir)
                        run["equal_to_reference"] = run.pop("records") == expected_records
                    else:
                        run, sink = run_plain(spark, kind, stage, workdir, state_bytes)
                        if kind == "hand":
                            run["equal_to_reference"] = hand_matches(sink.frames,
                                                                     expected_rows)
                    run["spark_progress"], query_id = take_progress(listener, mark)
                    if args.stages and query_id:
                        run["stages"] = stage_breakdown(event_log, query_id)
                    runs[kind].append(run)
                    print(f"  batch {size:,} round {r + 1} {kind:10s}: {run['seconds']:6.2f}s "
                          f"first {run['first_batch_s']:5.2f}s, {run['batches']} batches, "
                          f"{run['rows_out']:,} out", flush=True)
                    shutil.rmtree(workdir, ignore_errors=True)
            entry = size_entry(size, n_files, typed_staging_s, args.rounds, runs, args.events,
                               state_bytes)
            results["by_batch_size"][str(size)] = entry
            print_table(entry, args.events)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = Path(args.out)
    if args.spark_conf and out.exists():  # a what-if run joins the baseline's file
        baseline = json.loads(out.read_text(encoding="utf-8"))
        baseline.setdefault("what_if_spark_conf", {})[" ".join(args.spark_conf)] = results
        results = baseline
    write_results(results, out)


def ratio(base: dict, cep: dict) -> float | None:
    """cep's steady-state time per event over ``base``'s."""
    if not base.get("steady_events_per_s") or not cep.get("steady_events_per_s"):
        return None
    return round(base["steady_events_per_s"] / cep["steady_events_per_s"], 3)


def print_table(entry: dict, events: int) -> None:
    print(f"\nbatch size {entry['batch_size']:,} ({entry['batches']} batches), "
          f"best of {entry['rounds']} warm rounds")
    print(f"{'query':10s} {'total s':>8s} {'events/s':>10s} {'first s':>8s} "
          f"{'steady ev/s':>12s} {'out':>6s}  spark ms/batch (trigger/addBatch/commit)")
    for kind, q in entry["queries"].items():
        med = q.get("spark_median_steady_ms", {})
        steady = f"{q['steady_events_per_s']:,}" if q["steady_events_per_s"] else "-"
        print(f"{kind:10s} {q['seconds']:8.2f} {q['events_per_s']:>10,} "
              f"{q['first_batch_s']:8.2f} {steady:>12s} {q['rows_out']:>6,}  "
              f"{med.get('triggerExecution', 0):.0f}/{med.get('addBatch', 0):.0f}/"
              f"{med.get('state_commit_ms', 0):.0f}")
    for name, value in entry.items():
        if name.startswith("a_over"):
            print(f"  {name} = {value}")
    if "target_a_le_1_2_b" in entry:
        print(f"  target cep <= 1.2x hand-written: {entry['target_a_le_1_2_b']}")
    print(f"  engine state blob after the first batch: {entry['engine_state_bytes']:,} bytes")
    for kind, q in entry["queries"].items():
        for st in q.get("stages_median_steady", []):
            extra = {k: v for k, v in st.items() if k not in ("operators", "tasks", "wall_ms",
                                                                "stages_per_batch")}
            print(f"  stage {kind:10s} [{st['operators'][:60]}] tasks {st['tasks']:.0f} "
                  f"wall {st['wall_ms']:.0f} ms {extra}")
    print()


if __name__ == "__main__":
    main()
