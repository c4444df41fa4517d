"""``cep report METRICS… -o DIR``: PNG plots from runs' ``--metrics`` files (see
:mod:`cep.report`)."""

from __future__ import annotations

import argparse

from cep.cli.errors import CommandError
from cep.report import draw


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("metrics", nargs="+", help="metrics JSON-lines files (one per run)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR")
    parser.add_argument("--threshold", type=float, default=None, metavar="PCT",
                        help="the θ line on the RSTD plot (default: the θ each run used, "
                        "from its metrics)")
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    try:
        paths = draw(args.metrics, args.output, args.threshold)
    except (OSError, ValueError, KeyError) as err:
        raise CommandError(f"cannot draw the report: {err}") from err
    for path in paths:
        print(path)
    return 0
