"""ELB (Guo & Zhou, Algorithm 1): hand-worked cases from the paper's definitions."""

from __future__ import annotations

import numpy as np
import pytest

from splitter.policies.base import LoadSnapshot
from splitter.policies.elb import elb
from splitter.policies.stats import engine_loads, imbalance


def test_elb_hand_example() -> None:
    # 3 engines, tolerance 0.5.  e0: k0 6, k1 3, k2 2, k3 2, k4 1, k5 1 (15); e1: k6 3;
    # e2: k7 2, k8 1.  Total 21, mean 7, range [v, u] = [3.5, 10.5].
    # Phase 1: OI = {e0}, UI = {e1 (3), e2 (3)}; the emptiest receiver has room 10.5 - 3 = 7.5.
    # Phase 2, e0: θ = min(15 - 7, 7.5) = 7.5 → largest below is k0 (6); e0 → 9.
    #   θ = min(2, 7.5) = 2 → k4 (1); e0 → 8.  θ = 1 → no key below 1: stop.  PQ = [k0, k4].
    # Phase 3: k0 → least loaded of UI, e1 (tie with e2 → lower id): e1 = 9 ≥ 7 leaves UI.
    #   k4 → e2: 4.  Loads [8, 9, 4]: all inside [3.5, 10.5], with two moves.
    load = np.array([6, 3, 2, 2, 1, 1, 3, 2, 1])
    current = np.array([0, 0, 0, 0, 0, 0, 1, 2, 2])
    out = elb(LoadSnapshot(load, current, 3), tolerance=0.5)
    assert out.tolist() == [1, 0, 0, 0, 2, 0, 1, 2, 2]
    assert engine_loads(load, out, 3).tolist() == [8, 9, 4]


def test_elb_moves_a_heavy_key_where_it_fits() -> None:
    # e0: k0 3, k1 6 (9); e1: k2 1.  Mean 5, tolerance 0.15: (u - v)/2 = 0.75, far below k0,
    # but e1 has room 5.75 - 1 = 4.75: θ = min(4, 4.75) → k0 moves, [6, 4].
    assert elb(LoadSnapshot(np.array([3, 6, 1]), np.array([0, 0, 1]), 2)).tolist() == [1, 0, 1]
    # e0: k0 5, k1 8 (13); e1: k2 3; e2: k3 2.  Mean 6, u = 6.9: the emptiest receiver (e2)
    # has room 4.9, so k0 (5) would push it out of range and stays; nothing else fits.
    load = np.array([5, 8, 3, 2])
    current = np.array([0, 0, 1, 2])
    assert elb(LoadSnapshot(load, current, 3)).tolist() == current.tolist()


@pytest.mark.parametrize(("state", "moved_key"), [(None, 0), ([100, 1, 1, 1], 1),
                                                  ([1, 100, 1, 1], 0)])
def test_elb_sheds_less_state_at_equal_load(state, moved_key) -> None:
    # e0: k0 2, k1 2, k2 9 (13); e1: k3 7.  Mean 10, tolerance 0.25: range [7.5, 12.5], e1's
    # room 5.5.  θ = min(3, 5.5) → a load-2 key; then θ = min(1, 5.5) → nothing.
    # Of the two load-2 keys the one with less state goes (ties: lower key id).
    load = np.array([2, 2, 9, 7])
    current = np.array([0, 0, 0, 1])
    state_size = None if state is None else np.array(state, dtype=float)
    out = elb(LoadSnapshot(load, current, 2, state_size=state_size), tolerance=0.25)
    assert np.flatnonzero(out != current).tolist() == [moved_key]
    assert engine_loads(load, out, 2).tolist() == [11, 9]


def test_elb_does_nothing_inside_the_range() -> None:
    # e0: k0 1, k1 1, k2 20 (22); e1: k3 18.  Mean 20: inside ±15% (the default tolerance is
    # θ / 100), so nothing moves although e0 is above the mean.  With θ = 8 the range is
    # [18.4, 21.6]: e0 sheds below θ = min(2, 3.6), one 1 (then θ = 1: nothing).
    load = np.array([1, 1, 20, 18])
    current = np.array([0, 0, 0, 1])
    assert elb(LoadSnapshot(load, current, 2)).tolist() == current.tolist()
    assert elb(LoadSnapshot(load, current, 2, threshold=8.0)).tolist() == [1, 0, 0, 1]
    out = elb(LoadSnapshot(load, current, 2, threshold=30.0), tolerance=0.08)
    assert out.tolist() == [1, 0, 0, 1]


def test_elb_moves_only_from_over_to_under_loaded_engines() -> None:
    rng = np.random.default_rng(4)
    for _ in range(50):
        n = int(rng.integers(2, 7))
        load = rng.integers(0, 20, 60).astype(float)
        current = rng.integers(0, n, 60)
        out = elb(LoadSnapshot(load, current, n), tolerance=float(rng.uniform(0.05, 1.0)))
        loads = engine_loads(load, current, n)
        moved = np.flatnonzero(out != current)
        assert np.all(loads[current[moved]] > load.sum() / n)
        assert np.all(loads[out[moved]] < load.sum() / n)
        assert imbalance(load, out, n) <= imbalance(load, current, n)


def test_elb_capacity_targets() -> None:
    # Capacities [3, 1]: targets 12 and 4 of 16, tolerance 0.5: u = [18, 6].  Everything is on
    # e1 (excess 12); e0 has room 18.  e1 sheds 4 (θ = 12), 4 (θ = 8), not the third 4
    # (θ = 4), then 1, 1, 1 (θ = 3, 2, 1), not the last 1: e0 = 11, e1 = 5.
    load = np.array([4, 4, 4, 1, 1, 1, 1], dtype=float)
    current = np.ones(7, dtype=np.int64)
    out = elb(LoadSnapshot(load, current, 2, capacity=np.array([3.0, 1.0])), tolerance=0.5)
    assert out.tolist() == [0, 0, 1, 0, 0, 0, 1]


def test_elb_rejects_a_negative_tolerance() -> None:
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        elb(LoadSnapshot(np.array([1.0, 2.0]), np.array([0, 0]), 2), tolerance=-0.1)
