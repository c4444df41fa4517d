"""``cep verify`` and ``cep bench``: the same strategies run the same way on Spark (KG
first, as the reference), and only the table of the results differs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from cep.bench import format_bench
from cep.cli.balancing_options import (
    add_balancing_options,
    add_strategies_option,
    slowdown,
    strategy_list,
)
from cep.cli.errors import EXIT_RUN_ERROR
from cep.cli.options import add_set_option, add_state_options, overrides
from cep.lang.compile import compile_file
from cep.run_config import DEFAULT_ENGINES, DEFAULT_MASTER, RunConfig
from cep.verify import StrategyResult, failures, format_table, to_json, verify


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser, format_table)


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser, format_bench)


def _add_arguments(parser: argparse.ArgumentParser,
                   table: Callable[[list[StrategyResult]], str]) -> None:
    parser.set_defaults(handler=compare, table=table)
    parser.add_argument("file", help="the .epl rule file")
    parser.add_argument("--input", action="append", required=True, metavar="SRC")
    add_strategies_option(parser, "kg,dlb-h,dlb-l,lptf,pkg")
    parser.add_argument("--engines", type=int, default=DEFAULT_ENGINES, metavar="N")
    parser.add_argument("--master", default=DEFAULT_MASTER)
    parser.add_argument("--batch-size", type=int, default=None, metavar="N")
    add_set_option(parser)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    add_balancing_options(parser)
    add_state_options(parser)


def compare(args: argparse.Namespace) -> int:
    module = compile_file(args.file, overrides(args.set), state_ttl_us=args.state_ttl)
    strategies = strategy_list(args.strategies)
    config = RunConfig(tuple(args.input), engines=args.engines, batch_size=args.batch_size,
                       master=args.master, threshold=args.threshold,
                       stat_window=args.stat_window, mongo_uri=args.mongo_uri,
                       progress=False, capacity=args.capacity,
                       slowdown=slowdown(args.slow_engine))
    results = verify(module, config, strategies)
    print(args.table(results))
    if args.json:
        Path(args.json).write_text(to_json(results) + "\n")
    broken = failures(results)
    if broken:
        print(f"cep: {', '.join(broken)} changed the events: key-preserving strategies "
              "must match key grouping exactly", file=sys.stderr)
        return EXIT_RUN_ERROR
    return 0
