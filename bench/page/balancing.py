"""Sections of the result files about balancing: FSD per strategy, the DLB paper's
Table 1, the Balancer's gate, handing moved keys over, and the simulated strategies.
"""

from __future__ import annotations

from pathlib import Path

from page.figures import at, num, pct, ratio, table, yes_no

_ROOT = Path(__file__).resolve().parents[2]


def result_file(path: str) -> str:
    """A result file as a result names it, or where it is now: ``superseded/`` keeps
    the files the page no longer shows, which older results still name."""
    moved = Path("bench/results/superseded") / Path(path).name
    if not (_ROOT / path).exists() and (_ROOT / moved).exists():
        return str(moved)
    return path


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


def balance_cost_figures(data: dict, _name: str) -> str:
    """bench_balance_cost.py: each part's per-batch cost by side and case, and the bound."""
    parts = ("route", "handoff_maps", "balancer")
    rows = [(c.get("side", ""), c.get("strategy", ""),
             *(num(at(c, "cpu_ms_per_batch", p), 2) for p in parts),
             num(at(c, "wall_ms_per_batch", "balancer"), 1),
             num(c.get("server_cpu_ms_per_batch"), 1),
             num(at(c, "mongo_round_trips_per_batch", "balancer"), 2),
             num(c.get("overrides_per_map_median")),
             num(c.get("critical_path_ms_per_batch"), 1))
            for c in at(data, "cells") or [] if isinstance(c, dict)]
    sides = ", ".join(f"{k} = {v}" for k, v in (at(data, "sides") or {}).items())
    head = (f"Keys of `{data.get('input', '')}` in batches of {num(data.get('batch_size'))}, "
            f"{num(data.get('engines'))} engines, {num(data.get('rounds'))} interleaved "
            f"rounds, medians; milliseconds per batch. Sides: {sides}.")
    bound_rows = [(b.get("file", ""), num(b.get("kg_batch_ms")), pct(
                      100 * b["engines_share"] if isinstance(b.get("engines_share"), float)
                      else None), ratio(b.get("kg_headroom_events")),
                   ratio(b.get("best_x_kg")), ratio(b.get("no_gain_x_kg")))
                  for b in at(data, "bounds") or [] if isinstance(b, dict)]
    return (head + "\n\n" + table(
        ("side", "case", "route CPU", "engines' maps CPU (5)", "Balancer CPU",
         "Balancer wall", "server CPU", "Balancer round trips", "overrides a map",
         "critical path"), rows)
        + "\n\nWhat balancing can buy on the emulated nodes, from KG's runs there, and what "
        "the machinery (the `after` side's DLB-L critical path) costs a batch where it buys "
        "nothing:\n\n" + table(("KG run", "batch ms", "engines' share", "KG headroom",
                                 "best × KG", "no-gain × KG"), bound_rows)
        + _end_to_end(at(data, "end_to_end")))


def _end_to_end(runs: object) -> str:
    """The ``cep bench --nodes 5`` runs of each side (``--end-to-end``), if any."""
    if not isinstance(runs, list) or not runs:
        return ""
    rows = [(r.get("side", ""), r.get("input", ""), str(r.get("date") or "")[:16],
             num(len(r.get("runs") or []) // 2),
             " / ".join(num(x, 1) for x in r.get("load_average_at_start") or []),
             ratio(at(r, "x_kg", "dlb-l")), ratio(at(r, "skewed_x_kg", "dlb-l")),
             pct(100 * at(r, "bound", "engines_share")
                 if isinstance(at(r, "bound", "engines_share"), float) else None),
             " / ".join(ratio(at(r, "bound", k))
                        for k in ("kg_headroom_events", "kg_headroom_cpu")),
             " / ".join(ratio(at(r, "bound", k)) for k in ("best_x_kg", "best_x_kg_cpu")),
             " / ".join(_share(at(r, k, "dlb-l")) for k in ("captured", "captured_cpu")),
             " ".join(num(x.get("seconds"), 1) for x in r.get("runs") or []
                      if isinstance(x, dict)),
             yes_no(r.get("equal_to_kg")))
            for r in runs if isinstance(r, dict)]
    return ("\n\nEnd to end, `cep bench --nodes 5 --strategies kg,dlb-l --rounds R` per "
            "side and input (runs in the order kg, dlb-l, kg, dlb-l, ...); only figures "
            "measured at a low load mean anything. Sides: before and after as above; "
            "gate: 07a2749 (the gate also weighs the keys' measured work); shape: "
            "02ad90c (a key's measured work split by a fitted cost per key and per "
            "event); settle: ef302d3 (the gate also holds on a batch in which keys "
            "arrived); fold: ab3750b (the state log's fold bar counts imported "
            "bytes). The bound is the most any key placement could buy there, from the "
            "file's own KG runs (medians): the engines' share of KG's batches and KG's "
            "headroom give `1 / (1 - share (1 - 1/headroom))`, with moving keys free, "
            "by events and by the engines' CPU seconds (an FSD engine's work follows the "
            "keys it touches more than its events); `of the gain` is DLB-L's gain over KG "
            "as a share of each bound's (`-` where the bound allows none):\n\n" + table(
                ("side", "input", "measured", "rounds", "load at start", "DLB-L × KG",
                 "skewed × KG", "engines' share", "KG headroom events / CPU",
                 "bound × KG events / CPU", "of the gain events / CPU", "run seconds",
                 "= KG"), rows))


def _share(value: object) -> str:
    """A share of a bound's gain, in percent; ``-`` where there was no gain to share."""
    return pct(100 * value, 0) if isinstance(value, int | float) else "-"


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



def speedup_figures(data: dict, name: str) -> str:
    """bench_speedup.py: speedup per strategy and node count beside the ideal line and the
    bounds, the bound's parts, and each point's throughput and machine load."""
    nodes = data.get("nodes") or []
    curves = data.get("speedup") or {}
    bound = data.get("bound") or {}
    names = list(curves)
    cores = data.get("cpus") or 2
    rows = [(num(n), num(at(data, "ideal", i), 2), num(at(bound, "amdahl", i), 2),
             num(at(bound, "key_preserving", i), 2), num(at(bound, "machine", i), 2),
             num(at(bound, "machine_at_cost", i), 2),
             *(num(at(curves, s, i), 2) for s in names)) for i, n in enumerate(nodes)]
    head = (f"FSD (`{data.get('rules', '')}`) over `{data.get('input', '')}` in batches of "
            f"{num(data.get('batch_size'))}, N emulated nodes of "
            f"{num(data.get('node_cpus'), 2)} cores with an engine each; "
            f"{num(data.get('sweeps'))} sweep(s) of N, one `cep bench --nodes N` per point "
            "(the strategies in turn, KG first). Speedup is a strategy's tweets/s over the "
            "measured window against KG's on 1 node "
            f"({num(data.get('kg_tweets_per_s_at_1'))} tweets/s). The bounds come from the "
            f"1-node KG run(s): of {num(bound.get('wall_s'), 1)} s, the node was busy "
            f"{num(bound.get('node_busy_s'), 1)} s (its engine "
            f"{num(bound.get('engines_s'), 1)} s) and the driver's serial part took "
            f"{num(bound.get('serial_s'), 1)} s ({pct(100 * (bound.get('serial_share') or 0))} — "
            "Amdahl's bound); a batch's heaviest key held "
            f"{pct(100 * (bound.get('heaviest_key_share') or 0))} of its engine seconds "
            "(the key-preserving bound)"
            + (f"; the 1-node KG windows kept {num(cores / bound['machine_cap'], 2)} of the "
               f"machine's {num(cores)} cores busy, so no N can pass "
               f"{ratio(bound.get('machine_cap'))} KG's 1-node rate (the machine's bound, "
               "if an event costs no less CPU on more nodes)"
               if bound.get("machine_cap") else "")
            + ". Load averages: "
            f"{num(data.get('load_average_peak'), 2)} at the highest (1-minute, 2 cores).")
    image = ("![Speedup of throughput against the nodes, beside the ideal line and the "
             f"bounds](images/{name.removesuffix('.json')}.png)")
    points = [(num(p.get("nodes")), num(p.get("sweep")),
               " / ".join(num(x, 2) for x in p.get("load_average_before") or []),
               " / ".join(num(x, 2) for x in p.get("load_average_after") or []),
               num(p.get("seconds"), 0),
               *(num(at(p, "strategies", s, "tweets_per_s"), 0) for s in names),
               yes_no(all(at(p, "strategies", s, "equal_to_kg") is not False
                          for s in names if s != "pkg")),
               _share(at(p, "strategies", "kg", "busiest_node_quota_used", 0)),
               num(at(p, "strategies", "kg", "machine_cores_busy", 0), 2))
              for p in data.get("points") or [] if isinstance(p, dict)]
    return "\n\n".join((
        head, image,
        table(("nodes", "ideal", "bound: frame", "bound: key whole", "bound: machine",
               "bound: machine at N's cost", *names), rows),
        "Each point (tweets/s; `= KG`: every key-preserving strategy's first stories "
        "equal KG's; `KG node use`: the share of its quota KG's busiest node used over "
        "its run, well under 100% where the node waited for CPU or for the driver; `KG machine "
        "cores`: the whole machine's busy cores over KG's measured window):",
        table(("nodes", "sweep", "load before", "load after", "s", *names, "= KG",
               "KG node use", "KG machine cores"), points)))


def _share(value: object) -> str:
    return pct(100 * value, 0) if isinstance(value, int | float) else ""


def _against_unscaled(data: dict) -> str:
    """The sentence on the counterfactual run, where the file has one."""
    same = data.get("against_unscaled") or {}
    if not same:
        return ""
    batches = same.get("batches") or []
    return (f" **Against the same job left at {num(data.get('lo'))} engines on "
            f"{num(data.get('start_nodes'))} nodes, over the same batches "
            f"({num(batches[0]) if batches else ''}–{num(batches[-1]) if batches else ''}): "
            f"{ratio(same.get('steady'))}** ({num(same.get('scaled_events_per_s'), 0)} "
            f"against {num(same.get('unscaled_events_per_s'), 0)} events/s; FSD's batches "
            "cost more as the run goes on, so the first phase understates the scale-out); "
            f"{ratio(same.get('with_change'))} from the batch that hands the keys over to "
            "the phase's end, the change's cost included. The unscaled run's events equal "
            f"KG's: {yes_no(at(data, 'unscaled', 'events_equal_kg'))}.")


def first(values: list | None):
    """The first of ``values``, None for none."""
    return values[0] if values else None


def _kg_nodes(data: dict) -> str:
    """Where the KG run ran: the whole cluster after the scaled run, which after a leave
    is the nodes still there (a node stopped late may still be)."""
    if data.get("leave_after") is None:
        return "on all the nodes"
    nodes = at(data, "kg_fixed", "nodes") or data.get("start_nodes")
    return f"on the {num(nodes)} nodes there after the leave"


def _same_batches_text(data: dict) -> str:
    """KG started at the high count over the hi phase's batches, and where Spark ran the
    engines' tasks there (the event log), where the file has them."""
    same = data.get("kg_fixed_same_batches") or {}
    text = ""
    if same:
        batches = same.get("batches") or []
        over_unscaled = same.get("kg_over_unscaled")
        text = (f" KG at {num(data.get('hi'))} engines from the start {_kg_nodes(data)} over "
                f"the same batches ({num(batches[0]) if batches else ''}–"
                f"{num(batches[-1]) if batches else ''}): "
                f"{num(same.get('kg_events_per_s'), 0)} events/s"
                + (f", **{ratio(over_unscaled)} the unscaled run's** (what the scale-out "
                   "can give at most here)" if over_unscaled is not None else "")
                + f"; the scaled phase ran at {ratio(same.get('scaled_over_kg'))} KG's.")
    for name, found in (data.get("placement") or {}).items():
        summary = (found or {}).get("summary") or {}
        if not summary or name == "unscaled":
            continue
        per = summary.get("engine_tasks_per_executor") or {}
        text += (f" Spark's event log, {name} run: engine tasks per executor over those "
                 f"batches {', '.join(f'{k}: {num(v)}' for k, v in per.items())} (at most "
                 f"{num(summary.get('most_engine_tasks_on_one_executor'))} on one executor "
                 f"in a batch), the longest wait for a slot "
                 f"{num(summary.get('longest_engine_wait_s'), 2)} s, the engines' stage "
                 f"{num(summary.get('engines_span_s'), 2)} s and the input's "
                 f"{num(summary.get('input_span_s'), 2)} s of a "
                 f"{num(summary.get('wall_s'), 2)} s batch (medians).")
    return text


def scale_midrun_figures(data: dict, _name: str) -> str:
    """bench_scale_midrun.py: throughput per phase of a job scaled mid-run, the ratios
    against the bounds, each change's keys, bytes and extra time, and the equality."""
    if data.get("lo") == data.get("hi"):
        return _never_scaled(data)
    phases = [p for p in data.get("phases") or [] if isinstance(p, dict)]
    rows = [(f"{num(p.get('first_batch'))}–{num(p.get('end_batch'))}",
             "/".join(num(e) for e in p.get("engines") or []), num(p.get("nodes")),
             num(p.get("events_per_s"), 0), num(p.get("batch_s"), 2),
             ", ".join(num(b) for b in p.get("measured_batches") or []),
             " / ".join(num(c, 2) for c in p.get("node_cores_busy") or []))
            for p in phases]
    changes = [(f"{num(c.get('from'))} → {num(c.get('to'))}", num(c.get("at_batch")),
                num(c.get("keys")), num(c.get("bytes")), num(c.get("handing_over_s"), 2),
                num(c.get("first_new_s"), 2), num(c.get("extra_s"), 2),
                ratio(c.get("extra_over_normal")))
               for c in data.get("change_costs") or [] if isinstance(c, dict)]
    ratios = data.get("ratios") or {}
    bound = data.get("bound") or {}
    own = data.get("bound_from_first_phase") or {}
    lo, hi = data.get("lo"), data.get("hi")
    joined = data.get("start_nodes") != data.get("nodes")  # nodes joined mid-run
    head = (f"FSD (`{data.get('rules', '')}`) over `{data.get('input', '')}` in batches of "
            f"{num(data.get('batch_size'))} under `{data.get('strategy')}`"
            + (f" (`--load {data['load']}`)" if data.get("load") not in (None, "events") else "")
            + ", on emulated "
            f"nodes of {num(data.get('node_cpus'), 2)} cores: {num(lo)} engines on "
            + (f"{num(data.get('start_nodes'))} nodes, then {num(data.get('nodes'))} nodes "
               "(the rest join while the job runs), then"
               if data.get("start_nodes") != data.get("nodes") else
               f"{num(data.get('nodes'))} nodes (all there from the start), then")
            + f" `cep scale` to {num(hi)} engines, "
            f"then back to {num(lo)}"
            + (", then the nodes that joined leave" if _leave(data) else "")
            + ". Events/s is the median over a phase's measured "
            "batches (a batch's events over the wall time from the commit before it). "
            f"**{num(lo)} → {num(hi)} engines{' and nodes' if joined else ''}: "
            f"{ratio(ratios.get('out'))}** (target 1.6×, ideal 2×)"
            + (f": the nodes alone {ratio(ratios.get('nodes'))}, the engines on the same "
               f"nodes {ratio(ratios.get('engines'))}" if joined else "")
            + f"; back to {num(lo)}: "
            f"{ratio(ratios.get('in'))}. KG at a fixed {num(hi)} engines {_kg_nodes(data)} "
            f"from the start: {num(at(data, 'kg_fixed', 'events_per_s'), 0)} events/s over "
            f"its batches {num(first(at(data, 'kg_fixed', 'measured_batches')))} on, "
            f"{ratio(data.get('kg_fixed_over_first'))} the first phase's. "
            + (f"Bounds: Amdahl's from the first phase {ratio(own.get('amdahl'))} (its "
               f"nodes busy {pct(100 * own['busy_share'], 0) if own.get('busy_share') else ''}"
               " of their quota); from " if joined else "Bounds from ")
            + f"`{result_file(bound.get('file', 'bench/results/speedup.json'))}` at the same "
            "node size "
            f"{ratio(bound.get('amdahl'))} (frame) and {ratio(bound.get('key_preserving'))} "
            "(key whole). Spark's `spark.locality.wait`: "
            f"{data.get('locality_wait') or 'its default (3s)'}. Output rows against KG's "
            "at a fixed "
            f"{num(hi)} engines: {num(data.get('output_rows'))} against "
            f"{num(data.get('kg_rows'))}, {num(data.get('differences'))} differences: "
            + ("**equal**" if data.get("events_equal_kg") else "**different**")
            + ". Load averages: "
            + " / ".join(num(x, 2) for x in data.get("load_average_scaled") or [])
            + " at the scaled run's start."
            + _against_unscaled(data) + _same_batches_text(data))
    return "\n\n".join(part for part in (
        head,
        table(("batches", "engines", "nodes", "events/s", "median batch (s)", "measured",
               "node cores busy"), rows),
        "Each change (the batch before it hands the keys over, the first at the new count "
        "adopts them; extra time against the phases' median batches, and over the shorter "
        "of the two: the issue's target is at most 1×):",
        table(("change", "at batch", "keys", "bytes", "handing over (s)", "first new (s)",
               "extra (s)", "over a batch"), changes),
        _leave_text(data)) if part)


def _never_scaled(data: dict) -> str:
    """A run with ``--lo`` equal to ``--hi``: the strategy at that count from the start,
    never scaled, beside KG at the same count (the yardstick of a scaled run's phase)."""
    same = data.get("kg_fixed_same_batches") or {}
    phase = next((p for p in data.get("phases") or [] if isinstance(p, dict)), {})
    return (f"FSD (`{data.get('rules', '')}`) over `{data.get('input', '')}` in batches of "
            f"{num(data.get('batch_size'))} under `{data.get('strategy')}` at "
            f"{num(data.get('hi'))} engines on {num(data.get('nodes'))} emulated nodes of "
            f"{num(data.get('node_cpus'), 2)} cores from the start, never scaled: "
            f"{num(phase.get('events_per_s'), 0)} events/s (median batch "
            f"{num(phase.get('batch_s'), 2)} s), **{ratio(same.get('scaled_over_kg'))} KG's** "
            f"at the same count over the same batches "
            f"({num(same.get('kg_events_per_s'), 0)} events/s). Spark's "
            f"`spark.locality.wait`: {data.get('locality_wait')}. Output rows against KG's: "
            f"{num(data.get('output_rows'))} against {num(data.get('kg_rows'))}, "
            f"{num(data.get('differences'))} differences: "
            + ("**equal**" if data.get("events_equal_kg") else "**different**")
            + ". Load averages: "
            + " / ".join(num(x, 2) for x in data.get("load_average_scaled") or [])
            + " at the run's start." + _same_batches_text({
                **data, "kg_fixed_same_batches": {},
                "placement": {(data.get("strategy") if k == "scaled" else k): v
                              for k, v in (data.get("placement") or {}).items()}}))


def _leave(data: dict) -> dict | None:
    """The leave step of a ``--leave-after`` run, once the nodes were gone."""
    return next((s for s in data.get("steps") or [] if isinstance(s, dict)
                 and s.get("action") == "leave" and s.get("nodes")), None)


def _leave_text(data: dict) -> str:
    """How the joined nodes left (``--leave-after``) and what it cost; "" without."""
    step = _leave(data)
    if step is None:
        return ""
    nodes = [n for n in step["nodes"] if isinstance(n, dict)]
    graceful = all(n.get("decommissioned") and not n.get("forced") for n in nodes)
    cost = data.get("leave_cost") or {}
    return (f"The {len(nodes)} nodes that joined leave after batch "
            f"{num(step.get('after_batch'))}, once a batch ran at {num(data.get('lo'))} "
            "engines: decommissioned (SIGPWR to each worker, "
            + ("Spark's graceful path: its executors finished their tasks and exited"
               if graceful else "**stopped anyway**: Spark's decommissioning did not "
               "finish in time") + "), then stopped; "
            f"{num(max((n.get('gone_s') or 0 for n in nodes), default=None), 1)} s from the "
            f"signal to gone, {num(step.get('alive_workers'))} ALIVE workers after. "
            + (_leave_cost_text(data, cost) if data.get("left_at_batch") is not None else
               "No batch began without them before the input ended."))


def _leave_cost_text(data: dict, cost: dict) -> str:
    """The batches a leave cost, and the rate of the nodes that stayed after it."""
    return (f"Batch {num(data.get('left_at_batch'))} is the first without them. The batches "
            f"from the leave to it ({', '.join(num(b) for b in cost.get('batches') or [])})"
            f" took {', '.join(num(x, 2) for x in cost.get('seconds') or [])} s: "
            f"{num(cost.get('extra_s'), 2)} s more than the phase after's median batch "
            f"({num(cost.get('normal_batch_s'), 2)} s), "
            f"{ratio(cost.get('extra_over_normal'))} a batch. {num(data.get('lo'))} engines "
            f"on the nodes that stayed run at {ratio(at(data, 'ratios', 'left'))} the rate "
            "of the same shape before the nodes joined.")


def batch_parts_figures(data: dict, _name: str) -> str:
    """batch_parts.py: per case and strategy, where a batch's wall time went on the
    emulated cluster (Spark's event log, medians over the measured batches). The node
    count is per case: a file may compare 1 node with 4."""
    rows = []
    cases = data.get("cases") or {}
    for name, case in cases.items():
        for run in case.get("runs") or []:
            tasks = run.get("input_tasks_per_executor") or {}
            batches = len(run.get("batches") or []) or 1
            rows.append((name, run.get("strategy", ""), num(case.get("nodes")),
                         num(run.get("wall_s"), 2),
                         num(run.get("driver_s"), 2), num(run.get("input_span_s"), 2),
                         num(sum(tasks.values()) / batches, 1),
                         num(run.get("engines_span_s"), 2)))
    first = next(iter(cases.values()), {})
    return (f"Input `{' '.join(first.get('inputs') or [])}`, batches of "
            f"{num(first.get('batch_size'))}, emulated nodes of "
            f"{num(first.get('cpus_per_node'), 2)} cores; medians over each run's batches "
            "but the first and the input's short tail, seconds.\n\n"
            + table(("case", "strategy", "nodes", "batch", "driver", "input stage",
                     "input tasks", "engines' stage"), rows))


def stage_cpu_figures(data: dict, _name: str) -> str:
    """stage_cpu.py: per strategy on N nodes, a batch against one node's: the ideal, each
    stage's CPU over one node's and its busiest node over the mean, in seconds."""
    rows = []
    for run in data.get("runs") or []:
        parts = run.get("against_one_node")
        if not parts:
            continue
        stage = {s: parts.get(s) or {} for s in ("input", "engines")}
        rows.append((run.get("strategy", ""), num(run.get("nodes")),
                     num(parts.get("wall_s"), 2), num(parts.get("ideal_s"), 2),
                     ratio(parts.get("speedup")),
                     *(_ratio_and_seconds(stage[s], "cpu_ratio", "cpu_extra_s") for s in stage),
                     *(_ratio_and_seconds(stage[s], "imbalance", "imbalance_s")
                       for s in stage),
                     num(parts.get("rest_s"), 2)))
    return (f"FSD, batches of {num(data.get('batch_size'))} tweets, emulated nodes of "
            f"{num(data.get('cpus_per_node'), 2)} cores; medians over each run's batches but "
            "the first and the input's short tail, seconds of a batch; each side of a "
            "stage against one node running KG.\n\n"
            + table(("strategy", "nodes", "batch", "ideal", "speedup", "input CPU",
                     "engines' CPU", "input busiest/mean", "engines' busiest/mean",
                     "rest"), rows))


def _ratio_and_seconds(stage: dict, ratio_key: str, seconds_key: str) -> str:
    """``1.12× (+0.46 s)``: a ratio and the seconds of a batch it costs."""
    seconds = stage.get(seconds_key)
    return (f"{ratio(stage.get(ratio_key))} ({'+' if (seconds or 0) >= 0 else ''}"
            f"{num(seconds, 2)} s)")
