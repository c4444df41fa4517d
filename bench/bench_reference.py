"""Reference evaluator throughput: 1M events, 4096 keys, one core.

Two rules: a per-key length-window aggregate and a per-key sequence pattern, measured
whole and in 100k-event batches; then one row per Esper construct of issue 15 (data-window
functions, the further windows, output rate limiting, an INSERT INTO chain), in 100k-event
batches (patterns: match-until, a filter reading an earlier tag, timer absence;
MATCH_RECOGNIZE). Events are built in memory (typed columns, as the input reader
produces them), so the figures are the evaluator's own; where the time goes is printed
from cProfile's top entries, of a second run (the timed one runs without the profiler).
Each rule first runs once, untimed, on the first 1,000 events (a running engine's
start-up costs are not its throughput).
Writes bench/results/reference.json (only when every row runs).

    python bench/bench_reference.py [--events 1000000] [--keys 4096]
    python bench/bench_reference.py --only match_recognize [--interpreter]

``--only`` runs the named rows (repeatable) and prints them; ``--interpreter`` runs
MATCH_RECOGNIZE and event patterns on their interpreters even where a compiled matcher
or a column kernel would take the rule (the figures before
``cep.engine.row_patterns.compiled`` and ``cep.engine.patterns.chain_rule``).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from common import make_events, write_results

import cep.engine.engine as engine_module
from cep.engine.row_patterns.rule import MatchRecognizeOperator
from cep.engine.table import SEQ
from cep.reference import run_reference
from grammar.compile import compile_text

SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
RULES = {
    "length_window_aggregate": SCHEMA + """
        @Name('agg') SELECT k, count(*) AS n, avg(v) AS mean, max(v) AS top
        FROM S#groupwin(k)#length(10) HAVING avg(v) > 0.9;""",
    "sequence_pattern": SCHEMA + """
        @Name('seq') SELECT a.v AS av, c.v AS cv
        FROM PATTERN [ every a=S(kind = 1) -> b=S(kind = 2) -> c=S(kind = 3)
                       WITHIN 10 sec ] PARTITION BY k;""",
}

ESPER_RULES = {
    "prev_prior": SCHEMA + """
        SELECT prev(1, v) AS p, prevtail(v) AS t, prevcount(v) AS c, prior(3, v) AS r
        FROM S#groupwin(k)#length(10);""",
    "firstlength": SCHEMA + "SELECT count(*) AS n, avg(v) AS a FROM S#groupwin(k)#firstlength(50);",
    "firsttime": SCHEMA + "SELECT count(*) AS n, avg(v) AS a FROM S#groupwin(k)#firsttime(5 min);",
    "time_length_batch": SCHEMA + """
        SELECT count(*) AS n, sum(v) AS s FROM S#groupwin(k)#time_length_batch(10 sec, 5);""",
    "unique": SCHEMA + "SELECT count(*) AS n, avg(v) AS a FROM S#groupwin(k)#unique(kind);",
    "output_last_every_events": SCHEMA + """
        SELECT avg(v) AS a FROM S#groupwin(k)#length(10) OUTPUT LAST EVERY 5 EVENTS;""",
    "output_all_every_time": SCHEMA + """
        SELECT avg(v) AS a FROM S#groupwin(k)#length(10) OUTPUT ALL EVERY 10 sec;""",
    "match_until": SCHEMA + """
        SELECT b[0].v AS b0, c.v AS cv FROM PATTERN [ every ([1:3] b=S(kind = 1)
            until c=S(kind = 2)) WITHIN 10 sec ] PARTITION BY k;""",
    "dependent_pattern": SCHEMA + """
        SELECT a.v AS av, b.v AS bv FROM PATTERN [ every a=S(kind = 1) ->
            b=S(kind = 2 AND v > a.v) WITHIN 10 sec ] PARTITION BY k;""",
    "or_pattern": SCHEMA + """
        SELECT a.v AS av, b.v AS bv, c.v AS cv FROM PATTERN [ every a=S(kind = 1) ->
            (b=S(kind = 2) or c=S(kind = 3)) WITHIN 10 sec ] PARTITION BY k;""",
    "and_pattern": SCHEMA + """
        SELECT a.v AS av, b.v AS bv, c.v AS cv FROM PATTERN [ every a=S(kind = 1) ->
            (b=S(kind = 2) and c=S(kind = 3)) WITHIN 10 sec ] PARTITION BY k;""",
    "repeat_in_chain": SCHEMA + """
        SELECT a.v AS av, b[1].v AS b1, c.v AS cv FROM PATTERN [ every a=S(kind = 1) ->
            [2] b=S(kind = 2) -> c=S(kind = 3) WITHIN 10 sec ] PARTITION BY k;""",
    "group_pattern": SCHEMA + """
        SELECT a.v AS av, c.v AS cv FROM PATTERN [ every (a=S(kind = 1) ->
            b=S(kind = 2) -> c=S(kind = 3)) WITHIN 10 sec ] PARTITION BY k;""",
    "group_and_pattern": SCHEMA + """
        SELECT a.v AS av, c.v AS cv FROM PATTERN [ every (a=S(kind = 1) ->
            (b=S(kind = 2) and c=S(kind = 3))) WITHIN 10 sec ] PARTITION BY k;""",
    "once_pattern": SCHEMA + """
        SELECT a.v AS av, c.v AS cv FROM PATTERN [ a=S(kind = 1) -> b=S(kind = 2) ->
            c=S(kind = 3) WITHIN 10 sec ] PARTITION BY k;""",
    "timer_absence": SCHEMA + """
        SELECT a.v AS av FROM PATTERN [ every a=S(kind = 1) ->
            (timer:interval(5 sec) and not b=S(kind = 2)) ] PARTITION BY k;""",
    "match_recognize": SCHEMA + """
        SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a,
            count(B.v) AS n PATTERN (A B+ C) WITHIN 10 sec
            DEFINE B AS B.v < prev(B.v), C AS C.v > A.v );""",
    "insert_into_chain": SCHEMA + """
        INSERT INTO High SELECT k, ts, v FROM S#groupwin(k)#length(10) HAVING v > avg(v) * 1.5;
        SELECT count(*) AS n, max(v) AS top FROM High#groupwin(k)#time(30 sec);""",
}


def measure(name: str, text: str, events: dict, batch_size: int | None) -> dict:
    module = compile_text(text, name)
    # once on the first 1,000 events, untimed: what a running engine paid at its start
    # (numba loading a compiled kernel from its disk cache, ~1 s) is not throughput
    run_reference(module, {"S": {k: v[:1000] for k, v in events.items()}}, batch_size)
    # timed without the profiler (it adds a cost per Python call, not per numpy call,
    # so it would bend the rows against each other), then profiled for where time goes
    start = time.perf_counter()
    out = run_reference(module, {"S": events}, batch_size)
    seconds = time.perf_counter() - start
    profile = cProfile.Profile()
    profile.enable()
    run_reference(module, {"S": events}, batch_size)
    profile.disable()
    n = len(events[SEQ])
    stats = pstats.Stats(profile).sort_stats("tottime")
    top = []
    for (file, line, func), (_, _, tottime, _, _) in list(stats.stats.items()):
        top.append((tottime, f"{Path(file).name}:{line}({func})"))
    top.sort(reverse=True)
    result = {
        "rule": name, "events": n, "batch_size": batch_size, "seconds": round(seconds, 3),
        "events_per_s": round(n / seconds), "outputs": len(out["seq"]),
        "top_self_time": [{"where": w, "seconds": round(t, 3)} for t, w in top[:8]],
    }
    print(f"{name:26s} batch={batch_size!s:>8}: {n:,} events in {seconds:6.2f}s = "
          f"{n / seconds:>10,.0f} events/s, {result['outputs']:,} outputs")
    for entry in result["top_self_time"][:5]:
        print(f"    {entry['seconds']:7.3f}s  {entry['where']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=4096)
    parser.add_argument("--only", action="append", choices=[*RULES, *ESPER_RULES],
                        help="run only this row (repeatable); nothing is written")
    parser.add_argument("--interpreter", action="store_true",
                        help="MATCH_RECOGNIZE and event patterns on the interpreters, "
                        "not the compiled matcher and the pattern kernels")
    args = parser.parse_args()
    MatchRecognizeOperator.use_kernel = not args.interpreter
    engine_module.PATTERN_KERNEL = not args.interpreter
    events = make_events(args.events, args.keys)
    results = []
    for name, text in RULES.items():
        if not args.only or name in args.only:
            for batch in (None, 100_000):
                results.append(measure(name, text, events, batch))
    for name, text in ESPER_RULES.items():
        if not args.only or name in args.only:
            results.append(measure(name, text, events, 100_000))
    if args.only:
        return
    write_results({"events": args.events, "keys": args.keys, "results": results},
                  "reference.json")


if __name__ == "__main__":
    main()
