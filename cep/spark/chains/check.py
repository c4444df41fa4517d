"""Whether the Spark runner takes an INSERT INTO chain: a check over the compiled rules
alone, apart from ``chain_stages`` (which moves the chain rows in Arrow files), so that
``cep check`` can say it without loading numpy, pandas or pyarrow."""

from __future__ import annotations

import itertools

from grammar import ir


class ChainError(Exception):
    """A chain the Spark runner cannot run; the message says why in one line."""


def check_chain(module: ir.CompiledModule) -> None:
    """Refuse a later stage that reads a stream its previous stage's inserting rules do
    not feed (an input stream, or complex events from two stages back): on Spark those
    events would have to wait for the stage as well, which is not implemented."""
    stages = module.stage_modules()
    for number, (before, stage) in enumerate(itertools.pairwise(stages), start=1):
        fed = {r.target for r in before.stateful if r.target is not None}
        fed |= {r.target for r in stage.derived if r.target is not None}
        read = [*stage.stateful_streams(), *(r.stream for r in stage.derived)]
        for stream in read:
            if stream not in fed:
                raise ChainError(
                    f"stage {number} of the INSERT INTO chain reads stream {stream}, which "
                    f"the rules of stage {number - 1} do not insert into: on Spark a later "
                    "stage may read only the complex events of the stage before it (and "
                    "its own derived streams); use --runner local")
