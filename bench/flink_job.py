"""Issue 14's yardstick: the flight-delay rule as a Flink SQL job (PyFlink 2.3).

Run with the Flink venv's Python (``bench/flink_env.sh`` makes it), not cep's: Flink is
the comparison, never a cep dependency. ``bench/flink_compare.py`` times this script as a
whole subprocess, so the JVM's start and the job's planning count, as cep's do.

The query is ``bench/rules/flight_delay_avg.epl`` in Flink SQL: streaming mode,
parallelism 2, the JSON-lines file through the filesystem connector, per ``tailnum`` the
average ``dep_delay`` of the rows ``ROWS BETWEEN 4 PRECEDING AND CURRENT ROW`` ordered by
event time, kept when above the threshold. Why it reads the same rows in the same order
as cep:

* ``ts`` is epoch milliseconds (a BIGINT); the rowtime is ``TO_TIMESTAMP_LTZ(ts, 3)``.
  The file is in ``ts`` order and strictly increasing per aircraft (bench/flights.py),
  so the OVER window's order is cep's arrival order and no row is ever late (a late row
  would be dropped silently; the comparison of results would show it);
* ``dep_delay`` is DOUBLE: Flink's AVG of an INT column is an INT (truncated), cep's
  ``avg`` a double; AVG skips nulls in both.

Writes JSON lines ``{"tailnum", "ts", "avg_delay"}`` to part files under ``--output``
(a directory; the filesystem sink commits them when the bounded input ends).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pyflink.table import EnvironmentSettings, TableEnvironment

SOURCE = """
CREATE TABLE flights (
    tailnum STRING,
    dep_delay DOUBLE,
    ts BIGINT,
    rt AS TO_TIMESTAMP_LTZ(ts, 3),
    WATERMARK FOR rt AS rt - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json')
"""

SINK = """
CREATE TABLE late_aircraft (tailnum STRING, ts BIGINT, avg_delay DOUBLE)
WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json')
"""

QUERY = """
INSERT INTO late_aircraft
SELECT tailnum, ts, avg_delay FROM (
    SELECT tailnum, ts, AVG(dep_delay) OVER (
        PARTITION BY tailnum ORDER BY rt ROWS BETWEEN 4 PRECEDING AND CURRENT ROW
    ) AS avg_delay
    FROM flights
) WHERE avg_delay > {threshold}
"""


def table_environment(parallelism: int) -> TableEnvironment:
    """A streaming table environment; creating it starts the JVM gateway."""
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", str(parallelism))
    return env


def sql_path(path: Path) -> str:
    """``path`` as a file URI inside a SQL string literal (quotes doubled)."""
    return path.resolve().as_uri().replace("'", "''")


def run(env: TableEnvironment, input_path: Path, output_dir: Path, threshold: float) -> None:
    """Plans and runs the query to the end of the file."""
    env.execute_sql(SOURCE.format(path=sql_path(input_path)))
    env.execute_sql(SINK.format(path=sql_path(output_dir)))
    env.execute_sql(QUERY.format(threshold=float(threshold))).wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", type=Path, required=True, help="flights JSON-lines file")
    parser.add_argument("--output", type=Path, required=True, help="result directory")
    parser.add_argument("--threshold", type=float, default=60.0)
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    start = time.perf_counter()
    env = table_environment(args.parallelism)
    ready = time.perf_counter()
    run(env, args.input, args.output, args.threshold)
    end = time.perf_counter()
    print(json.dumps({"gateway_seconds": round(ready - start, 3),
                      "job_seconds": round(end - ready, 3)}))


if __name__ == "__main__":
    main()
