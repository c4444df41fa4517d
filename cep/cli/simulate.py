"""``cep simulate``: replay a key trace through the placement strategies without Spark
(the DLB paper's periodic-Zipf setting by default), a row of figures per strategy."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cep.cli.balancing_options import (
    STRATEGY_NAMES,
    add_capacity_option,
    add_strategies_option,
    strategy_list,
)
from cep.cli.errors import CommandError
from cep.run_config import DEFAULT_ENGINES, DEFAULT_THRESHOLD
from cep.tables import HEADERS, columns, count, millis, pct
from splitter.policies.simulate import periodic_zipf_trace, simulate

#: (summary field, header, format) of each column: the load RSTD, its key-preserving lower
#: bound, rebalances, keys moved per rebalance as a share of the keys seen, state moved
#: (events), the makespan (Σ over windows of the busiest engine's events, and its busy
#: time with --engine-cost) and the Balancer's decision time
COLUMNS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("avg_rstd", HEADERS["avg_rstd"], pct),
    ("max_rstd", HEADERS["max_rstd"], pct),
    ("avg_rstd_lower_bound", HEADERS["avg_rstd_lower_bound"], pct),
    ("rebalances", HEADERS["rebalances"], count),
    ("avg_pct_keys_moved_per_rebalance", f"avg {HEADERS['keys_per_rebalance']}", pct),
    ("max_pct_keys_moved_per_rebalance", f"max {HEADERS['keys_per_rebalance']}", pct),
    ("events_moved", HEADERS["events_moved"], count),
    ("makespan", HEADERS["makespan"], count),
    ("busy_makespan", f"busy {HEADERS['makespan']}", count),
    ("decision_ms_mean", "decide", millis),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_strategies_option(parser, ",".join(STRATEGY_NAMES))
    add_capacity_option(parser)
    parser.add_argument("--engine-cost", metavar="C0,C1,...",
                        help="simulated busy time per event of each engine, e.g. 1,1,3,1,1 "
                             "for one engine 3x slower (default all 1)")
    parser.add_argument("--events", type=int, default=2_950_000)
    parser.add_argument("--keys", type=int, default=4096)
    parser.add_argument("--engines", type=int, default=DEFAULT_ENGINES)
    parser.add_argument("--window", type=int, default=10_000, metavar="EVENTS",
                        help="events per statistics window (default 10,000)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="PCT")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--trace", metavar="PATH",
                        help="a .npy array of key ids per event instead of periodic Zipf")
    parser.add_argument("--json", metavar="PATH", help="also write the summaries as JSON")
    parser.set_defaults(handler=simulate_command)


def simulate_command(args: argparse.Namespace) -> int:
    if args.trace:
        trace = np.load(args.trace)
    else:
        trace = periodic_zipf_trace(args.events, args.keys, seed=args.seed)
    strategies = strategy_list(args.strategies)
    cost = _engine_cost(args.engine_cost, args.engines)
    summaries = {}
    rows = [[HEADERS["strategy"], *(header for _, header, _ in COLUMNS)]]
    for name in strategies:
        result = simulate(trace, name, n_engines=args.engines, window=args.window,
                          threshold=args.threshold, seed=args.seed, engine_cost=cost,
                          capacity=args.capacity)
        summaries[name] = result.summary
        rows.append([name, *(fmt(result.summary[field]) for field, _, fmt in COLUMNS)])
    print(columns(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(summaries, indent=2, default=str) + "\n")
    return 0


def _engine_cost(text: str | None, n_engines: int) -> list[float] | None:
    if not text:
        return None
    try:
        cost = [float(x) for x in text.split(",")]
    except ValueError:
        raise CommandError(f"--engine-cost wants numbers like 1,1,3,1,1, got {text!r}") from None
    if len(cost) != n_engines or min(cost) <= 0:
        raise CommandError(f"--engine-cost needs {n_engines} positive numbers, got {text!r}")
    return cost

