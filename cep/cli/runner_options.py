"""The options of ``cep run`` that say whether and where Spark starts: the entry reads
them before anything else, to start Spark's JVM while the rest loads."""

from __future__ import annotations

import argparse

from cep.run_config import DEFAULT_MASTER, RUNNERS


def add_runner_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runner", choices=list(RUNNERS), default="spark",
                        help="spark (default): N stateful engines on Apache Spark; "
                        "local: the in-process reference evaluator")
    parser.add_argument("--master", default=DEFAULT_MASTER,
                        help=f"Spark master, default {DEFAULT_MASTER}")
    parser.add_argument("--verbose", action="store_true", help="show Spark's own logs")


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
