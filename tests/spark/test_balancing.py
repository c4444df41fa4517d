"""The product's promise: moving keys between engines never changes the events.

On skewed inputs that force rebalances (asserted), dlb-h, dlb-l and lptf produce exactly
the reference evaluator's events (which equal key grouping's on Spark, see
test_differential.py), with moved keys' state handed over through a real embedded
MongoDB. A chaos strategy moves random keys every batch (keys moving in consecutive
batches, moving back, keys with empty state, engines with no rows). PKG, which splits
keys, is shown to differ."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest
from support.chaos import chaos
from support.spark_runs import run_and_read

from splitter.policies import strategies

ROOT = Path(__file__).parent.parent.parent
SKEWED = {
    "fsd.epl": "tweets.jsonl",
    "busy_topic.epl": "tweets.jsonl",
    "sensor_average.epl": "readings.jsonl",
    "delay_streak.epl": "flights.jsonl",
}


def _moves(run) -> int:
    return sum(m["exported_keys"] for m in run.metrics)


MOVERS = ["dlb-h", "dlb-l", "lptf"]
# by default each strategy on one rule and each rule under one strategy (a diagonal);
# the other six pairs are slow tests
PAIRS = [pytest.param(rule, strategy, marks=() if (i - j) % len(MOVERS) == 0
                      else pytest.mark.slow)
         for i, rule in enumerate(sorted(SKEWED)) for j, strategy in enumerate(MOVERS)]


@pytest.mark.parametrize(("rule", "strategy"), PAIRS)
def test_key_moving_strategies_give_exactly_the_kg_events(spark, example, rule, strategy):
    module, path, expected = example(rule, f"skewed/{SKEWED[rule]}")
    run, records = run_and_read(module, path, engines=3, batch_size=30, strategy=strategy,
                                threshold=5.0, moves="always")
    assert _moves(run) > 0, "the skewed input must force key moves"
    # every key exported after batch t is imported in batch t+1 (none after the last)
    assert sum(m["imported_keys"] for m in run.metrics) == sum(
        m["exported_keys"] for m in run.metrics[:-1])
    assert any(m["rebalanced"] for m in run.metrics)
    assert records == expected


@pytest.mark.parametrize("strategy", ["elb", "clb", "milp"])
@pytest.mark.parametrize("rule", ["fsd.epl", "sensor_average.epl"])
def test_published_balancers_give_exactly_the_kg_events(spark, example, rule, strategy,
                                                        monkeypatch):
    """ELB, CLB (which decides every 10th batch, hence the small batches) and ALBIC's
    MILP (its migration budget raised from 5% of the keys: the sample has few) move
    whole keys with their state, so they too must reproduce KG exactly."""
    monkeypatch.setitem(strategies.STRATEGIES, "milp",
                        functools.partial(strategies.STRATEGIES["milp"], budget=0.5))
    module, path, expected = example(rule, f"skewed/{SKEWED[rule]}")
    run, records = run_and_read(module, path, engines=3, batch_size=15, strategy=strategy,
                                threshold=5.0, moves="always")
    assert _moves(run) > 0, f"{strategy} must move keys on the skewed input"
    assert records == expected


@pytest.mark.parametrize("rule", ["busy_topic.epl", "delay_streak.epl"])
def test_keys_moving_every_batch_and_back_change_nothing(spark, example, rule, monkeypatch):
    monkeypatch.setitem(strategies.STRATEGIES, "chaos", chaos)
    module, path, expected = example(rule, f"skewed/{SKEWED[rule]}")
    # the paper's Balancer: chaos's moves save nothing, and the gate would refuse them
    run, records = run_and_read(module, path, engines=5, batch_size=20, strategy="chaos",
                                moves="always")
    # maps 0 and 1 are fixed before the first decision, so moves start in batch 2
    assert _moves(run) >= len(run.metrics) - 2, "keys must move in almost every batch"
    assert any(0 in m["rows_per_engine"] for m in run.metrics), "an engine with no rows"
    assert records == expected


def test_pkg_splits_keys_and_changes_stateful_events(spark, example, capsys):
    module, path, expected = example("fsd.epl", "skewed/tweets.jsonl")
    _, records = run_and_read(module, path, engines=3, batch_size=30, strategy="pkg")
    got = Counter(repr(sorted(r.items())) for r in records)
    want = Counter(repr(sorted(r.items())) for r in expected)
    extra, missing = sum((got - want).values()), sum((want - got).values())
    with capsys.disabled():
        print(f"\nPKG on FSD: {len(records)} first stories vs KG {len(expected)} "
              f"({extra} extra, {missing} missing)")
    assert extra + missing > 0
