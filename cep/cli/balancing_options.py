"""Options of the commands that place keys on engines (``run``, ``verify``, ``bench``)
or replay a trace through the placement strategies (``simulate``)."""

from __future__ import annotations

import argparse
import os

from cep.cli.errors import CommandError
from cep.run_config import DEFAULT_THRESHOLD
from splitter.policies.names import (
    CAPACITY_MODES,
    LOAD_MEASURES,
    MAP_STRATEGIES,
    MOVE_POLICIES,
    PAYBACK_BATCHES,
)

STRATEGY_NAMES = [*MAP_STRATEGIES, "pkg"]


def add_strategies_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--strategies", default=default,
                        help=f"comma-separated, from {','.join(STRATEGY_NAMES)} "
                             f"(default {default})")


def add_capacity_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--capacity", choices=CAPACITY_MODES, default="equal",
                        help="balance to equal shares, or to shares from each engine's "
                             "measured busy seconds per event (default equal)")


def add_balancing_options(parser: argparse.ArgumentParser, several_loads: bool = False
                          ) -> None:
    """The Balancer's options; ``several_loads``: ``--load`` takes a comma-separated
    list (``verify`` and ``bench`` run each key-moving strategy once per measure)."""
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="PCT",
                        help="rebalance when the engines' load RSTD exceeds this (default 15)")
    parser.add_argument("--stat-window", type=int, default=1, metavar="BATCHES",
                        help="batches of per-key load the Balancer looks at (default 1)")
    add_capacity_option(parser)
    if several_loads:
        parser.add_argument("--load", type=load_list, default=["events"],
                            metavar="events,cost",
                            help="a key's load for the Balancer: its events (the DLB "
                                 "paper's) or the seconds its engine spent on it; with "
                                 "both, each key-moving strategy runs once per measure "
                                 "(default events)")
    else:
        parser.add_argument("--load", choices=LOAD_MEASURES, default="events",
                            help="a key's load for the Balancer: its events (the DLB "
                                 "paper's), or the seconds its engine spent on it, "
                                 "measured per batch (default events)")
    parser.add_argument("--moves", choices=MOVE_POLICIES, default="pays",
                        help="pays: move keys only when the busiest engine's predicted "
                             f"saving over {PAYBACK_BATCHES} batches exceeds the measured "
                             "cost of handing them over; always: whenever the strategy "
                             "proposes, as the DLB paper's Balancer (default pays)")
    parser.add_argument("--slow-engine", action="append", default=[], metavar="E:FACTOR",
                        help="make engine E's processing FACTOR times slower (to try "
                             "--capacity measured on equal hardware)")
    parser.add_argument("--mongo-uri", metavar="URI", default=os.environ.get("CEP_MONGO_URI"),
                        help="MongoDB for key-state handoff (default: $CEP_MONGO_URI, which "
                        "keeps a password out of the process list, else an embedded server)")


def strategy_list(text: str) -> list[str]:
    """The names in a --strategies value, each one known."""
    strategies = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(strategies) - set(STRATEGY_NAMES))
    if unknown:
        raise CommandError(f"unknown strategy {unknown[0]}; choose from "
                           f"{', '.join(STRATEGY_NAMES)}")
    return strategies


def load_list(text: str) -> list[str]:
    """The measures in a --load list, each known, none twice."""
    loads = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(loads) - set(LOAD_MEASURES))
    if unknown or not loads or len(set(loads)) < len(loads):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {' and '.join(LOAD_MEASURES)}, each once; "
            f"got {text!r}")
    return loads


def slowdown(specs: list[str]) -> dict[int, float]:
    """``--slow-engine E:FACTOR`` options as {engine: factor}."""
    out = {}
    for spec in specs:
        engine, _, factor = spec.partition(":")
        try:
            out[int(engine)] = float(factor)
        except ValueError:
            raise CommandError(f"--slow-engine wants E:FACTOR like 2:3, got {spec!r}") from None
    return out
