"""Capacity shares (Schneider et al.): Fox's greedy against hand cases and brute force, the
monotone cost curves, and heterogeneous engines in the trace simulator.

Oracle of ``test_fox_is_optimal``: every split of the units, enumerated (no shared
code). An example with one engine or no unit has one split only and proves nothing: the
share of such examples is measured and bounded."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note

from splitter.policies.capacity import CapacityModel, minimax_shares
from splitter.policies.simulate import periodic_zipf_trace, simulate


def test_fox_hand_example() -> None:
    # F_0(i) = i, F_1(i) = 3i, 4 units.  Next costs: (1, 3) → e0; (2, 3) → e0; (3, 3) tie →
    # lower j, e0; (4, 3) → e1.  Shares [3, 1], max cost 3: optimal (the split [4, 0] costs 4,
    # [2, 2] costs 6).
    units = np.arange(5)
    assert minimax_shares(np.vstack([units, 3 * units]), 4).tolist() == [3, 1]
    assert minimax_shares(np.vstack([units, 3 * units]), 4, minimum=[0, 2]).tolist() == [2, 2]


@st.composite
def monotone_curves(draw):
    edge = draw(st.integers(0, 9)) == 0  # now and then one engine or no unit
    n = draw(st.integers(1, 3) if edge else st.integers(2, 3))
    total = draw(st.integers(0, 6) if edge else st.integers(1, 6))
    steps = draw(st.lists(st.lists(st.integers(0, 5), min_size=total, max_size=total),
                          min_size=n, max_size=n))
    return np.array([np.concatenate([[0], np.cumsum(s)]) for s in steps], dtype=float), total


@settings(max_examples=200, deadline=None, database=None)
@given(monotone_curves())
def _fox_is_optimal(problem) -> None:
    curves, total = problem
    note([] if len(curves) == 1 or total == 0 else [total])
    units = minimax_shares(curves, total)
    assert units.sum() == total and units.min() >= 0
    best = min(max(curves[j, w[j]] for j in range(len(w)))
               for w in itertools.product(range(total + 1), repeat=len(curves))
               if sum(w) == total)
    assert max(curves[j, units[j]] for j in range(len(units))) == best


def test_fox_is_optimal() -> None:
    with bounded("fox (one split only)"):
        _fox_is_optimal()


def test_fox_rejects_bad_curves() -> None:
    with pytest.raises(ValueError, match="non-decreasing"):
        minimax_shares(np.array([[0.0, 2.0, 1.0]]), 2)
    with pytest.raises(ValueError, match="columns"):
        minimax_shares(np.zeros((2, 3)), 3)
    with pytest.raises(ValueError, match="minimum"):
        minimax_shares(np.zeros((2, 3)), 2, minimum=[2, 1])


def test_model_learns_a_three_times_slower_engine() -> None:
    # Busy time = events · cost per event, costs [1, 1, 1, 3, 1].  The curves are c_e · w, so
    # the minimax shares are ∝ 1/c_e: 3/13 each and 1/13 for the slow engine.
    model = CapacityModel(5)
    cost = np.array([1.0, 1.0, 1.0, 3.0, 1.0])
    events = np.full(5, 2000.0)
    model.observe(events, events * cost)
    shares = model.shares()
    assert shares.sum() == pytest.approx(1.0)
    assert shares == pytest.approx([3 / 13, 3 / 13, 3 / 13, 1 / 13, 3 / 13], abs=2e-3)
    curves = model.curves()
    assert curves[3, 500] == pytest.approx(3 * curves[0, 500])


def test_curves_are_smoothed_monotone_and_extrapolated() -> None:
    model = CapacityModel(2, smoothing=0.5, resolution=10)
    model.observe(np.array([5.0, 5.0]), np.array([4.0, 1.0]))  # e0 at w = 0.5: F = 0.4
    model.observe(np.array([5.0, 5.0]), np.array([2.0, 1.0]))  # blended: 0.4 → 0.3
    model.observe(np.array([3.0, 7.0]), np.array([3.6, 1.4]))  # e0 at w = 0.3: F = 0.36
    curve = model.curves()[0]
    # points (0, 0), (3, 0.36), (5, 0.3) → monotone regression pools the last two at 0.33;
    # linear in between; past w = 0.5 the last segment is flat, so the slope from the origin
    # (0.33 / 5 per unit) continues.
    assert np.all(np.diff(curve) >= 0)
    assert curve[3] == pytest.approx(0.33) and curve[5] == pytest.approx(0.33)
    assert curve[10] == pytest.approx(0.66)
    assert curve[1] == pytest.approx(0.11)


def test_unknown_engines_borrow_the_median_and_no_data_means_equal() -> None:
    assert CapacityModel(4).shares().tolist() == [0.25] * 4
    model = CapacityModel(3)
    model.observe(np.array([10.0, 10.0, 0.0]), np.array([1.0, 3.0, 0.0]))
    # e2 never ran: it borrows the median per-event cost of e0 and e1 (0.2 per event)
    assert np.isnan(model.curves()[2]).all()
    shares = model.shares()
    assert shares[0] > shares[2] > shares[1]
    model.observe(np.zeros(3), np.zeros(3))  # an empty batch teaches nothing
    assert model.shares().tolist() == shares.tolist()


def test_model_rejects_bad_measurements() -> None:
    with pytest.raises(ValueError, match="must have 2 values"):
        CapacityModel(2).observe(np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="must be finite and non-negative"):
        CapacityModel(2).observe(np.array([1.0, -1.0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match=r"smoothing must be in \(0, 1\]"):
        CapacityModel(2, smoothing=0.0)


@pytest.fixture(scope="module")
def flat_trace() -> np.ndarray:
    return periodic_zipf_trace(200_000, n_keys=2048, exponents=(0.2,), durations=(1,),
                               rate=200_000, seed=3)


@pytest.mark.parametrize("strategy", ["dlb-l", "lptf", "elb", "milp"])
def test_measured_capacity_unloads_a_slow_engine(flat_trace: np.ndarray, strategy: str) -> None:
    # Engine 2 needs 3x the busy time per event.  With equal shares it gets a fifth of the
    # events and finishes last every window; measured shares give it about a third of what
    # each other engine gets (1/13 vs 3/13), and the busy makespan drops.
    cost = np.array([1.0, 1.0, 3.0, 1.0, 1.0])
    equal = simulate(flat_trace, strategy, 5, 5_000, engine_cost=cost)
    measured = simulate(flat_trace, strategy, 5, 5_000, engine_cost=cost, capacity="measured")
    late = measured.engine_loads[-10:].sum(axis=0)
    ratio = late[2] / np.delete(late, 2).mean()
    assert ratio == pytest.approx(1 / 3, abs=0.1)
    assert measured.shares[-1] == pytest.approx([3 / 13, 3 / 13, 1 / 13, 3 / 13, 3 / 13],
                                                abs=5e-3)
    assert measured.summary["busy_makespan"] < 0.8 * equal.summary["busy_makespan"]
    assert equal.busy[-1, 2] == pytest.approx(3 * equal.engine_loads[-1, 2])


def test_simulate_rejects_bad_capacity_options(flat_trace: np.ndarray) -> None:
    with pytest.raises(ValueError, match="capacity"):
        simulate(flat_trace, "kg", capacity="fast")
    with pytest.raises(ValueError, match="engine_cost"):
        simulate(flat_trace, "kg", engine_cost=np.array([1.0, 0.0, 1.0, 1.0, 1.0]))
