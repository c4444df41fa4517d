"""``--load cost``: what each key cost its engine in a batch, from the engines' stats rows
(``splitter.key_cost``), and the Balancer deciding from it instead of events
(on the session's embedded MongoDB, without Spark)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from migration.hashing import kg_engine
from migration.store import StateStore
from splitter.balancer import Balancer
from splitter.key_cost import key_costs


def _engine(busy_s: float, stages: dict[str, float], key_load: dict[str, int]) -> dict:
    # the input tasks' stages ride along in a stats row and are not the engine's
    return {"busy_s": busy_s, "stages": {**stages, "read": 9.0, "route": 9.0},
            "key_load": key_load}


def test_a_key_costs_its_share_of_the_row_stages_and_an_equal_share_of_the_rest() -> None:
    # engine 0: 1.0 s of row stages over 10 events, 2.0 s of state work over 2 keys;
    # engine 1: 0.5 s over 5 events, nothing else
    stats = [_engine(3.0, {"unpack": 0.1, "restore": 1.2, "process": 0.8, "snapshot": 0.8,
                           "output": 0.1}, {'"a"': 8, '"b"': 2}),
             _engine(0.5, {"process": 0.5}, {'"c"': 5}),
             _engine(0.2, {"process": 0.2}, {})]  # an engine with no keys costs nothing
    costs = key_costs(stats)
    assert costs == pytest.approx({'"a"': 1.0 + 0.8, '"b"': 1.0 + 0.2, '"c"': 0.5})
    assert sum(costs.values()) == pytest.approx(3.0 + 0.5)  # every engine second, once
    assert key_costs([]) == {}


def _two_on_one_engine() -> tuple[str, str, str]:
    """Key texts: two on one KG engine of two, one on the other."""
    names = [f"k{i}" for i in range(20)]
    values = np.empty(len(names), dtype=object)
    values[:] = names
    engines = kg_engine(values, 2)
    first = [n for n, e in zip(names, engines, strict=True) if e == 0]
    other = next(n for n, e in zip(names, engines, strict=True) if e == 1)
    return json.dumps(first[0]), json.dumps(first[1]), json.dumps(other)


def test_the_balancer_moves_keys_on_cost_where_events_are_even(store: StateStore) -> None:
    # 10 events per engine, but engine 0's batch took 1.0 s and engine 1's 0.2 s: on
    # events nothing is to be done, on cost a key leaves engine 0
    heavy, light, other = _two_on_one_engine()
    stats = [{"engine": 0, **_engine(1.0, {"process": 1.0}, {heavy: 8, light: 2})},
             {"engine": 1, **_engine(0.2, {"process": 0.2}, {other: 10})}]
    decided = {}
    for load in ("events", "cost"):
        balancer = Balancer(store, "dlb-h", 2, threshold=15.0, load=load)
        balancer.prepare()
        metrics: dict = {}
        balancer(0, stats, metrics)
        decided[load] = metrics
        store.drop_run()
    assert decided["events"]["load_measure"] == "events"
    assert decided["events"]["load_rstd"] == 0.0
    assert decided["events"]["keys_moved"] == 0
    assert decided["cost"]["load_measure"] == "cost"
    assert decided["cost"]["load_rstd"] == pytest.approx(100 * 0.4 / 0.6, abs=1e-3)
    assert decided["cost"]["keys_moved"] == 1
    # what moved is counted in events, whatever the load measure: the light key's 2
    assert decided["cost"]["load_moved"] == 2


def test_the_load_measure_is_checked(store: StateStore) -> None:
    with pytest.raises(ValueError, match=r"load must be one of \('events', 'cost'\), got 'cpu'"):
        Balancer(store, "dlb-h", 2, load="cpu")


def test_the_row_stages_are_split_by_a_cost_per_key_and_per_event_fitted_over_engines(
        ) -> None:
    """Oracle: engines whose row seconds are made as 0.01 s per touched key plus
    0.001 s per event (numbers chosen by hand); the fit must find both, and a key's
    share of its engine's row seconds then follows 0.01 + 0.001 · its events."""
    from splitter.key_cost import EVENTS_ONLY, CostShape

    def engine(keys: int, events_each: int) -> dict:
        load = {json.dumps(f"k{keys}-{i}"): events_each for i in range(keys)}
        seconds = 0.01 * keys + 0.001 * keys * events_each
        return _engine(seconds, {"process": seconds}, load)

    shape = CostShape()
    assert shape.shape() == EVENTS_ONLY  # nothing seen: the events alone
    shape.observe([engine(10, 5)])
    assert shape.shape() == EVENTS_ONLY  # one engine cannot tell the two apart
    batch = [engine(10, 5), engine(40, 1), engine(3, 100)]
    shape.observe(batch)
    alpha, beta = shape.shape()
    assert (alpha, beta) == (pytest.approx(0.01), pytest.approx(0.001))
    costs = key_costs(batch, (alpha, beta))
    assert costs[json.dumps("k3-0")] == pytest.approx(0.01 + 0.1)
    assert costs[json.dumps("k40-0")] == pytest.approx(0.01 + 0.001)
    # by events alone the 40 light keys would cost their engine's 0.44 s by events,
    # 1/40 each: the same here, since all have one event; the heavy keys differ
    assert key_costs(batch)[json.dumps("k3-0")] == pytest.approx(0.33 / 3)


def test_a_fit_that_wants_a_negative_cost_keeps_the_better_single_term() -> None:
    """Oracle: two engines whose exact fit needs a negative per-key cost (the 100 keys of
    one event each took less than the one key of 1,000 events per event); the fit keeps
    beta alone, by hand (1000·1.0 + 100·0.05) / (1000² + 100²), and alpha 0."""
    from splitter.key_cost import CostShape

    shape = CostShape()
    shape.observe([_engine(1.0, {"process": 1.0}, {'"a"': 1000}),
                   _engine(0.05, {"process": 0.05}, {f'"b{i}"': 1 for i in range(100)})])
    alpha, beta = shape.shape()
    assert alpha == 0.0 and beta == pytest.approx((1000 * 1.0 + 100 * 0.05) / (1000**2 + 100**2))
