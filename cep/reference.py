"""The in-process reference evaluator: the definition of correct output.

It runs the compiled rules over an ordered list of events in one Python process, with no
Spark and no Splitter: derive streams, attach keys, feed one :class:`Engine`. Cutting the
input into batches (``batch_size``) must not change the output; tests use that, and the
Spark runtime is compared against this runner event for event. A module with an INSERT
INTO chain (``ir.Stage``) runs one engine per stage, stage after stage within a batch.
"""

from __future__ import annotations

import numpy as np

from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine, sort_output
from cep.engine.insert_into import complex_events, output_only
from cep.engine.output import empty_output
from cep.engine.table import SEQ, Table, concat, take
from cep.lang import ir


def batch_bounds(inputs: dict[str, Table], batch_size: int | None) -> list[tuple[int, int]]:
    """Half-open seq ranges covering every input event, ``batch_size`` events each
    (sequence numbers are places in the input, not counts, so they have gaps)."""
    seqs = [t[SEQ] for t in inputs.values() if t and len(t[SEQ])]
    if not seqs:
        return []
    if not batch_size:  # one batch: its bounds need no sort of millions of numbers
        return [(min(int(s.min()) for s in seqs), max(int(s.max()) for s in seqs) + 1)]
    ordered = np.unique(np.concatenate(seqs))
    lows = ordered[::batch_size]
    highs = np.append(lows[1:], ordered[-1] + 1)
    return list(zip(lows.tolist(), highs.tolist(), strict=True))


def run_batch(module: ir.CompiledModule, engine: Engine, inputs: dict[str, Table]) -> Table:
    """One batch through stateless rules, keys and the engine; all output rows."""
    return _run_stage(module, engine, inputs)[1]


def _run_stage(module: ir.CompiledModule, engine: Engine, inputs: dict[str, Table]) -> tuple[
        dict[str, Table], Table]:
    """One stage of one batch: every stream after its stateless rules, and its rows."""
    streams, stateless = derive_streams(module, inputs)
    keyed = {name: add_keys(streams[name], module.key) for name in module.stateful_streams()}
    out = engine.process(keyed)
    return streams, concat([*stateless, out]) or empty_output()


def run_stages(module: ir.CompiledModule, engines: list[Engine],
               inputs: dict[str, Table]) -> Table:
    """One batch through every stage of an INSERT INTO chain (one engine per stage, see
    ``CompiledModule.stage_modules``): each stage's inserting rules' rows become events
    of the next stage's streams (``cep.engine.insert_into``); the rows that are output."""
    streams = inputs
    outputs = []
    for stage, engine in zip(module.stage_modules(), engines, strict=True):
        streams, out = _run_stage(stage, engine, streams)
        outputs.append(output_only(module, out))
        streams = {**streams, **complex_events(module, out)}
    return concat(outputs) or empty_output()


def run_reference(module: ir.CompiledModule, inputs: dict[str, Table],
                  batch_size: int | None = None) -> Table:
    """Every output row of the module over the inputs, ordered by (seq, rule)."""
    engines = [Engine(stage) for stage in module.stage_modules()]
    outputs = []
    bounds = batch_bounds(inputs, batch_size)
    for lo, hi in bounds:
        chunk = inputs if len(bounds) == 1 else {  # one batch holds every event as it is
            name: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi)) for name, t in inputs.items()}
        outputs.append(run_stages(module, engines, chunk))
    order = {name: i for i, name in enumerate(module.outputs)}
    return sort_output(concat(outputs) or empty_output(), order)
