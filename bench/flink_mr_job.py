"""The flights rules of ``bench/rules/flight_*patterns.epl`` as Flink SQL jobs.

Run with the Flink venv's Python (``bench/flink_env.sh`` makes it), not cep's: Flink is
the yardstick, never a cep dependency. ``bench/flink_mr_compare.py`` times this script
as a whole subprocess, so the JVM's start and the job's planning count, as cep's do.

``--workload match_recognize`` runs the two rules of ``flight_patterns.epl``;
``--workload event_patterns`` the nearest MATCH_RECOGNIZE to each rule of
``flight_event_patterns.epl``. Batch mode, parallelism 2 unless told, both rules as one
statement set (one job reading the input once). The input is a CSV of the three fields
the rules read (``tailnum,ts,dep_delay``), written beforehand from the flights JSON
lines, so Flink parses no field it does not need. ``ts`` is epoch milliseconds; the
rowtime is ``TO_TIMESTAMP_LTZ(ts, 3)``. Within an aircraft the file's times strictly
increase (bench/flights.py), so ``ORDER BY rt`` is cep's arrival order. Results go to
one directory of JSON lines per rule, with times as epoch milliseconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from flink_job import sql_path  # a sibling script, run by the same Flink venv
from pyflink.table import EnvironmentSettings, TableEnvironment

SOURCE = """
CREATE TABLE flights (
    tailnum STRING,
    ts BIGINT,
    dep_delay DOUBLE,
    rt AS TO_TIMESTAMP_LTZ(ts, 3),
    WATERMARK FOR rt AS rt
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv',
        'csv.null-literal' = '')
"""

MATCH_RECOGNIZE_SINKS = {
    "delay_spell": "tailnum STRING, spell_start BIGINT, last_late BIGINT, recovered BIGINT, "
                   "late_flights BIGINT, worst DOUBLE",
    "late_run": "tailnum STRING, run_start BIGINT, run_length BIGINT, mean_delay DOUBLE, "
                "back_on_time BIGINT",
}

MATCH_RECOGNIZE_QUERIES = {
    "delay_spell": """
INSERT INTO delay_spell
SELECT tailnum, spell_start, last_late, recovered, late_flights, worst
FROM flights MATCH_RECOGNIZE (
    PARTITION BY tailnum ORDER BY rt
    MEASURES A.ts AS spell_start, LAST(B.ts) AS last_late, C.ts AS recovered,
             COUNT(B.dep_delay) AS late_flights, MAX(B.dep_delay) AS worst
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B+ C) WITHIN INTERVAL '24' HOUR
    DEFINE A AS A.dep_delay <= 15, B AS B.dep_delay > 15, C AS C.dep_delay <= 15
)""",
    "late_run": """
INSERT INTO late_run
SELECT tailnum, run_start, run_length, mean_delay, back_on_time
FROM flights MATCH_RECOGNIZE (
    PARTITION BY tailnum ORDER BY rt
    MEASURES FIRST(A.ts) AS run_start, COUNT(A.dep_delay) AS run_length,
             AVG(A.dep_delay) AS mean_delay, B.ts AS back_on_time
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (A+ B)
    DEFINE A AS A.dep_delay >= 60, B AS B.dep_delay < 60
)""",
}

# The nearest Flink SQL to bench/rules/flight_event_patterns.epl. ``back_on_time``
# (``every a -> b WITHIN``) is ``A C*? B`` from every row: the first B after each A, any
# rows between, the same rows as cep's. ``still_late`` (``every a -> (timer:interval and
# not b)``) has no Flink SQL twin: MATCH_RECOGNIZE cannot fire on time alone, so ``A N*? T``
# reports an A when the aircraft's first row a day or more later comes with no on-time row
# before it (where cep's timer fires a day after A, with or without a later row).
EVENT_PATTERN_SINKS = {
    "back_on_time": "tailnum STRING, late_at BIGINT, late_by DOUBLE, on_time_at BIGINT",
    "still_late": "tailnum STRING, late_at BIGINT, late_by DOUBLE",
}

EVENT_PATTERN_QUERIES = {
    "back_on_time": """
INSERT INTO back_on_time
SELECT tailnum, late_at, late_by, on_time_at
FROM flights MATCH_RECOGNIZE (
    PARTITION BY tailnum ORDER BY rt
    MEASURES A.ts AS late_at, A.dep_delay AS late_by, B.ts AS on_time_at
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (A C*? B) WITHIN INTERVAL '24' HOUR
    DEFINE A AS A.dep_delay >= 60, B AS B.dep_delay < 15
)""",
    "still_late": """
INSERT INTO still_late
SELECT tailnum, late_at, late_by
FROM flights MATCH_RECOGNIZE (
    PARTITION BY tailnum ORDER BY rt
    MEASURES A.ts AS late_at, A.dep_delay AS late_by
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (A N*? T)
    DEFINE A AS A.dep_delay >= 60,
           N AS N.dep_delay IS NULL OR N.dep_delay >= 15,
           T AS T.rt >= A.rt + INTERVAL '24' HOUR
)""",
}

WORKLOADS = {"match_recognize": (MATCH_RECOGNIZE_SINKS, MATCH_RECOGNIZE_QUERIES),
             "event_patterns": (EVENT_PATTERN_SINKS, EVENT_PATTERN_QUERIES)}


def run(env: TableEnvironment, input_csv: Path, output_dir: Path, workload: str) -> None:
    """Plans both rules of ``workload`` as one job and runs it to the end of the file."""
    sinks, queries = WORKLOADS[workload]
    env.execute_sql(SOURCE.format(path=sql_path(input_csv)))
    statements = env.create_statement_set()
    for name, columns in sinks.items():
        env.execute_sql(f"CREATE TABLE {name} ({columns}) WITH ('connector' = 'filesystem', "
                        f"'path' = '{sql_path(output_dir / name)}', 'format' = 'json')")
        statements.add_insert_sql(queries[name])
    statements.execute().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", type=Path, required=True, help="tailnum,ts,dep_delay CSV")
    parser.add_argument("--output", type=Path, required=True, help="result directory")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="match_recognize")
    parser.add_argument("--mode", choices=["batch", "streaming"], default="batch")
    args = parser.parse_args()
    start = time.perf_counter()
    settings = (EnvironmentSettings.in_batch_mode() if args.mode == "batch"
                else EnvironmentSettings.in_streaming_mode())
    env = TableEnvironment.create(settings)
    env.get_config().set("parallelism.default", str(args.parallelism))
    ready = time.perf_counter()
    run(env, args.input, args.output, args.workload)
    end = time.perf_counter()
    print(json.dumps({"gateway_seconds": round(ready - start, 3),
                      "job_seconds": round(end - ready, 3)}))


if __name__ == "__main__":
    main()
