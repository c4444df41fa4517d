"""A module run over its inputs on two engines that hand keys to each other and restart
from their snapshots between batches: the harness of the differential tests of the
batch kernels (moved keys, replays and restarts change no output)."""

from __future__ import annotations

import itertools

import numpy as np

from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.output import empty_output, output_records, sort_output
from cep.engine.table import SEQ, concat, take
from cep.reference import batch_watermarks, input_watermark


def run_moving(module, inputs: dict, n_rows: int, cuts: list[int], movers: int,
               keys: int) -> list[dict]:
    """The input (``n_rows`` events, keys ``0..keys-1``) in batches cut at ``cuts`` over
    two engines; after batch i the keys whose bit ``i * keys + k`` is set in ``movers``
    move to the other engine, and after every other batch both engines restart from
    their snapshots. The output records, in the reference order."""
    bounds = [0, *sorted(set(cuts)), n_rows]
    clocks = batch_watermarks(input_watermark(module, inputs),
                              list(itertools.pairwise(bounds)))
    engines = [Engine(module), Engine(module)]
    owner = dict.fromkeys(range(keys), 0)
    outputs = []
    for step, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        chunk = {name: take(table, (table[SEQ] >= lo) & (table[SEQ] < hi))
                 for name, table in inputs.items()}
        derived, _ = derive_streams(module, chunk)
        keyed = {name: add_keys(table, module.key) for name, table in derived.items()}
        for e in (0, 1):
            mine = {name: take(table, np.array([owner[k] == e for k in
                                                table["__key"].tolist()], dtype=bool))
                    for name, table in keyed.items()}
            outputs.append(engines[e].process(mine, clocks[step]))
        for k in range(keys):
            if movers >> (step * keys + k) & 1:
                src = owner[k]
                engines[1 - src].import_keys(engines[src].export_keys([k]))
                owner[k] = 1 - src
        if step % 2:
            for e in (0, 1):
                fresh = Engine(module)
                fresh.restore(engines[e].snapshot())
                engines[e] = fresh
    order = {name: i for i, name in enumerate(module.outputs)}
    return output_records(sort_output(concat(outputs) or empty_output(), order))
