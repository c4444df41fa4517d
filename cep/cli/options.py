"""Options that several commands share about the rules they read: ``--set`` and
``--state-ttl``."""

from __future__ import annotations

import argparse

from grammar.errors import RuleError
from grammar.parser import parse_duration


def add_set_option(parser: argparse.ArgumentParser, help_text: str | None = None) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help=help_text)


def overrides(pairs: list[str]) -> dict[str, str]:
    """The variables that ``--set NAME=VALUE`` options override."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise RuleError(f"--set expects NAME=VALUE, got '{pair}'")
        out[name.strip()] = value
    return out


def add_udf_option(parser: argparse.ArgumentParser, where: str = "") -> None:
    """``--udf FILE.py`` (repeatable): a file of ``register_udf`` calls, imported before
    the rules are checked so that the checker knows the functions' signatures."""
    parser.add_argument(
        "--udf", action="append", default=[], metavar="FILE.py",
        help="a Python file whose top level registers functions the rules call "
        "(cep.engine.functions.register_udf); imported before the rules are checked"
        f"{where} (repeatable)")


def add_state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-ttl", type=_duration, default=None, metavar="DURATION",
                        help="bound #keepall windows and patterns without WITHIN to this "
                             "much event time per key, e.g. '10 min'")


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
