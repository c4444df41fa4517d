"""``--engines auto`` on the reference evaluator's engines (issue 51): a live input
whose rate steps up 4x and back down (``cep.testing.elastic``: simulated arrivals and
engine time, the real engines, Splitter and Balancer), the policy
(``splitter.autoscale``) scaling the run out and back in by scale requests.

Oracles: **key grouping at a fixed engine count** (``split_run`` without a policy) and
**the reference evaluator** (one engine over the whole input, ``runner="local"``),
events compared as multisets; the rules are ``support.beats``' (pattern timers, WITHIN,
MATCH_RECOGNIZE, windows), so keys move with open state at each change. The run must
change its count (else the equality proves nothing), at most twice per step, settle at
a count that keeps up in the simulation (the lag at the end of the high phase is
shrinking, its engines under ``u``) and return to the low count's neighbourhood."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from support.beats import RULES, beats

from cep.api import compile_rules
from cep.run_config import RunConfig
from cep.testing import assert_events_equal
from cep.testing.elastic import ElasticLoad, Phase
from cep.testing.strategies import _specs, split_run
from splitter.autoscale import Autoscaler

COMPILED = compile_rules(RULES)
LOW, HIGH = 8.0, 32.0  # events/s: one engine (20/s) keeps up with LOW, not with HIGH
UP_AT, DOWN_AT = 15.0, 40.0  # simulated seconds


@pytest.fixture(scope="module")
def specs():
    folder = Path(tempfile.mkdtemp(prefix="cep-autoscale-"))
    return _specs(COMPILED.module, beats(n=1400, devices=24, seed=7), folder)


@pytest.mark.parametrize("strategy", ["kg", "dlb-l"])
def test_a_4x_step_up_and_down_scales_out_and_in_with_kg_s_events(specs, strategy):
    load = ElasticLoad(Autoscaler(1, 8), [Phase(UP_AT, LOW), Phase(DOWN_AT - UP_AT, HIGH),
                                          Phase(1, LOW)], capacity=20.0)
    config = RunConfig(specs, runner="local", engines=1, batch_size=80, progress=False,
                       strategy=strategy)
    run = split_run(COMPILED.module, config, elastic=load)
    fixed = split_run(COMPILED.module, RunConfig(specs, runner="local", engines=3,
                                                 batch_size=80, progress=False))
    reference = COMPILED.run(specs[0], runner="local")
    assert len(reference) > 100
    assert_events_equal(run.records, fixed.records)
    assert_events_equal(run.records, reference)
    trace = load.trace
    decided = [(r["start"], r["action"], r["engines"]) for r in trace
               if r["action"] in ("out", "in")]
    counts = [r["engines"] for r in trace]
    print(f"\n{strategy}: requests {load.requests}; decisions {decided}; "
          f"{len(trace)} batches, {sum(m['exported_keys'] for m in run.metrics)} keys "
          "handed over")
    up = [d for d in decided if UP_AT <= d[0] < DOWN_AT]
    down = [d for d in decided if d[0] >= DOWN_AT]
    assert [d for d in decided if d[0] < UP_AT] == []
    assert 1 <= len(up) <= 2 and all(a == "out" for _, a, _ in up)
    assert 1 <= len(down) <= 2 and all(a == "in" for _, a, _ in down)
    high = [r for r in trace if UP_AT <= r["start"] < DOWN_AT]
    settled = high[-1]["engines"]
    assert HIGH / (settled * load.capacity) <= load.policy.upper  # it keeps up
    assert high[-1]["behind"] < max(r["behind"] for r in high)  # the lag drains
    assert counts[-1] < settled and all(1 <= n <= 8 for n in counts)
    assert sum(m["exported_keys"] for m in run.metrics) > 0
