"""Where a ``cep bench --nodes N`` run's batches spend their wall time, from Spark's event
log: per strategy, the medians over its measured batches of the batch's wall time, the
driver's part, the input stage's span and tasks, and the engines' stage span
(``scale_tasks.py`` reads the log). Why: the speedup curve (``bench_speedup.py``) says how
much more nodes give, not which part of a batch did not shrink; this tells the input's
tasks from the engines' and from Spark's frame on the driver.

Run ``cep bench`` with Spark's event log on, through PySpark's own switch:

    PYSPARK_SUBMIT_ARGS="--conf spark.eventLog.enabled=true \\
      --conf spark.eventLog.dir=file:DIR --conf spark.eventLog.compress=false pyspark-shell" \\
      cep bench rules/fsd.epl --input ... --nodes 5 --json RUN.json
    python bench/batch_parts.py NAME=DIR:RUN.json [...] --out batch-parts-5nodes.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import scale_tasks
from common import write_results


def breakdown(log_dir: Path, bench: dict) -> list[dict]:
    """Per run of the ``cep bench`` file (its measured runs are the log's last queries,
    in order), the medians over its batches but the first and the input's short tail."""
    events = list(scale_tasks.read_events(log_dir))
    found = scale_tasks.queries(events)
    runs = bench["results"]
    ordered = sorted(found, key=lambda q: found[q]["first_ms"])[-len(runs):]
    out = []
    for query, run in zip(ordered, runs, strict=True):
        elapsed = run["batch_elapsed_s"]
        walls = {b: elapsed[b] - elapsed[b - 1] for b in range(1, len(elapsed))}
        rows = scale_tasks.task_breakdown(events, query)
        summary = scale_tasks.summary(rows, range(1, len(elapsed) - 1), walls)
        out.append({"strategy": run["strategy"], "round": run["round"], **(summary or {})})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", metavar="NAME=LOG_DIR:BENCH.json")
    parser.add_argument("--out", default="batch-parts-5nodes.json")
    args = parser.parse_args()
    cases = {}
    for spec in args.cases:
        name, _, paths = spec.partition("=")
        log_dir, _, bench_file = paths.partition(":")
        bench = json.loads(Path(bench_file).read_text())
        cases[name] = {"inputs": bench.get("inputs"), "nodes": bench.get("nodes"),
                       "cpus_per_node": bench.get("cpus_per_node"),
                       "batch_size": bench.get("batch_size"), "measured": bench.get("date"),
                       "load_average_at_start": bench.get("load_average_at_start"),
                       "runs": breakdown(Path(log_dir), bench)}
        for run in cases[name]["runs"]:
            print(name, run["strategy"], {k: run.get(k) for k in (
                "wall_s", "driver_s", "input_span_s", "engines_span_s")})
    write_results({"bench": "batch_parts", "cases": cases}, args.out)


if __name__ == "__main__":
    main()
