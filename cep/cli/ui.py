"""``cep ui RUN [--host HOST] [--port PORT]``: the live view of a run from the files it
wrote, for a second terminal or a later look (:mod:`cep.ui.command`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cep.ui.address import DEFAULT_HOST, DEFAULT_PORT
from cep.ui.command import ui_command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN",
                        help="a run directory (cep run --checkpoint DIR) or a --metrics file")
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}: this machine "
                        "only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT})")
    parser.set_defaults(handler=ui)


def ui(args: argparse.Namespace) -> int:
    return ui_command(Path(args.run), args.host, args.port)
