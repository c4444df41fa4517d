"""RSTD, engine loads, lower bounds and the load statistics window."""

from __future__ import annotations

import numpy as np
import pytest

from splitter.policies.stats import (
    LoadStatistics,
    capacity_weights,
    engine_loads,
    max_over_mean_bound,
    rstd,
    rstd_lower_bound,
)


@pytest.mark.parametrize(
    ("loads", "expected"),
    [([1, 1, 1], 0.0), ([0, 0], 0.0), ([1, 3], 50.0), ([15, 4, 1], 90.277), ([5], 0.0)],
)
def test_rstd(loads, expected) -> None:
    assert rstd(np.array(loads)) == pytest.approx(expected, abs=1e-3)


def test_engine_loads_and_capacity() -> None:
    load = np.array([1.0, 2.0, 3.0])
    assert engine_loads(load, np.array([0, 1, 1]), 3).tolist() == [1, 5, 0]
    # shares 2/3 and 1/3: relative load = load / (N · share) = load · [0.75, 1.5]
    assert capacity_weights(np.array([2.0, 1.0]), 2).tolist() == [0.75, 1.5]
    rel = engine_loads(load, np.array([0, 1, 1]), 2, capacity=np.array([2.0, 1.0]))
    assert rel.tolist() == [0.75, 7.5]
    with pytest.raises(ValueError, match="capacity must be 2 positive finite weights"):
        capacity_weights(np.array([1.0, 0.0]), 2)
    with pytest.raises(ValueError, match=r"key_map holds engine ids outside \[0, 2\)"):
        engine_loads(load, np.array([0, 1, 3]), 2)


def test_lower_bounds() -> None:
    # p1 = 0.6 on 5 engines: the heaviest key's engine carries 3x the mean, and the best
    # map (key alone, the rest spread) has RSTD 100 (b-1)/sqrt(N-1) = 100.
    load = np.array([6, 1, 1, 1, 1])
    assert max_over_mean_bound(load, 5) == pytest.approx(3.0)
    assert rstd_lower_bound(load, 5) == pytest.approx(100.0)
    assert rstd_lower_bound(load, 5) == pytest.approx(rstd(np.array([6, 1, 1, 1, 1])))
    assert rstd_lower_bound(np.array([1, 1, 1, 1]), 2) == 0.0
    assert max_over_mean_bound(np.zeros(3), 2) == 1.0


def test_sliding_window() -> None:
    stats = LoadStatistics(window=2)
    stats.update(np.array([0, 0, 1]))
    stats.update(np.array([1, 2]))
    assert stats.load.tolist() == [2, 2, 1]
    stats.update(np.array([3]))  # the first batch leaves the window
    assert stats.load.tolist() == [0, 1, 1, 1]
    assert stats.seen.tolist() == [2, 2, 1, 1]
    assert stats.n_keys == 4


def test_weighted_events_load_by_weight_and_are_seen_as_events() -> None:
    stats = LoadStatistics(window=2)
    stats.update(np.array([0, 0, 1]), np.array([0.25, 0.25, 3.0]))
    stats.update(np.array([2]), np.array([1.5]))
    assert stats.load.tolist() == [0.5, 3.0, 1.5]
    assert stats.series.tolist() == [[0.5, 3.0, 0.0], [0.0, 0.0, 1.5]]
    assert stats.seen.tolist() == [2, 1, 1]  # events, whatever their weight
    stats.update(np.array([], dtype=np.int64), np.array([]))
    assert stats.load.tolist() == [0.0, 0.0, 1.5]


def test_decay_and_growth() -> None:
    stats = LoadStatistics(window=3, decay=0.5)
    stats.ensure_keys(3)
    stats.update(np.array([0, 0, 0, 0]))
    stats.update(np.array([1, 1]))
    stats.update(np.array([0], dtype=np.uint8))
    assert stats.load.tolist() == pytest.approx([1 + 0.25 * 4, 0.5 * 2, 0])
    stats.update(np.array([], dtype=np.int64))
    stats.update(np.array([], dtype=np.int64))
    stats.update(np.array([], dtype=np.int64))
    assert stats.load.tolist() == [0, 0, 0]  # exactly zero once out of the window


@pytest.mark.parametrize("bad", [np.array([-1]), np.array([0.5])])
def test_statistics_reject_bad_ids(bad) -> None:
    with pytest.raises(ValueError, match="key ids must be non-negative integers"):
        LoadStatistics().update(bad)


def test_statistics_reject_bad_parameters() -> None:
    with pytest.raises(ValueError, match="window must be >= 1 batch"):
        LoadStatistics(window=0)
    with pytest.raises(ValueError, match=r"decay must be in \(0, 1\]"):
        LoadStatistics(decay=1.5)
