"""``cep deploy RUN_DIR FILE.epl``, ``cep undeploy RUN_DIR NAME…`` and ``cep rules
RUN_DIR [--json]``: change the rules of a running job, and list what it runs.

A change is checked against the job's newest rule set (parsed, its names and types
checked against the running schemas, what the job cannot change refused) before it is
written to the run directory's change log (``cep.io.rule_changes``): a bad file is
refused here, with its file, line and column, and the job never sees it. The job applies
the change at the next micro-batch it plans (``cep.spark.rule_versions``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from cep.cli.errors import CommandError
from cep.cli.options import add_udf_option
from cep.engine.udf.files import load_udf_files
from cep.io.rule_changes import (
    ChangeLog,
    ChangeLogError,
    ChangeRefused,
    RuleBook,
    deploy,
    running_rules,
    undeploy,
)
from grammar.errors import RuleError
from grammar.parser import MAX_TEXT_CHARS

SAID = {"added": "added", "replaced": "replaced (starts with empty state)",
        "compatible": "replaced (keeps its state: only its SELECT list or HAVING's "
                      "constants changed)",
        "removed": "removed (its state is freed)"}


def add_deploy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the job's --checkpoint directory")
    parser.add_argument("file", metavar="FILE.epl",
                        help="rules to add, or to replace the running rules of their names")
    add_udf_option(parser, ", and by the job's processes when the change applies")
    parser.set_defaults(handler=deploy_command)


def add_undeploy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the job's --checkpoint directory")
    parser.add_argument("names", metavar="NAME", nargs="+", help="the rules to remove")
    parser.set_defaults(handler=undeploy_command)


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the job's --checkpoint directory")
    parser.add_argument("--json", action="store_true",
                        help="one JSON document: the version, the rules, pending and "
                        "refused changes")
    parser.set_defaults(handler=rules_command)


def deploy_command(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        if path.stat().st_size > 4 * MAX_TEXT_CHARS:
            raise RuleError(f"the rule file is too large ({path.stat().st_size} bytes)",
                            source_name=str(path))
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise RuleError(f"no such rule file: {path}", source_name=str(path)) from None
    except UnicodeDecodeError as err:
        raise RuleError(f"the rule file is not UTF-8 text (byte {err.start})",
                        source_name=str(path)) from None
    load_udf_files(args.udf)  # first: the rules are checked against their signatures
    return _said(lambda: deploy(args.run_dir, str(path), text, args.udf), args.run_dir)


def undeploy_command(args: argparse.Namespace) -> int:
    return _said(lambda: undeploy(args.run_dir, list(args.names)), args.run_dir)


def _said(write, run_dir: str) -> int:
    try:
        number, kinds = write()
    except (ChangeRefused, ChangeLogError) as err:
        raise CommandError(f"refused: {err}") from None
    what = "; ".join(f"{name} {SAID.get(kind, kind)}" for name, kind in kinds.items())
    print(f"change {number} written: {what}. The job applies it at the next batch it "
          f"plans (cep rules {shlex.quote(str(run_dir))} shows when).")
    return 0


def rules_command(args: argparse.Namespace) -> int:
    try:
        book = RuleBook.of_run(args.run_dir)
        applied, refused = ChangeLog(args.run_dir).applied()
        rules = running_rules(book, applied)
        latest = book.latest()
    except ChangeLogError as err:
        raise CommandError(str(err)) from None
    version = applied[-1].version if applied else 0
    pending = [n for n in range(version + 1, latest + 1) if n not in refused]
    if args.json:
        print(json.dumps({"version": version, "rules": rules, "pending": pending,
                          "refused": {str(k): v for k, v in refused.items()}}, indent=1))
        return 0
    width = max((len(r["rule"]) for r in rules), default=4)
    print(f"rule set version {version}" + (f"; changes {', '.join(map(str, pending))} "
                                           "wait for the next batch" if pending else ""))
    print(f"{'rule':<{width}}  version  since batch     first seq  started")
    for r in rules:
        print(f"{r['rule']:<{width}}  {r['version']:>7}  {r['batch']:>11}  "
              f"{r['first_seq']:>12}  {r['started']}")
    for number, reason in sorted(refused.items()):
        print(f"change {number} refused: {reason}", file=sys.stderr)
    return 0
