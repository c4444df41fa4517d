"""Sections of the result files that measure one part of cep alone: the command line,
the reference evaluator, MATCH_RECOGNIZE's matcher, the readers, the state codec, the text
and user functions, the ``tweets`` generator, event time; and the generic section of a
file no section describes yet.
"""

from __future__ import annotations

from page.figures import at, num, pct, table, yes_no


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


def readers_figures(data: dict, _name: str) -> str:
    rows = [(kind, num(at(v, "best_s"), 3), num(at(v, "lines_per_s")))
            for kind, v in data.items() if isinstance(v, dict) and "lines_per_s" in v]
    return (f"{num(data.get('n'))} records, best of {num(data.get('rounds'))}.\n\n"
            + table(("format", "best s", "records/s"), rows))


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
    return (f"{num(data.get('events'))} events through the reference evaluator, one "
            "stateless rule each; the functions run in the isolated worker process "
            f"(`--udf-timeout {num(data.get('udf_timeout_after'))}`, the default) and "
            "in the job's process (`--udf-timeout 0`), whole processes in "
            f"{num(data.get('rounds'))} interleaved rounds, the best of each side.\n\n"
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


def partitions_figures(data: dict, _name: str) -> str:
    """The same few engines with their partitions forced to each side's P."""
    runs = data.get("runs", [])
    rows = [(num(r.get("partitions")), num(r.get("median_trigger_ms")),
             num(r.get("seconds"), 1), " / ".join(num(x, 1) for x in r.get("load", [])))
            for r in runs]
    return (f"{num(data.get('engines'))} engines (key grouping by key maps, "
            f"`--engines auto:3-16` held at 3), the rule `{data.get('rule')}`, "
            f"{num(data.get('events'))} events in batches of {num(data.get('batch_size'))} "
            f"on `{data.get('master')}`; each run a whole process, the sides interleaved; "
            "the median batch is Spark's trigger time over the batches after the first "
            "two.\n\n"
            + table(("partitions P", "median batch (ms)", "run (s)", "load average"), rows))



def autoscale_step_figures(data: dict, _name: str) -> str:
    """``--engines auto`` under a rate step: its changes, per step, and the equality."""
    steps = data.get("steps", [])
    starts = data.get("step_starts_s", [])
    rows = [(f"{num(s.get('rate'))}/s from {num(starts[i] if i < len(starts) else None, 0)} s",
             num(s.get("changes")),
             ", ".join(f"{d.get('action')} to {d.get('target')}"
                       for d in s.get("decisions", [])) or "none",
             " → ".join(num(e) for e in (s.get("engines_start"), s.get("engines_end"))),
             "yes" if s.get("kept_up") else "no", num(s.get("w_median"), 2),
             num(s.get("batch_wall_median_s"), 2))
            for i, s in enumerate(steps)]
    changes = [(c.get("action"), num(c.get("target")), num(c.get("decided_s"), 0),
                num(c.get("applied_s"), 0)) for c in data.get("changes", [])]
    return (f"The rule `{data.get('rule')}` followed from one growing file under "
            f"`--engines auto:{'-'.join(str(b) for b in data.get('bounds', []))} "
            f"--strategy {data.get('strategy')}`, every engine made "
            f"{num(data.get('slow_engine_factor'))}× slower with `--slow-engine` (it sleeps "
            "in proportion to its work, so the job is engine-bound without taking the "
            "machine's cores); the base rate, four times it, then the base rate again. "
            f"{num(data.get('events'))} events; output rows "
            f"{num(data.get('output_rows'))} against the reference's "
            f"{num(data.get('reference_rows'))}: "
            + ("**equal**" if data.get("events_equal_reference") else "**different**")
            + ".\n\n"
            + table(("step", "changes", "decisions", "engines (start → end)",
                     "kept up at its end", "median w", "median batch (s)"), rows)
            + "\n\n" + table(("change", "to", "decided (s)", "applied (s)"), changes))


def executor_heap_figures(data: dict, _name: str) -> str:
    """bench_executor_heap.py: per executor, the most heap, old generation, JVM and
    Python workers' resident memory over the run, and per batch the most of them."""
    batches = [b for b in data.get("batches", []) if isinstance(b, dict)]
    names = sorted({n for b in batches for n in b.get("executors_mb", {})})
    over = {n: {f: max((at(b, "executors_mb", n, f) or 0) for b in batches)
                for f in ("heap", "old", "rss", "python")} for n in names}
    peaks = table(("executor", "heap MB", "old gen MB", "live after a full GC MB",
                   "JVM RSS MB", "Python workers MB"),
                  [(f"`{n}`", num(v["heap"]), num(v["old"]),
                    num(at(data, "gc_log", n, "most_live_after_full_gc_mb")),
                    num(v["rss"]), num(v["python"])) for n, v in over.items()])
    rows = [(num(b.get("batch")), num(b.get("state_bytes")),
             num(at(b, "saved", "base")),
             " / ".join(num(at(b, "executors_mb", n, "heap")) for n in names),
             " / ".join(num(at(b, "executors_mb", n, "python")) for n in names))
            for b in batches]
    ended = ("ran to its end" if data.get("completed")
             else f"**failed** after {num(data.get('batches_committed'))} batches: "
                  f"{str(data.get('error') or '')[:300]}")
    return (f"FSD over `tweets:n={num(data.get('n'))}` in batches of "
            f"{num(data.get('batch_size'))}, `{data.get('strategy')}` at "
            f"{num(data.get('engines'))} engines on {num(data.get('nodes'))} emulated nodes "
            f"of {num(data.get('node_cpus'), 2)} cores, executors of a 1 GB heap; code: "
            f"{data.get('side') or 'not recorded'}. The run {ended} "
            f"({num(data.get('seconds'))} s, load at its start "
            f"{data.get('load_average_run')}). The most over the run: heap used and old "
            "generation (`jstat`, each second), heap still live after a full collection "
            "(the GC log: what the executor needed at once), resident memory.\n\n"
            + peaks + "\n\nPer batch: the engines' state bytes written (summed), how many "
            "were bases, and per executor the most heap and Python workers' memory (MB).\n\n"
            + table(("batch", "state bytes", "bases", "heap MB", "Python MB"), rows))
