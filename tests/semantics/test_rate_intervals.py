"""Output rate limiting over a whole batch with array operations
(``cep.engine.rate.intervals``) gives the same events however the input is cut: random
keys, ties in time, late events under a LATENESS, every clause the arrays serve, over a
window rule, a join and a pattern, whole against one event per batch and against random
batch sizes. (Keys' state through the codec: ``test_state_roundtrip.py``; the events
themselves, hand-checked: ``test_esper_output.py``.)

Oracle: the same reference evaluator over the whole input in one batch. It shares all of
its code with what it checks (``cep.engine.rate``, the windows, the clock), so it proves
only that the cut of the input changes nothing, not that the events are right: that is
``test_window_oracle.py`` (an independent reading of rate limiting over window rules)
and the hand-checked cases. The share of examples whose output is empty is bounded."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.rate_bodies import BODIES
from support.shares import bounded, note

from cep.engine.output import output_records
from cep.engine.table import SEQ, SUB
from cep.reference import run_reference
from grammar.compile import compile_text

CLAUSES = st.one_of(
    st.builds("OUTPUT {} EVERY {} sec".format, st.sampled_from(["ALL", "LAST", "FIRST"]),
              st.integers(1, 5)),
    st.builds("OUTPUT ALL EVERY {} EVENTS".format, st.integers(1, 4)))


@settings(max_examples=60, deadline=None)
@given(body=st.sampled_from(BODIES), clause=CLAUSES, lateness=st.integers(0, 2),
       seed=st.integers(0, 2**32 - 1), n=st.integers(20, 80), keys=st.integers(1, 5),
       batch=st.integers(2, 40))
def _every_cut_gives_the_same_events(body, clause, lateness, seed, n, keys,
                                                      batch):
    late = f" LATENESS {lateness} sec" if lateness else ""
    module = compile_text("CREATE SCHEMA S (k long, ts timestamp, v double, kind int) "
                          f"TIMESTAMP ts{late};\n" + body.format(clause) + ";", "rule")
    rng = np.random.default_rng(seed)
    # steps of half a second (0: ties; events and watermarks right on intervals' ends)
    ts = np.cumsum(rng.integers(0, 4, n)) * 500_000
    ts -= rng.integers(0, 5, n) * 500_000 * (rng.random(n) < 0.3)  # some come late
    inputs = {"S": {SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
                    "k": rng.integers(0, keys, n).astype(np.int64), "ts": ts.astype(np.int64),
                    "v": rng.integers(0, 10, n).astype(np.float64),
                    "kind": rng.integers(0, 3, n).astype(np.int64)}}
    whole = output_records(run_reference(module, inputs))
    note(whole, kind=("window", "join", "pattern")[BODIES.index(body)])
    assert output_records(run_reference(module, inputs, 1)) == whole
    assert output_records(run_reference(module, inputs, batch)) == whole


def test_every_cut_of_the_input_gives_the_same_events():
    with bounded("rate intervals"):
        _every_cut_gives_the_same_events()
