"""The ``cep`` parser and the dispatch to one command.

Every command is listed here with its one-line help, which is all ``cep --help`` needs;
its options and its handler live in its own module (``setup`` adds them), imported only
when the command line names it. So a command loads only what it uses: ``cep check``
never imports pandas or Spark, ``cep --help`` nothing of the runners.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass

from cep.cli.errors import EXIT_INTERRUPTED, EXIT_RULE_ERROR, EXIT_RUN_ERROR, run_failures
from grammar.errors import RuleError


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    module: str  # where its options and handler are
    setup: str = "add_arguments"  # the module's function that adds them to its parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's options, and its ``handler`` (``args -> exit status``)."""
        setup: Callable[[argparse.ArgumentParser], None] = getattr(
            importlib.import_module(self.module), self.setup)
        setup(parser)


COMMANDS = (
    Command("check", "check a rule file and describe its rules", "cep.cli.check"),
    Command("run", "run a rule file over an input", "cep.cli.run"),
    Command("produce", "load JSON lines or generated tweets into a Kafka topic "
            "(kafka://embedded/TOPIC: cep's own broker)", "cep.cli.produce"),
    Command("consume", "print a Kafka topic's records as JSON lines (read back what a run "
            "wrote)", "cep.cli.consume"),
    Command("verify", "run strategies on Spark and compare their events with key "
            "grouping's", "cep.cli.compare", "add_verify_arguments"),
    Command("simulate", "replay a key trace through strategies without Spark (the paper's "
            "periodic-Zipf setting by default)", "cep.cli.simulate"),
    Command("bench", "strategies side by side on Spark, next to the DLB paper's Table 1",
            "cep.cli.compare", "add_bench_arguments"),
    Command("prepare", "make the JVM class archive that lets Spark start seconds sooner "
            "(the install command runs it)", "cep.cli.prepare"),
    Command("report", "draw PNG plots from runs' --metrics files", "cep.cli.report"),
    Command("deploy", "add rules to a running job, or replace its rules of the same names "
            "(cep deploy RUN_DIR FILE.epl)", "cep.cli.rule_changes", "add_deploy_arguments"),
    Command("undeploy", "remove rules from a running job (cep undeploy RUN_DIR NAME...)",
            "cep.cli.rule_changes", "add_undeploy_arguments"),
    Command("scale", "give a running job another engine count, keys moving with their "
            "state (cep scale RUN_DIR N)", "cep.cli.scale"),
    Command("rules", "list the rules a job runs, with each one's version and start batch",
            "cep.cli.rule_changes", "add_rules_arguments"),
    Command("ui", "serve the live view of a running or finished run from what it wrote "
            "(its checkpoint directory or --metrics file)", "cep.cli.ui"),
)


def run_command(argv: list[str]) -> int:
    """Parse ``argv`` and run the command it names; the exit status."""
    args = build_parser(named_command(argv)).parse_args(argv)
    try:
        return int(args.handler(args))
    except RuleError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_RULE_ERROR
    except KeyboardInterrupt:
        print("cep: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        if not isinstance(err, run_failures()):
            raise
        print(f"cep: {err}", file=sys.stderr)
        return EXIT_RUN_ERROR


def named_command(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (``cep`` itself
    has no option that takes a value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of every command, with the options of ``command`` only (the others are
    never parsed: their help line is enough)."""
    parser = argparse.ArgumentParser(
        prog="cep", description="Complex event processing with EPL-like rules."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for entry in COMMANDS:
        child = sub.add_parser(entry.name, help=entry.help)
        if entry.name == command:
            entry.add_arguments(child)
    return parser
