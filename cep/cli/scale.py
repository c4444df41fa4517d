"""``cep scale RUN_DIR N``: give a running ``--follow`` job N engines; ``cep scale
RUN_DIR``: what it was asked and what applied.

The request is written to the run directory (``cep.io.scale_changes``), durably; the
job's Balancer applies it at the first key map it writes after it (the batch two after
the one in flight), every key whose engine changes handed over with its state at the
end of the batch before. A stopped job applies it when it is started again.
"""

from __future__ import annotations

import argparse
import shlex

from cep.cli.errors import CommandError
from cep.io.scale_changes import MAX_ENGINES, ScaleError, ScaleLog, scale


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the job's --checkpoint directory")
    parser.add_argument("engines", metavar="N", type=int, nargs="?",
                        help=f"the engine count to go to (1..{MAX_ENGINES}); without it, "
                        "list the requests and the changes that applied")
    parser.set_defaults(handler=scale_command)


def scale_command(args: argparse.Namespace) -> int:
    try:
        if args.engines is None:
            return _status(args.run_dir)
        number = scale(args.run_dir, args.engines)
    except ScaleError as err:
        raise CommandError(f"refused: {err}") from None
    print(f"scale request {number} written: {args.engines} engines. The job applies it at "
          f"the first key map it writes (two batches after the one in flight); "
          f"cep scale {shlex.quote(str(args.run_dir))} shows when.")
    return 0


def _status(run_dir: str) -> int:
    log = ScaleLog(run_dir)
    requests, applied = log.requests(), log.applied()
    for request in requests:
        why = f": {request.reason}" if request.reason else ""
        print(f"request {request.number}: {request.engines} engines ({request.by}){why}")
    for change in applied:
        moved = ("" if change.get("keys") is None
                 else f": {change['keys']} keys, {change['bytes']} bytes handed over")
        print(f"batch {change['at_batch']}: {change['from']} -> {change['to']} engines"
              f"{moved}")
    if not requests and not applied:
        print("no scale request")
    return 0
