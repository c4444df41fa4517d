"""What Python string objects can still cost the window job, measured as a bound (issue
50: "strings stay columnar through the engine").

Strings held as dictionary codes would make the key column an integer column from the
reader to the sink. Their gain is bounded by a job whose key is an integer already: the
same flights file with each ``tailnum`` replaced by its dictionary code (a ``long``), run
with the same rule but ``tailnum long``. Every other field is the same, so what differs
between the two runs is exactly what the key column's strings cost: parsing them,
converting them to Python objects, hashing and factorizing them for routing and
grouping, gathering them in the window merge, and writing them out. A columnar design
cannot beat the coded run (it must still parse the strings and write them out), so
``1 - codes / strings`` is the most it could save.

Each side is a whole ``cep run`` process at its defaults (the local runner and Spark),
in turn within every round, its input read into the page cache first; wall seconds and
the process tree's CPU seconds as :mod:`bench_spark_frame` reads them. Both sides must
give the same number of rows, more than zero.

    python bench/bench_string_bound.py [--copies 10] [--rounds 2]

Writes ``bench/results/string_bound.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
from bench_spark_frame import tree_cpu
from common import ROOT, warm, write_results
from flights import write_flights
from flink_compare import count_lines

RULE = ROOT / "bench" / "rules" / "flight_delay_avg.epl"


def coded_copy(data: Path, out: Path) -> Path:
    """``data`` with each ``tailnum`` replaced by its dictionary code (NULL stays NULL)."""
    frame = pd.read_json(data, lines=True, dtype={"tailnum": str})
    codes, _ = pd.factorize(frame["tailnum"])
    frame["tailnum"] = pd.array(codes, dtype="Int64")
    frame.loc[codes < 0, "tailnum"] = pd.NA
    frame.to_json(out, orient="records", lines=True)
    return out


def coded_rule(out: Path) -> Path:
    """The window rule with ``tailnum`` declared a ``long``."""
    text = RULE.read_text()
    if "tailnum string" not in text:
        raise SystemExit(f"{RULE} no longer declares 'tailnum string'")
    out.write_text(text.replace("tailnum string", "tailnum long"))
    return out


def rows_in(out: Path) -> int:
    """Output rows: one file locally, a directory of part files on Spark (the
    ``.jsonl.order`` files beside them are not rows)."""
    files = sorted(out.rglob("*.jsonl")) if out.is_dir() else [out]
    return sum(count_lines(p) for p in files)


def run(rule: Path, data: Path, runner: str, tmp: Path) -> dict[str, Any]:
    """One ``cep run`` of ``rule`` over ``data`` as a whole process."""
    out = tmp / ("out" if runner == "spark" else "out.jsonl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    command = [sys.executable, "-m", "cep.cli", "run", str(rule), "--input", str(data),
               "--output", str(out), "--dead-letter", str(tmp / "dead.jsonl"),
               "--runner", runner]
    result = tree_cpu(command, env, ROOT)
    result["rows"] = rows_in(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data = write_flights(args.copies)
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="cep-strings-") as tmp_dir:
        tmp = Path(tmp_dir)
        sides = {"strings": (RULE, data),
                 "codes": (coded_rule(tmp / "rule.epl"), coded_copy(data, tmp / "coded.jsonl"))}
        for _ in range(args.rounds):
            for runner in ("local", "spark"):
                for side, (rule, source) in sides.items():
                    warm(source)
                    load = os.getloadavg()[0]
                    with tempfile.TemporaryDirectory(dir=tmp) as run_dir:
                        result = {**run(rule, source, runner, Path(run_dir)),
                                  "load_at_start": round(load, 2)}
                    runs.setdefault(f"{side}_{runner}", []).append(result)
                    print(f"{side} {runner}: {result['wall_s']} s, {result['tree_cpu_s']} "
                          f"CPU s, {result['rows']:,} rows (load {load:.1f})", flush=True)
    rows = {r["rows"] for values in runs.values() for r in values}
    if len(rows) != 1 or 0 in rows:
        raise SystemExit(f"the sides disagree or are empty: rows {sorted(rows)}")
    best = {key: {"wall_s": min(r["wall_s"] for r in values),
                  "tree_cpu_s": min(r["tree_cpu_s"] for r in values)}
            for key, values in runs.items()}
    bound = {runner: {figure: round(1 - best[f"codes_{runner}"][figure]
                                    / best[f"strings_{runner}"][figure], 3)
                      for figure in ("wall_s", "tree_cpu_s")}
             for runner in ("local", "spark")}
    write_results({"rule": str(RULE.relative_to(ROOT)), "copies": args.copies,
                   "rows": rows.pop(), "runs": runs, "best": best,
                   "most_saved_share": bound}, "string_bound.json")


if __name__ == "__main__":
    main()
