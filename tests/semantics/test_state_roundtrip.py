"""Every operator's per-key state survives bytes: split a random stream at random points,
move random keys' state to a fresh engine, continue — the output never changes.

Oracle: the reference evaluator over the whole input on one engine. It shares every
operator with what it checks; what differs is the codec, ``export_keys``/``import_keys``
and ``snapshot``/``restore``, so the test proves that state survives bytes and moves,
not that any operator is right (the windows and rate limiting against an independent
reading: ``test_window_oracle.py``; patterns and row patterns: their own oracles). Every
kind's input (120 events of 4 keys) gives output: the empty share is measured and
bounded per kind."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note
from support.state_rules import RULES, SCHEMA, events

from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.output import empty_output, output_records, sort_output
from cep.engine.table import SEQ, concat, take
from cep.reference import batch_watermarks, input_watermark, run_reference
from grammar.compile import compile_text


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 119), max_size=6),
       movers=st.integers(0, 2**16))
def _round_trip_changes_no_output(kind, seed, cuts, movers):
    module = compile_text(SCHEMA + RULES[kind], kind)
    inputs = events(seed)
    expected = output_records(run_reference(module, inputs))
    note(expected)
    bounds = [0, *sorted(set(cuts)), 120]
    clocks = batch_watermarks(input_watermark(module, inputs), list(itertools.pairwise(bounds)))
    engines = [Engine(module), Engine(module)]
    owner = {k: 0 for k in range(4)}
    outputs = []
    for step, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        chunk = {"S": take(inputs["S"], (inputs["S"][SEQ] >= lo) & (inputs["S"][SEQ] < hi))}
        streams, _ = derive_streams(module, chunk)
        keyed = add_keys(streams["S"], module.key)
        for e in (0, 1):
            mine = np.array([owner[k] == e for k in keyed["__key"].tolist()], dtype=bool)
            outputs.append(engines[e].process({"S": take(keyed, mine)}, clocks[step]))
        for k in range(4):  # keys whose bit is set move to the other engine
            if movers >> (step * 4 + k) & 1:
                src = owner[k]
                engines[1 - src].import_keys(engines[src].export_keys([k]))
                owner[k] = 1 - src
        if step % 2:  # and now and then every engine restarts from its snapshot
            for e in (0, 1):
                fresh = Engine(module)
                fresh.restore(engines[e].snapshot())
                engines[e] = fresh
    order = {name: i for i, name in enumerate(module.outputs)}
    assert output_records(sort_output(concat(outputs) or empty_output(), order)) == expected


@pytest.mark.parametrize("kind", sorted(RULES))
def test_state_round_trip_changes_no_output(kind):
    with bounded(f"round trip {kind}"):
        _round_trip_changes_no_output(kind)
