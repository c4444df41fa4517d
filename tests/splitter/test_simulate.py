"""The trace simulator and the periodic-Zipf workload."""

from __future__ import annotations

import numpy as np
import pytest

from splitter.policies.simulate import (
    periodic_zipf_trace,
    phase_schedule,
    simulate,
    zipf_probabilities,
)


@pytest.fixture(scope="module")
def trace() -> np.ndarray:
    # 2 cycles of (0.2 for 20k events, 1.5 for 40k events) over 512 keys
    return periodic_zipf_trace(120_000, n_keys=512, durations=(2, 4), rate=10_000, seed=1)


def test_phase_schedule() -> None:
    phases = phase_schedule(25, durations=(1, 2), rate=5)
    assert phases.tolist() == [0] * 5 + [1] * 10 + [0] * 5 + [1] * 5
    assert phase_schedule(0).tolist() == []


def test_trace_is_deterministic_and_follows_the_phases(trace: np.ndarray) -> None:
    assert np.array_equal(trace, periodic_zipf_trace(120_000, 512, (0.2, 1.5), (2, 4), 10_000, 1))
    assert trace.min() >= 0 and trace.max() < 512
    skewed = np.bincount(trace[20_000:60_000], minlength=512)
    flat = np.bincount(trace[:20_000], minlength=512)
    p1 = zipf_probabilities(512, 1.5)[0]
    assert skewed.max() / 40_000 == pytest.approx(p1, abs=0.01)
    assert flat.max() / 20_000 < 0.01
    # the rank → key mapping is fixed: the same key is hottest in both skewed phases
    assert np.argmax(skewed) == np.argmax(np.bincount(trace[80_000:], minlength=512))


def test_shift_hot_moves_the_hot_keys() -> None:
    shifted = periodic_zipf_trace(120_000, 512, durations=(2, 4), rate=10_000, seed=1,
                                  shift_hot=True)
    first = np.argmax(np.bincount(shifted[20_000:60_000], minlength=512))
    second = np.argmax(np.bincount(shifted[80_000:], minlength=512))
    assert first != second


def test_kg_never_moves_and_reports_bounds(trace: np.ndarray) -> None:
    result = simulate(trace, "kg", n_engines=4, window=5_000)
    s = result.summary
    assert s["rebalances"] == 0 and s["events_moved"] == 0
    assert result.engine_loads.shape == (24, 4)
    assert result.engine_loads.sum() == len(trace)
    assert np.all(result.lower_bound_max_over_mean >= 1.0)
    assert s["makespan"] >= s["makespan_lower_bound"]


@pytest.mark.parametrize("strategy", ["dlb-h", "dlb-l", "lptf", "elb", "clb", "milp"])
def test_balancers_beat_kg_and_respect_the_bound(trace: np.ndarray, strategy: str) -> None:
    kg = simulate(trace, "kg", n_engines=4, window=5_000).summary
    result = simulate(trace, strategy, n_engines=4, window=5_000)
    s = result.summary
    assert s["avg_rstd"] < kg["avg_rstd"]
    assert s["rebalances"] > 0 and s["events_moved"] > 0
    assert s["makespan"] >= s["makespan_lower_bound"] - 1e-9
    assert np.all(result.keys_moved_pct <= 100.0)
    assert result.keys_moved[-1] == 0  # no decision after the last window


def test_state_models(trace: np.ndarray) -> None:
    length = simulate(trace, "dlb-h", n_engines=4, window=5_000, H=3)
    time_based = simulate(trace, "dlb-h", n_engines=4, window=5_000, state_model="time")
    assert np.all(length.state_moved <= 3 * length.keys_moved)
    assert time_based.summary["events_moved"] > 0
    with pytest.raises(ValueError, match="state_model must be one of"):
        simulate(trace, "dlb-h", n_engines=4, window=5_000, state_model="space")


def test_pkg_splits_keys(trace: np.ndarray) -> None:
    result = simulate(trace, "pkg", n_engines=4, window=5_000)
    assert result.summary["rebalances"] == 0
    assert result.summary["avg_split_keys_pct"] > 0
    assert result.engine_loads.sum() == len(trace)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="key_trace must be a 1-D array of non-negative"):
        simulate(np.array([-1, 2]), "kg")
    with pytest.raises(KeyError, match="unknown strategy 'nope'"):
        simulate(np.array([1, 2]), "nope")
