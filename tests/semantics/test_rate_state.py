"""Output rate limiting's per-key state as columns (``cep.engine.rate.state``) against
the per-key dicts it replaces (``support.rate_limit_oracle``): the same events for
every clause the columns serve, over a window rule, a join and a pattern, with random
keys, ties in time and late events, on two engines that hand keys to each other and
restart from their snapshots between randomly cut batches; and both equal to the
whole input's reference run. The per-key dicts a key leaves with read back the same.

Oracle: ``DictRateState``, the per-key dict store the columns replaced. It shares
everything but the store with what it checks (``RateLimited``, the array intervals of
``cep.engine.rate.intervals``, ``TimerIndex``): it shows that the columns keep what the
dicts kept, not that the clause means what docs/esper.md says (that is
``test_window_oracle.py``, whose oracle shares no code with cep). The share of examples
whose output is empty is bounded."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.moving_engines import run_moving
from support.rate_bodies import BODIES
from support.rate_limit_oracle import DictRateState
from support.shares import bounded, note

from cep.engine.output import output_records
from cep.engine.rate.limit import RateLimited
from cep.engine.rate.state import RateState
from cep.engine.table import SEQ, SUB
from cep.reference import run_reference
from grammar.compile import compile_text

N, KEYS = 60, 4
CLAUSES = st.one_of(
    st.builds("OUTPUT {} EVERY {} sec".format, st.sampled_from(["ALL", "LAST", "FIRST"]),
              st.integers(1, 5)),
    st.builds("OUTPUT {} EVERY {} EVENTS".format,
              st.sampled_from(["ALL", "LAST", "FIRST", "SNAPSHOT"]), st.integers(1, 4)))


def events(seed: int) -> dict:
    """Steps of half a second (0: ties; events and watermarks right on intervals'
    ends), some late."""
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(0, 4, N)) * 500_000
    ts -= rng.integers(0, 5, N) * 500_000 * (rng.random(N) < 0.3)
    return {"S": {SEQ: np.arange(N, dtype=np.int64), SUB: np.zeros(N, dtype=np.int64),
                  "k": rng.integers(0, KEYS, N).astype(np.int64), "ts": ts.astype(np.int64),
                  "v": rng.integers(0, 10, N).astype(np.float64),
                  "kind": rng.integers(0, 3, N).astype(np.int64)}}


@settings(max_examples=120, deadline=None)
@given(body=st.sampled_from(BODIES), clause=CLAUSES, lateness=st.integers(0, 2),
       seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, N - 1), max_size=6),
       movers=st.integers(0, 2 ** (7 * KEYS)))
def _columns_give_the_events_of_the_per_key_dicts(body, clause, lateness, seed, cuts,
                                                      movers):
    late = f" LATENESS {lateness} sec" if lateness else ""
    module = compile_text("CREATE SCHEMA S (k long, ts timestamp, v double, kind int) "
                          f"TIMESTAMP ts{late};\n" + body.format(clause) + ";", "rule")
    inputs = events(seed)
    columns = run_moving(module, inputs, N, cuts, movers, KEYS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RateLimited, "_columns",
                      lambda self: DictRateState(self.limit.period_us, self.limit.events))
        dicts = run_moving(module, inputs, N, cuts, movers, KEYS)
    note(columns, kind=("window", "join", "pattern")[BODIES.index(body)])
    assert columns == dicts
    assert columns == output_records(run_reference(module, inputs))


def test_columns_give_the_events_of_the_per_key_dicts():
    with bounded("rate state"):
        _columns_give_the_events_of_the_per_key_dicts()


ROWS = st.lists(st.tuples(st.integers(0, 99), st.integers(-5, 5), st.booleans(),
                          st.sampled_from(['{"v":1}', '{"v":2.5}', "{}"]),
                          st.integers(0, 99), st.integers(-1, 99)).map(list), max_size=3)
STATES = st.dictionaries(
    st.one_of(st.integers(0, 6), st.sampled_from(["a", "b"])),
    st.fixed_dictionaries({"count": st.integers(0, 3),
                           "bucket": st.one_of(st.none(), st.integers(-3, 9)),
                           "first_bucket": st.one_of(st.none(), st.integers(-3, 9)),
                           "pending": ROWS, "latest": st.none()}),
    max_size=6)


@settings(max_examples=200, deadline=None)
@given(states=STATES, leaving=st.lists(st.one_of(st.integers(0, 8), st.just("b"))),
       events_n=st.one_of(st.none(), st.integers(1, 4)))
def test_keys_leave_with_the_dicts_they_came_with(states, leaving, events_n):
    kept = {k: s for k, s in states.items()  # what either store lets go of on arrival
            if s["bucket"] is not None or s["pending"]
            or (events_n is not None and s["count"] % events_n)}
    mine, oracle = RateState(1_000_000, events_n), DictRateState(1_000_000, events_n)
    for store in (mine, oracle):
        store.put(states)
    assert mine.as_dicts() == oracle.as_dicts() == kept
    assert mine.held_keys() == set(kept)
    assert sorted(map(repr, mine.due(5_000_000).tolist())) == sorted(
        map(repr, oracle.due(5_000_000).tolist()))
    assert mine.take_out(leaving) == oracle.take_out(leaving)
    assert mine.as_dicts() == oracle.as_dicts()
