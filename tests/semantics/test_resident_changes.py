"""Resident engines and their changelog, without Spark: a batch splits its keys off the
resident engine into a work engine, runs there and merges back; its change, through the
codec, brings an older copy up to date, and a base plus the changes after it rebuild the
engine. Whichever copy each batch runs on, the output is the reference's.

Oracle: the reference evaluator over the whole input on one engine, which shares every
operator with what it checks; what differs is ``split_off``/``merge_in``, the change
codec and ``apply_changes``, so the test proves the resident copies' bookkeeping, not
the operators (those against independent readings: ``test_window_oracle.py`` and the
pattern and row pattern oracles). Every kind's input gives output: the empty share is
measured and bounded per kind; the bundled examples' expected outputs are non-empty."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.samples import DISTINCT_EXAMPLES
from support.shares import bounded, note
from support.state_rules import RULES, SCHEMA, events

from cep.engine import codec
from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.output import empty_output, output_records, sort_output, stamp_stateless
from cep.engine.table import KEY, SEQ, concat, take
from cep.engine.windows.keyed_window import apply_window_changes, window_changes
from cep.io.inputs import load_inputs
from cep.reference import batch_bounds, batch_watermarks, input_watermark, run_reference
from grammar import ir
from grammar.compile import compile_file, compile_text

ROOT = Path(__file__).resolve().parents[2]


def _run_resident(module: ir.CompiledModule, tables: dict, bounds: list[tuple[int, int]],
                  rng: random.Random) -> list[dict]:
    """Every batch on one of two workers' copies of the engine, each brought to the
    latest version as ``cep.spark.engines.resident`` does: as it is, caught up through the log's
    changes (``Engine.apply_changes``), or rebuilt from its base (folds at random); the
    output, in reference order.
    A batch's work engine holds the keys its events reach and those whose timers its
    watermark makes due (``Engine.due_keys``), as on Spark."""
    clocks = batch_watermarks(input_watermark(module, tables), bounds)
    log: list[tuple[int, str, bytes]] = []  # (batch, "base" or "change", blob)
    copies: list[tuple[int, Engine] | None] = [None, None]
    outputs = []
    for batch, (lo, hi) in enumerate(bounds):
        chunk = {n: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi)) for n, t in tables.items()}
        streams, stateless = derive_streams(module, chunk)
        clock = clocks[batch]
        outputs.extend(stamp_stateless(rows, clock.after(rows["seq"])) for rows in stateless)
        keyed = {n: add_keys(streams[n], module.key) for n in module.stateful_streams()}
        worker = rng.randrange(2)
        engine = _current(module, copies[worker], log, rng)
        keys = list(dict.fromkeys(k for t in keyed.values() for k in t[KEY].tolist()))
        keys += engine.due_keys(clock.end)
        keys += rng.sample(range(-2, 6), 2)  # keys without events (or any state) too
        keys = list(dict.fromkeys(keys))
        work = engine.split_off(keys)
        outputs.append(work.process(keyed, clock))
        change = engine.merge_in(work, keys)
        if not log or rng.random() < 0.2:
            log.append((batch, "base", engine.snapshot()))
        else:
            log.append((batch, "change", codec.encode(change, "change")))
        copies[worker] = (batch, engine)
    order = {name: i for i, name in enumerate(module.outputs)}
    return output_records(sort_output(concat(outputs) or empty_output(), order))


def _current(module: ir.CompiledModule, held: tuple[int, Engine] | None,
             log: list[tuple[int, str, bytes]], rng: random.Random) -> Engine:
    if not log:
        return Engine(module)
    base = max(i for i, (_, kind, _) in enumerate(log) if kind == "base")
    at = [i for i, (batch, _, _) in enumerate(log) if held is not None and batch == held[0]]
    if held is not None and at and at[0] >= base and rng.random() < 0.8:
        engine, start = held[1], at[0] + 1
    else:
        engine, start = Engine(module), base + 1
        engine.restore(log[base][2])
    engine.apply_changes([codec.decode(blob, "change", "test") for _, _, blob in log[start:]])
    return engine


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 119), max_size=8),
       choices=st.integers(0, 2**16))
def _runs_on_resident_copies_as_the_reference(kind, seed, cuts, choices):
    module = compile_text(SCHEMA + KINDS[kind], kind)
    inputs = events(seed)
    bounds = list(itertools.pairwise([0, *sorted(set(cuts)), 120]))
    expected = output_records(run_reference(module, inputs))
    note(expected)
    assert _run_resident(module, inputs, bounds, random.Random(choices)) == expected


# Kinds beyond the state fixtures' (``support.state_rules``, each with a checkpoint written
# before): the compiled matcher under an output rate limiter, which reads the keys'
# states it moves one by one (``row_patterns.compiled.KeyStores`` as a mapping)
KINDS = {**RULES, "match_recognize_rate": (
    "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a, count(B.v) AS n "
    "PATTERN (A B+ C) WITHIN 7 sec DEFINE B AS B.v < prev(B.v), C AS C.v > A.v ) "
    "OUTPUT LAST EVERY 2 EVENTS;")}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_operator_kind_runs_on_resident_copies_as_the_reference(kind):
    with bounded(f"resident {kind}"):
        _runs_on_resident_copies_as_the_reference(kind)


@pytest.mark.parametrize("rule", sorted(DISTINCT_EXAMPLES))
def test_every_example_runs_on_resident_copies_as_the_reference(rule):
    module = compile_file(ROOT / "rules" / rule)
    tables = load_inputs(module, [str(ROOT / "tests" / "data" / DISTINCT_EXAMPLES[rule])],
                         None).tables
    expected = output_records(run_reference(module, tables))
    got = _run_resident(module, tables, batch_bounds(tables, 13), random.Random(3))
    assert expected and got == expected


def _rows(keys: list, orders: list[int]) -> dict:
    seq = np.array(orders, dtype=np.int64)
    key = np.empty(len(keys), dtype=object)
    key[:] = keys
    return {KEY: key, SEQ: seq, "__sub": np.zeros(len(seq), dtype=np.int64),
            "v": seq.astype(np.float64)}


def test_a_window_change_is_the_rows_added_and_a_count_kept_per_key():
    began = _rows(["a", "a", "a", "b", "b"], [1, 2, 3, 4, 5])
    after = _rows(["a", "a", "a", "b", "c"], [3, 2, 9, 5, 8])  # unsorted, as windows are
    was = np.array([0, 0, 0, 1, 1])
    kept, added = window_changes(began, was, after,
                                 np.array(["a", "b", "c", "d"], dtype=object))
    assert kept.tolist() == [2, 1, 0, 0]  # d: no rows left (removed)
    assert sorted(added[SEQ].tolist()) == [8, 9]
    other = _rows(["z", "a", "b", "a", "a", "b", "d"], [0, 1, 4, 2, 3, 5, 7])  # began + z, d
    out = apply_window_changes(other, np.array(["a", "b", "c", "d"], dtype=object), kept, added)
    assert sorted(zip(out[KEY].tolist(), out[SEQ].tolist(), strict=True)) == [
        ("a", 2), ("a", 3), ("a", 9), ("b", 5), ("c", 8), ("z", 0)]


def test_a_window_that_dropped_a_middle_row_writes_the_key_whole():
    began = _rows(["u", "u", "u"], [1, 2, 3])
    after = _rows(["u", "u", "u"], [1, 3, 4])  # #unique: row 2 replaced
    kept, added = window_changes(began, np.zeros(3, dtype=np.int64), after,
                                 np.array(["u"], dtype=object))
    assert kept.tolist() == [0] and added[SEQ].tolist() == [1, 3, 4]
