"""Every example rule on its sample input: runs, and its output does not depend on how
the input is cut into batches or on keys moving between engines mid-stream."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from support.samples import EXAMPLES

from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.output import empty_output, output_records, sort_output, stamp_stateless
from cep.engine.table import KEY, SEQ, concat, take
from cep.io.inputs import load_inputs
from cep.reference import batch_bounds, batch_watermarks, input_watermark, run_reference
from grammar.compile import compile_file

DATA = Path(__file__).parent / "data"
RULES = Path(__file__).parent.parent / "rules"
# events per rule that each example's sample input gives (its output rows by rule name)
EVENTS = {
    "busy_topic.epl": {"busy_topic": 24},
    "delay_streak.epl": {"delay_streak": 19},
    "fsd.epl": {"first_story": 33},
    "fsd_listing1.epl": {"first_story": 33},
    "sensor_average.epl": {"overheating": 23},
}


def test_every_rule_file_has_a_sample():
    assert sorted(p.name for p in RULES.glob("*.epl")) == sorted(EXAMPLES)


def _load(rule: str):
    module = compile_file(RULES / rule)
    return module, load_inputs(module, [str(DATA / EXAMPLES[rule])], None).tables


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def example(request):
    module, tables = _load(request.param)
    return module, tables, output_records(run_reference(module, tables))


def test_example_produces_events(example, request):
    _, _, out = example
    assert Counter(r["rule"] for r in out) == EVENTS[request.node.callspec.params["example"]]
    assert all(list(r)[:4] == ["rule", "key", "seq", "ts"] for r in out)


@pytest.mark.parametrize("batch_size", [1, 7, 23])
def test_batching_does_not_change_output(example, batch_size):
    module, tables, out = example
    assert output_records(run_reference(module, tables, batch_size)) == out


def _clocks(module, tables, bounds: list[tuple[int, int]]) -> list:
    """The watermark through each batch, as the reference runner cuts it."""
    return batch_watermarks(input_watermark(module, tables), bounds)


def _run_with_migrations(module, tables, batch_size: int, seed: int
                         ) -> tuple[list[dict], int]:
    """Two engines; after every batch some keys move (state exported, imported). Returns
    the output and how many of the moves carried state."""
    rng = random.Random(seed)
    engines = [Engine(module), Engine(module)]
    owner: dict[object, int] = {}
    outputs = []
    moved_state = 0
    bounds = batch_bounds(tables, batch_size)
    for (lo, hi), clock in zip(bounds, _clocks(module, tables, bounds), strict=True):
        chunk = {n: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi)) for n, t in tables.items()}
        streams, stateless = derive_streams(module, chunk)
        outputs.extend(stamp_stateless(rows, clock.after(rows["seq"])) for rows in stateless)
        keyed = {n: add_keys(streams[n], module.key) for n in module.stateful_streams()}
        for table in keyed.values():
            for key in table[KEY].tolist():
                owner.setdefault(key, rng.randrange(2))
        for e, engine in enumerate(engines):
            mine = {n: take(t, np.array([owner[k] == e for k in t[KEY].tolist()], dtype=bool))
                    for n, t in keyed.items()}
            outputs.append(engine.process(mine, clock))
        # move a random third of the keys to the other engine
        for key in [k for k in owner if rng.random() < 0.33]:
            src = owner[key]
            held = engines[src].keys()
            moved_state += key in held
            engines[1 - src].import_keys(engines[src].export_keys([key]))
            owner[key] = 1 - src
    order = {name: i for i, name in enumerate(module.outputs)}
    return output_records(sort_output(concat(outputs) or empty_output(), order)), moved_state


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_keys_moving_between_engines_change_nothing(example, seed):
    module, tables, out = example
    batch = random.Random(seed).choice([3, 5, 11])
    moved, moves = _run_with_migrations(module, tables, batch, seed)
    assert moved == out
    assert moves > 0  # keys did move with state


def test_restoring_every_key_mid_stream_changes_nothing(example):
    module, tables, out = example
    rng = random.Random(7)
    engine = Engine(module)
    outputs = []
    restored = 0
    bounds = batch_bounds(tables, 9)
    for (lo, hi), clock in zip(bounds, _clocks(module, tables, bounds), strict=True):
        chunk = {n: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi)) for n, t in tables.items()}
        streams, stateless = derive_streams(module, chunk)
        outputs.extend(stamp_stateless(rows, clock.after(rows["seq"])) for rows in stateless)
        outputs.append(engine.process(
            {n: add_keys(streams[n], module.key) for n in module.stateful_streams()}, clock))
        if rng.random() < 0.6:  # a fresh engine continues from the exported bytes
            keys = engine.keys()
            parcel = engine.export_keys(keys)
            engine = Engine(module)
            assert sorted(engine.import_keys(parcel), key=repr) == sorted(keys, key=repr)
            restored += bool(keys)
    order = {name: i for i, name in enumerate(module.outputs)}
    assert output_records(sort_output(concat(outputs) or empty_output(), order)) == out
    assert restored > 0  # a fresh engine did continue from exported state


def test_listing1_spelling_gives_the_same_events():
    module_a, tables_a = _load("fsd.epl")
    module_b, tables_b = _load("fsd_listing1.epl")
    assert output_records(run_reference(module_a, tables_a)) == \
        output_records(run_reference(module_b, tables_b))
