"""Sections of the result files that measure cep on Spark: beside hand-written PySpark,
its input source, a small batch's parts, latency, the driver's memory, the transports
and the live view's cost.
"""

from __future__ import annotations

from page.figures import at, num, pct, ratio, table, yes_no
from page.provenance import provenance


def latency_figures(data: dict, _name: str) -> str:
    """bench_latency.py's cases: latency from an event's append to its output, the CPU
    seconds of cep, the broker and the bench's own clients over the case (they share the
    machine's cores), and the machine's 1-minute load average at each case's end
    (latencies move with it)."""
    cases = [c for c in at(data, "cases") or [] if isinstance(c, dict)]
    rounds = len({c.get("round") for c in cases}) > 1  # bench_latency.py --rounds
    rows = [((num(c.get("round")),) if rounds else ())
            + (c.get("sink", ""), num(c.get("trigger_s"), 1, " s"), num(c.get("rate")),
             f"{num(c.get('delivered'))} of {num(c.get('events'))}",
             num(c.get("p50_s"), 2), num(c.get("p95_s"), 2), num(c.get("p99_s"), 2),
             num(c.get("max_s"), 2), num(c.get("first_output_s"), 1),
             num(c.get("batch_gap_median_s"), 2),
             *(num((c.get("cpu_s") or {}).get(part), 1) or "–"
               for part in ("cep", "broker", "bench_clients")),
             *(num(at(c, "machine_cores_busy", phase), 2) for phase in ("writing", "draining")),
             num((c.get("load_average") or [None])[0], 1))
            for c in cases]
    best = at(data, "best_rate_p99_under_1s") or {}
    tail = "; ".join(f"{name}: {num(rate) or 'none'}" for name, rate in best.items())
    return (f"Rule `{data.get('rule', '')}`, {num(data.get('keys'))} keys.\n\n"
            + table((("round",) if rounds else ())
                    + ("source and sink", "trigger", "events/s", "delivered", "p50 s",
                       "p95 s", "p99 s", "max s", "first output s", "batch every s",
                       "cep CPU s", "broker CPU s", "writer and reader CPU s",
                       "machine cores busy, writing", "draining", "load"), rows)
            + (f"\n\nHighest rate with p99 under 1 s: {tail}." if tail else ""))


def kafka_read_figures(data: dict, _name: str) -> str:
    """bench_kafka_read.py: the read path per record, piece by piece or one fetch per
    partition, and whole runs before and after beside the file path."""
    rows = [(r.get("place", ""), r.get("variant", ""), num(r.get("wall_us_per_record"), 1),
             num(r.get("client_cpu_us_per_record"), 1),
             num(r.get("broker_cpu_us_per_record"), 1),
             num((r.get("load_average") or [None])[0], 1))
            for r in at(data, "read") or [] if isinstance(r, dict)]
    trees = data.get("trees") or {}
    runs = [(trees.get(str(r.get("case", "")).removesuffix(" (file)"), r.get("case", ""))
             + (" (file)" if str(r.get("case", "")).endswith(" (file)") else " (Kafka)"),
             num(r.get("median_wall_s"), 1), num(r.get("median_read_task_s"), 2),
             num(r.get("read_task_us_per_record"), 1))
            for r in at(data, "run") or [] if isinstance(r, dict) and "case" in r]
    text = (f"{num(data.get('records'))} records in one partition; medians of "
            f"{num(data.get('rounds'))} interleaved rounds.\n\n"
            + table(("place", "variant", "wall µs/record", "client CPU µs/record",
                     "broker CPU µs/record", "load"), rows))
    if runs:
        text += ("\n\nWhole `cep run` processes over the same records (Spark, "
                 "`--batch-size 100000`):\n\n"
                 + table(("tree (input)", "wall s", "input tasks' read s",
                          "read µs/record"), runs))
    return text


def kafka_latency_ab_figures(data: dict, name: str) -> str:
    """bench_latency.py's Kafka cases before and after, interleaved, with the file path."""
    rows = [(c.get("tree", ""), c.get("sink", ""), num(c.get("rate")),
             f"{num(c.get('delivered'))} of {num(c.get('events'))}",
             num(c.get("p50_s"), 2), num(c.get("p99_s"), 2), num(c.get("first_output_s"), 1),
             num(c.get("batch_gap_median_s"), 2), num((c.get("load_average") or [None])[0], 1))
            for c in at(data, "cases") or [] if isinstance(c, dict)]
    return (f"{data.get('what', '')}.\n\n"
            + table(("tree", "source and sink", "events/s", "delivered", "p50 s", "p99 s",
                     "first output s", "batch every s", "load"), rows))


def kafka_stages_ab_figures(data: dict, name: str) -> str:
    """latency_ab.py's cases, with where each case's batches spent their time (the
    medians bench_latency.py reads from the run's metrics)."""
    text = kafka_latency_ab_figures(data, name)
    rows = [(c.get("tree", ""), c.get("round", ""), c.get("sink", ""), num(c.get("rate")),
             num(at(c, "batch_stage_median_s", "events_in")),
             *(num(1000 * v, 0) if isinstance(v := at(c, "batch_stage_median_s", part),
                                               int | float) else ""
               for part in ("between_s", "sink_s", "stage.read", "write_s")))
            for c in at(data, "cases") or [] if isinstance(c, dict)]
    if any(any(cell for cell in row[4:]) for row in rows):
        text += ("\n\nWhere a batch's time went (medians over the batches with input, ms): "
                 "Spark's trigger around the job (planning, offsets and commit logs), the "
                 "job (read, route, shuffle, engines), the input tasks' read summed over "
                 "tasks, and the delivery (file append, or the Kafka transaction).\n\n"
                 + table(("tree", "round", "source and sink", "events/s", "events per batch",
                          "trigger ms", "job ms", "read ms (tasks)", "delivery ms"), rows))
    return text


def kafka_stages_figures(data: dict, _name: str) -> str:
    """bench_kafka_stages.py: one Kafka batch's stages beside the file path's."""
    m = data.get("median_ms") or {}
    names = [("plan: the topic's partition ends, each trigger", "plan[fresh]", "plan[kept]")]
    rows = [(what, num(m.get(fresh), 1), num(m.get(kept), 1)) for what, fresh, kept in names]
    own = [("fetch: the batch's offsets at the partition's end (a consumer per read)",
            "fetch[fresh]", ""),
           ("fetch of one record (nearly all of it the new consumer's start)",
            "fetch.client[fresh]", ""),
           ("convert: values into the typed frame (file path: its whole read)", "convert",
            "convert.file"),
           ("publish: the batch's transaction (keys, marker, begin, send, commit)",
            "publish[kept]", "publish.file"),
           ("publish: record keys (from the engines' key texts)", "publish.keys", ""),
           ("publish: the committed-batch marker read", "publish.marker[kept]", ""),
           ("publish: records queued", "publish.send[kept]", ""),
           ("publish: offsets sent and the commit", "publish.commit[kept]", ""),
           ("a new transactional writer's start (init_transactions)",
            "publish.init[fresh]", "")]
    rows2 = [(what, num(m.get(kafka), 1), num(m.get(file), 1) if file else "")
             for what, kafka, file in own]
    loads = data.get("load_averages") or []
    return (f"A batch of {num(data.get('batch'))} latency-bench records of a one-partition "
            f"topic holding {num(data.get('backlog'))}; medians of "
            f"{num(data.get('rounds'))} rounds, ms; load averages "
            f"{num(min((x[0] for x in loads), default=None), 1)}–"
            f"{num(max((x[0] for x in loads), default=None), 1)}.\n\n"
            + table(("stage", "a client per call ms", "clients kept ms"), rows)
            + "\n\n" + table(("stage", "Kafka ms", "file path ms"), rows2))


def batch_floor_figures(data: dict, _name: str) -> str:
    """bench_batch_floor.py: a small batch's median time, part by part."""
    m = data.get("median") or {}
    spark = m.get("spark_ms") or {}
    rows = [("trigger (the whole batch)", num(m.get("trigger_ms"))),
            ("planning", num(spark.get("planning"))),
            ("offsets and commit logs", num(sum(spark.get(k, 0) for k in
                                                ("latest_offset", "wal_commit",
                                                 "commit_offsets")))),
            ("the batch's job", num(m.get("jobs_ms"))),
            ("driver after the job (delivery, dead letters, metrics)",
             num(m.get("driver_after_job_ms"))),
            ("state stores' commit", num(spark.get("state_commit")))]
    for name, stage in (m.get("stages") or {}).items():
        rows.append((f"stage `{name}`: wall ({num(stage.get('tasks'))} tasks)",
                     num(stage.get("wall_ms"))))
        rows.append((f"stage `{name}`: tasks' run time, summed", num(stage.get("run_ms"))))
    rows += [("the engines' state update (Spark's allUpdatesTimeMs, summed)",
              num(at(m, "state_store", "allUpdatesTimeMs"))),
             ("cep's own work in the engine tasks, summed", num(m.get("cep_engine_work_ms"))),
             ("cep's own work in the input tasks, summed", num(m.get("cep_input_work_ms")))]
    return (f"Batches of {num(data.get('events_per_batch'))} events, "
            f"{num(data.get('engines'))} engines, `{data.get('master', '')}`; medians over "
            f"{num(data.get('batches_profiled'))} batches, milliseconds.\n\n"
            + table(("part", "ms"), rows))


SPARK_QUERIES = {
    "cep": "cep on Spark (reads JSON lines, 5 engines)",
    "cep-aipws": "cep on Spark with `applyInPandasWithState` engines",
    "hand": "the same rule hand-written in PySpark (typed Parquet)",
    "floor": "floor: Spark reads the Parquet file and counts",
    "floor-tws": "floor: a stateful operator that keeps nothing",
    "floor-tws-blob": "floor: a stateful operator that keeps one blob",
    "floor-key": "floor: a stateful operator grouped by key",
    "floor-jvm": "floor: the JVM alone, no Python",
}


def spark_figures(data: dict, _name: str) -> str:
    parts = [f"Rule: `{' '.join(str(data.get('rule', '')).split())}`; "
             f"{num(data.get('events'))} events, {num(data.get('keys'))} keys, master "
             f"`{data.get('master', '')}`, {num(data.get('engines'))} engines."]
    for size, entry in sorted((at(data, "by_batch_size") or {}).items(),
                              key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0):
        rows = [(SPARK_QUERIES.get(q, q), num(at(v, "seconds"), 1), num(at(v, "events_per_s")),
                 num(at(v, "steady_events_per_s")), yes_no(at(v, "equal_to_reference")))
                for q, v in (at(entry, "queries") or {}).items()]
        parts.append(f"Batches of {num(int(size)) if size.isdigit() else size} events:\n\n"
                     + table(("query", "seconds", "events/s", "steady events/s",
                              "= reference"), rows))
    cold = at(data, "cold_cep")
    if isinstance(cold, dict):
        parts.append(
            f"A cold start of cep (a new session): session {num(cold.get('session_start_s'), 1)}"
            f" s, first batch {num(cold.get('first_batch_s'), 1)} s, "
            f"{num(cold.get('events_per_s'))} events/s over the whole run.")
    return "\n\n".join(parts)


def source_figures(data: dict, _name: str) -> str:
    rows = [(name, num(at(data, name, "best_s"), 2), num(at(data, name, "events_per_s")))
            for name in ("spark-json", "cep-source") if isinstance(data.get(name), dict)]
    setup = at(data, "setup") or {}
    return (f"{num(at(setup, 'n'))} events ({num(at(setup, 'bytes'))} bytes), master "
            f"`{at(setup, 'master') or ''}`.\n\n"
            + table(("source", "best s", "events/s"), rows)
            + f"\n\ncep's source over Spark's JSON source: "
            f"{ratio(data.get('ratio_cep_over_spark_json'))}")


def _memory_table(memory: dict) -> str:
    rows = [(name, num(at(c, "events")), num(at(c, "seconds"), 1), num(at(c, "events_per_s")),
             num(at(c, "peak_rss_mb", "driver"), 0), num(at(c, "peak_rss_mb", "jvm"), 0),
             num(at(c, "peak_rss_mb", "executor_workers"), 0))
            for name, c in (at(memory, "cases") or {}).items()]
    growth = [f"- {name}: driver {ratio(at(g, 'driver'))}, driver and JVM "
              f"{ratio(at(g, 'driver+jvm'))}"
              for name, g in (at(memory, "growth") or {}).items()]
    return (f"Batches of {num(at(memory, 'batch_size'))} events; peak resident memory in MB, "
            "summed per role.\n\n"
            + table(("case", "events", "seconds", "events/s", "driver MB", "JVM MB",
                     "executor workers MB"), rows)
            + ("\n\nPeak memory of the larger input over the smaller:\n\n" + "\n".join(growth)
               if growth else ""))


def _follow_lines(follow: dict) -> str:
    return (f"Files of {num(at(follow, 'file_events'))} events landing at "
            f"{num(at(follow, 'rate_events_per_s'))} events/s for "
            f"{num(at(follow, 'seconds'), 0)} s, `--trigger-interval "
            f"{num(at(follow, 'trigger_interval_s'), 0)}`: latency from a file landing to its "
            f"events in the output, median {num(at(follow, 'latency_p50_s'), 2)} s, 99th "
            f"percentile {num(at(follow, 'latency_p99_s'), 2)} s, largest "
            f"{num(at(follow, 'latency_max_s'), 2)} s; median batch interval "
            f"{num(at(follow, 'median_batch_interval_s'), 2)} s.")


def stream_figures(data: dict, _name: str) -> str:
    parts = [f"Master `{data.get('master', '')}`, driver memory "
             f"`{data.get('cep_driver_memory', '')}`."]
    for key, title in (("memory", "Driver memory against input size, local master"),
                       ("memory-cluster", "Driver memory against input size, standalone "
                        "cluster on one machine")):
        if isinstance(data.get(key), dict):
            parts.append(f"**{title}** (part `{key}`). {provenance(data[key], data)}\n\n"
                         + _memory_table(data[key]))
    paper = data.get("paper")
    if isinstance(paper, dict):
        parts.append(f"**FSD end to end** (part `paper`). {provenance(paper, data)}\n\n"
                     f"{num(paper.get('events'))} tweets in {num(paper.get('seconds'), 1)} s, "
                     f"{num(paper.get('events_per_s'))} tweets/s, "
                     f"{num(paper.get('batches'))} batches.")
    if isinstance(data.get("follow"), dict):
        parts.append(f"**Latency under `--follow`** (part `follow`). "
                     f"{provenance(data['follow'], data)}\n\n" + _follow_lines(data["follow"]))
    return "\n\n".join(parts)


def transports_io_figures(data: dict, _name: str) -> str:
    names = {"produce": "`cep produce` into Kafka", "read": "Kafka read by offset range",
             "kafka_write": "Kafka transactional write", "mongo_write": "MongoDB event write",
             "mongo_replay": "MongoDB replay of a written batch"}
    rows = [(label, num(at(data, key, "records")), num(at(data, key, "seconds"), 2),
             num(at(data, key, "records_per_s")))
            for key, label in names.items() if isinstance(data.get(key), dict)]
    return (f"{num(data.get('n'))} generated tweets, {num(data.get('partitions'))} partitions, "
            "embedded brokers on 127.0.0.1.\n\n"
            + table(("operation", "records", "seconds", "records/s"), rows)
            + f"\n\nA replayed Kafka batch, skipped by its marker: "
            f"{num(data.get('kafka_replay_skip_s'), 4)} s.")


def transports_figures(data: dict, _name: str) -> str:
    rows = []
    for rule in ("sensor_average", "fsd"):
        for side in ("file", "kafka"):
            v = at(data, rule, side)
            if isinstance(v, dict):
                rows.append((rule, side, num(v.get("events")), num(v.get("events_out")),
                             num(v.get("seconds"), 2), num(v.get("events_per_s"))))
    lag = at(data, "lag") or {}
    return (f"{num(data.get('n'))} records, {num(data.get('partitions'))} partitions, "
            f"{num(data.get('engines'))} engines, batches of {num(data.get('batch_size'))}."
            "\n\n" + table(("rule", "input", "events", "events out", "seconds", "events/s"),
                           rows)
            + f"\n\nConsumer lag at {num(at(lag, 'rate_per_s'))} records/s fed for "
            f"{num(at(lag, 'seconds'), 0)} s: mean {num(at(lag, 'lag_mean'))}, largest "
            f"{num(at(lag, 'lag_max'))} records.")


def ui_figures(data: dict, _name: str) -> str:
    options = at(data, "options") or {}
    lines = [f"FSD over {num(at(options, 'n'))} tweets, batches of "
             f"{num(at(options, 'batch_size'))}, {num(at(options, 'engines'))} engines, "
             f"{num(at(options, 'pairs'))} pairs of runs with and without the live view and "
             "a client polling it.", ""]
    overhead, cpu = data.get("median_overhead"), data.get("server_cpu_share_max")
    if isinstance(overhead, int | float):
        lines.append(f"- median throughput lost with the live view: {pct(100 * overhead, 2)}")
    if isinstance(cpu, int | float):
        lines.append(f"- the server's CPU, largest share of one core: {pct(100 * cpu, 3)}")
    return "\n".join(lines)



def bound_text(job: dict) -> str:
    """The wall time the local runner cannot beat on the machine (bench_stages.bound),
    beside the issue's target of 1.5x the parse floor."""
    bound = job.get("bound") or {}
    if "now_s" not in bound:
        return ""
    one = [r.get("seconds") for r in job.get("parse_one_thread") or []]
    return (f" Its bound on these {num(bound.get('cores'))} cores (start-up, then the "
            f"larger of the parse floor and its CPU seconds after start-up over the cores): "
            f"{num(bound['now_s'], 2)} s, which it runs at {ratio(bound.get('local_over_now'))}; "
            f"a runner that only parsed (pyarrow on one thread: "
            f"{num(min(one) if one else None, 2)} s) and ran its engines could not beat "
            f"{num(bound.get('ideal_s'), 2)} s, {ratio(bound.get('ideal_over_floor'))} the "
            f"floor, against the target of 1.5× ({num(bound.get('target_s'), 2)} s)"
            + (": out of reach on this machine." if (bound.get("ideal_s") or 0)
               > (bound.get("target_s") or 0) else "."))


def stages_figures(data: dict, _name: str) -> str:
    """bench_stages.py: each job's seconds per stage beside the parse floor, and the
    picture of the same figures."""
    parts = []
    for name, job in (data.get("jobs") or {}).items():
        local = at(job, "local_best") or {}
        spark = at(job, "spark_best") or {}
        stages = list((local.get("stages_s") or {}).items())
        rows = [(stage, num(seconds, 2)) for stage, seconds in stages]
        rows.append(("**whole process (wall)**", num(local.get("wall_s"), 2)))
        rows.append(("CPU seconds, peak memory",
                     f"{num(local.get('process_cpu_s'), 1)} s, "
                     f"{num(local.get('peak_rss_mb'))} MB"))
        rows.extend((f"reading thread: {stage}", num(seconds, 2))
                    for stage, seconds in (local.get("reader_thread_s") or {}).items())
        floor = min(job.get("parse_floor_s") or [0]) or None
        text = (f"**{name}** (`{job.get('rule', '')}`, {num(local.get('events_in'))} events): "
                f"pyarrow alone parses the file in {num(floor, 2)} s; the local runner's "
                f"whole process takes {ratio(at(job, 'bound', 'local_over_floor'))} that."
                + bound_text(job) + "\n\n"
                + table(("local runner stage", "seconds"), rows))
        if spark:
            spark_parts = spark.get("wall_parts_s") or {}
            core = spark.get("task_core_s") or {}
            text += ("\n\n" + table(("Spark stage", "seconds of the run", "core-seconds"),
                                    [(k, num(v, 2), num(core.get(k), 2))
                                     for k, v in spark_parts.items()])
                     + f"\n\nSpark: {num(spark.get('wall_s'), 1)} s wall, "
                     f"{num(spark.get('tree_cpu_s'), 1)} CPU seconds (the process tree: "
                     f"driver, JVM, Python workers), {num(spark.get('batches'))} batches; "
                     "a task stage's seconds of the run are its core-seconds over the "
                     "machine's cores."
                     + (f" Spark's figures are of an earlier run ({job['spark_date'][:16]})."
                        if job.get("spark_date") else ""))
        parts.append(text)
    return ("![Seconds per stage, stacked, beside the parse floor](images/stages.png)\n\n"
            + "\n\n".join(parts))


def spark_frame_figures(data: dict, _name: str) -> str:
    """bench_spark_frame.py: per source tree, each side's CPU seconds on the frame (100
    lines) and the whole job, Spark's split by process and by JVM thread, and the bound
    the 1.5x CPU target sets beside Spark's frame alone."""
    parts = []
    for tree, found in (data.get("trees") or {}).items():
        best = found.get("best") or {}
        rows = [(f"{size} on {side}", num(at(best, f"{size}_{side}", "wall_s"), 2),
                 num(at(best, f"{size}_{side}", "tree_cpu_s"), 2),
                 num(min((r.get("load_at_start", 0) for r in
                          (found.get("runs") or {}).get(f"{size}_{side}", [])), default=None),
                     1))
                for size in ("frame", "job") for side in ("local", "spark")]
        job = best.get("job_spark") or {}
        split = "; ".join(f"{k} {num(v, 2)}" for k, v in
                          (job.get("by_process_cpu_s") or {}).items())
        threads = "; ".join(f"{k} {num(v, 2)}" for k, v in
                            (job.get("jvm_threads_cpu_s") or {}).items())
        parts.append(f"`{tree}`:\n\n"
                     + table(("run (best of the rounds by CPU)", "wall s", "CPU s",
                              "load at start"), rows)
                     + f"\n\nSpark's job by process (CPU s): {split}. Its JVM by thread: "
                     f"{threads}.")
    bound = data.get("bound") or {}
    parts.append(f"The bound (the last tree): the target allows Spark "
                 f"{num(bound.get('target_spark_cpu_s'), 1)} CPU s on the job (1.5 × the "
                 f"local runner's {num(bound.get('local_job_cpu_s'), 1)}); Spark's frame alone "
                 f"takes {num(bound.get('spark_frame_cpu_s'), 1)} "
                 f"({ratio(bound.get('frame_over_target'))} the target), its whole job "
                 f"{num(bound.get('spark_job_cpu_s'), 1)} "
                 f"({ratio(bound.get('spark_over_local'))} the local runner's).")
    return "\n\n".join(parts)


def string_bound_figures(data: dict, _name: str) -> str:
    """bench_string_bound.py: each side's best wall and CPU seconds with the key as
    strings and as dictionary codes, and the share the codes saved (the most columnar
    strings could save)."""
    best = data.get("best") or {}
    runs = data.get("runs") or {}
    rows = [(f"{key} on {runner}", num(at(best, f"{key}_{runner}", "wall_s"), 2),
             num(at(best, f"{key}_{runner}", "tree_cpu_s"), 2),
             num(min((r.get("load_at_start", 0) for r in runs.get(f"{key}_{runner}", [])),
                     default=None), 1))
            for runner in ("local", "spark") for key in ("strings", "codes")]
    saved = data.get("most_saved_share") or {}
    return (table(("tailnum as (best of the rounds)", "wall s", "CPU s", "load at start"), rows)
            + f"\n\n{num(data.get('rows'))} rows on every side. The most columnar strings "
            f"could save: on the local runner {pct(100 * (at(saved, 'local', 'wall_s') or 0))} "
            f"of the wall time and {pct(100 * (at(saved, 'local', 'tree_cpu_s') or 0))} of the "
            f"CPU; on Spark {pct(100 * (at(saved, 'spark', 'wall_s') or 0))} and "
            f"{pct(100 * (at(saved, 'spark', 'tree_cpu_s') or 0))}.")
