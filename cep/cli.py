"""The ``cep`` command line: ``cep check FILE``, ``cep run FILE --input SRC``, ``cep produce
TOPIC_URI --input SRC`` and the strategy tools.

Exit status: 0 success, 2 a rule error or bad usage (the message names file:line:col),
1 a run that failed for another reason (unreadable input, ...). Rule errors never show a
Python traceback.

This module is only the entry, and imports nothing heavy: for ``cep run`` on Spark it
starts Spark's JVM in the background first (about 2 s on a core of its own), and only
then imports the commands (``cep.commands``: numpy, pandas, pyarrow, pymongo, pyspark's
driver side, about 0.7 s) and compiles the rules, which the JVM's start then overlaps.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cep.spark.session import start_in_background


def add_runner_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``cep run`` that say whether and where Spark starts (read before
    anything else, see :func:`main`)."""
    parser.add_argument("--runner", choices=["spark", "local"], default="spark",
                        help="spark (default): N stateful engines on Apache Spark; "
                        "local: the in-process reference evaluator")
    parser.add_argument("--master", default="local[*]", help="Spark master, default local[*]")
    parser.add_argument("--verbose", action="store_true", help="show Spark's own logs")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    spark = spark_to_start(arguments)
    if spark is not None:
        start_in_background(*spark)
    from cep.commands import run_command

    return run_command(arguments)


def spark_to_start(arguments: list[str]) -> tuple[str, bool] | None:
    """(master, verbose) when ``arguments`` are a ``cep run`` on Spark, else None. Only
    the runner options are read here, and nothing is said about the rest: the full
    parser judges them next (a run it refuses exits, and the JVM begun with it)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("command", nargs="?")
    add_runner_options(parser)
    try:
        known, _ = parser.parse_known_args(arguments)
    except argparse.ArgumentError:  # a bad runner option: the full parser reports it
        return None
    if known.command == "run" and known.runner == "spark":
        return known.master, known.verbose
    return None


if __name__ == "__main__":
    sys.exit(main())
