"""Balancing strategies: hand-worked Algorithm 1 / LPTF examples, an exact reference
implementation of Algorithm 1, and properties every key-preserving strategy must keep.

Oracles: ``reference_dlb`` below, an exact integer reading of Algorithm 1 (DLB-H and
DLB-L) written from the paper, sharing no code with ``splitter.policies`` (not even
``imbalance``); the other strategies have only properties (a total map, RSTD never
worse, idle keys stay, DLB a fixed point), which check no particular map. An example
in which nothing moves proves little (the map handed back unchanged passes): the share
of such examples is measured and bounded."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note

from splitter.policies.base import LoadSnapshot
from splitter.policies.names import KEY_PRESERVING, MAP_STRATEGIES
from splitter.policies.stats import engine_loads, imbalance
from splitter.policies.strategies import (
    PERIODS,
    STRATEGIES,
    dlb_h,
    dlb_l,
    get_strategy,
    kg,
    lptf,
)

# Shared hand example: 3 engines, 6 keys.
#   key     k0 k1 k2 k3 k4 k5
#   load     8  4  3  2  2  1
#   engine   0  0  0  1  1  2   → engine loads [15, 4, 1], RSTD 90.3 %
LOAD = np.array([8, 4, 3, 2, 2, 1])
MAP = np.array([0, 0, 0, 1, 1, 2])


def test_rstd_of_hand_example() -> None:
    assert imbalance(LOAD, MAP, 3) == pytest.approx(90.277, abs=1e-3)


def test_dlb_h_hand_example() -> None:
    # Iteration 1: order [e0 15, e1 4, e2 1], e_min = e2.  e0: improving loads are < 15-1 = 14;
    #   heaviest is k0 (8) → move: loads [7, 4, 9], RSTD 30.8 % > 15.
    # Iteration 2: order [e2 9, e0 7, e1 4], e_min = e1.  e2 holds k0 (8), k5 (1); limit 9-4 = 5
    #   → k5 (1) → move: loads [7, 5, 8], RSTD 18.7 % > 15.
    # Iteration 3: order [e2 8, e0 7, e1 5], e_min = e1.  e2: limit 3, only k0 (8) → none.
    #   e0: limit 2, k1 (4), k2 (3) → none.  Next is e_min → return, still above θ.
    out = dlb_h(LoadSnapshot(LOAD, MAP, 3))
    assert out.tolist() == [2, 0, 0, 1, 1, 1]
    assert imbalance(LOAD, out, 3) == pytest.approx(18.71, abs=0.01)


def test_dlb_l_hand_example() -> None:
    # Iteration 1: order [e0 15, e1 4, e2 1], e_min = e2.  e0's lightest k2 (3) < 14 → move:
    #   loads [12, 4, 4], RSTD 56.6 %.
    # Iteration 2: order [e0 12, e1 4, e2 4] (tie → lower id first), e_min = e2.  e0's
    #   lightest k1 (4) < 12-4 = 8 → move: loads [8, 4, 8], RSTD 28.3 %.
    # Iteration 3: order [e0 8, e2 8, e1 4], e_min = e1.  e0's lightest k0 (8) ≥ 4 → next
    #   engine (the listing does not try another key of e0).  e2's lightest k5 (1) < 4 → move:
    #   loads [8, 5, 7], RSTD 18.7 %.
    # Iteration 4: order [e0 8, e2 7, e1 5], e_min = e1.  e0: 8 ≥ 3.  e2: lightest k2 (3) ≥ 2.
    #   Next is e_min → return.
    out = dlb_l(LoadSnapshot(LOAD, MAP, 3))
    assert out.tolist() == [0, 2, 2, 1, 1, 1]
    assert imbalance(LOAD, out, 3) == pytest.approx(18.71, abs=0.01)


@pytest.mark.parametrize(("threshold", "expected"), [(15.0, [0, 1, 0, 1]), (20.0, [0, 1, 0, 0])])
def test_dlb_h_stops_at_threshold_and_breaks_ties_by_highest_key(threshold, expected) -> None:
    # Loads [5, 5, 1, 1] all on e0 of 2 engines: [12, 0], RSTD 100 %.
    # 1: limit 12 → heaviest is load 5; of the tied k0/k1 DLB-H takes k1 → [7, 5], RSTD 16.7 %.
    # 2 (θ = 15 only): limit 2 → load 1, tied k2/k3 → k3 → [6, 6], RSTD 0.
    out = dlb_h(LoadSnapshot(np.array([5, 5, 1, 1]), np.zeros(4, dtype=int), 2,
                             threshold=threshold))
    assert out.tolist() == expected


def test_dlb_does_nothing_below_threshold() -> None:
    load = np.array([3, 3, 3, 2, 2, 2])
    current = np.array([0, 1, 2, 0, 1, 2])
    for name in ("dlb-h", "dlb-l", "lptf"):
        assert STRATEGIES[name](LoadSnapshot(load, current, 3)).tolist() == current.tolist()


def test_lptf_hand_example() -> None:
    # Keys by load desc (ties: lower id): k0 8, k1 4, k2 3, k3 2, k4 2, k5 1; engines start
    # at [0, 0, 0] and each key goes to the least loaded (ties: lower id):
    #   k0→e0 [8,0,0]  k1→e1 [8,4,0]  k2→e2 [8,4,3]  k3→e2 [8,4,5]  k4→e1 [8,6,5]  k5→e2 [8,6,6]
    out = lptf(LoadSnapshot(LOAD, MAP, 3))
    assert out.tolist() == [0, 1, 2, 2, 1, 2]
    assert engine_loads(LOAD, out, 3).tolist() == [8, 6, 6]


def test_lptf_keeps_the_current_map_when_greedy_is_worse() -> None:
    # Current {6, 6, 1} / {4, 4, 4}: loads [13, 12], RSTD 4 % > θ = 2.  LPT gives
    # 6→e0, 6→e1, 4→e0, 4→e1, 4→e0, 1→e1 = [14, 11], RSTD 12 %: worse, so the map stays.
    load = np.array([6, 6, 4, 4, 4, 1])
    current = np.array([0, 0, 1, 1, 1, 0])
    assert imbalance(load, current, 2) == pytest.approx(4.0)
    assert lptf(LoadSnapshot(load, current, 2, threshold=2.0)).tolist() == current.tolist()


def test_capacity_balances_relative_load() -> None:
    # Capacities [2, 1]: engine 0 should carry 2/3 of the 16 events.  Relative load is
    # load / (N · share) = load · [0.75, 1.5]; the best integer split is [10, 6] → relative
    # [7.5, 9], RSTD 9.1 %.  LPT on relative loads (ties → lower id): 4→e0 (3), 4→e1 (6),
    # 2→e0 (4.5), 2→e0 (6), 2→e0 (7.5, tie at 6), 2→e1 (9).  DLB-H: move 4 (limit 16) →
    # [12, 4], RSTD 20 %; move 2 (limit 2.86) → [10, 6].  DLB-L: three 2s, the last under the
    # same 2.86 limit.
    load = np.array([4, 4, 2, 2, 2, 2])
    current = np.zeros(6, dtype=int)
    capacity = np.array([2.0, 1.0])
    for name in ("dlb-h", "dlb-l", "lptf"):
        out = STRATEGIES[name](LoadSnapshot(load, current, 2, capacity=capacity))
        assert engine_loads(load, out, 2).tolist() == [10, 6], name
        assert imbalance(load, out, 2, capacity) == pytest.approx(100 * 0.75 / 8.25), name


def test_kg_returns_a_copy() -> None:
    out = kg(LoadSnapshot(LOAD, MAP, 3))
    assert out.tolist() == MAP.tolist() and out is not MAP


def test_registry() -> None:
    names = {"kg", "dlb-h", "dlb-l", "lptf", "elb", "clb", "milp"}
    assert set(STRATEGIES) == names == set(KEY_PRESERVING)
    assert tuple(STRATEGIES) == MAP_STRATEGIES  # the names the command line offers
    assert "pkg" not in KEY_PRESERVING
    assert get_strategy("dlb-h") is dlb_h
    with pytest.raises(KeyError, match="known: clb, dlb-h"):
        get_strategy("nope")


def test_clb_comes_wrapped_to_decide_every_m_windows() -> None:
    # Each get_strategy call is a new run with its own count: decisions on calls m, 2m, ...
    every = PERIODS["clb"]
    load, current = np.array([5.0, 5.0, 1.0]), np.zeros(3, dtype=np.int64)
    decide = get_strategy("clb")
    snapshot = LoadSnapshot(load, current, 2)
    changed = [bool(np.any(decide(snapshot) != current)) for _ in range(2 * every)]
    assert changed == ([False] * (every - 1) + [True]) * 2
    fresh = get_strategy("clb")
    assert fresh is not decide and np.array_equal(fresh(LoadSnapshot(load, current, 2)), current)


@pytest.mark.parametrize(
    ("load", "current", "n", "error", "message"),
    [
        ([1, 2], [0], 2, ValueError, r"key_load \(2,\) and key_map \(1,\) must be equal 1-D"),
        ([1, 2], [0, 2], 2, ValueError, r"key_map holds engine ids outside \[0, 2\)"),
        ([1, -2], [0, 1], 2, ValueError, "key_load must be finite and non-negative"),
        ([1, np.nan], [0, 1], 2, ValueError, "key_load must be finite and non-negative"),
        ([1, 2], [0.0, 1.0], 2, TypeError, "key_map must be an integer array, got float64"),
        ([1, 2], [0, 0], 0, ValueError, "n_engines must be >= 1"),
    ],
)
def test_invalid_inputs(load, current, n, error, message) -> None:
    with pytest.raises(error, match=message):
        LoadSnapshot(np.array(load, dtype=float), np.array(current), n)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"state_size": np.array([1.0])}, "state_size must hold 2 finite non-negative values"),
        ({"state_size": np.array([1.0, -1.0])},
         "state_size must hold 2 finite non-negative values"),
        ({"capacity": np.array([1.0, 0.0])}, "capacity must be 2 positive finite weights"),
        ({"capacity": np.array([1.0])}, "capacity must be 2 positive finite weights"),
    ],
)
def test_invalid_per_key_and_per_engine_inputs(options, message) -> None:
    # checked once, when the snapshot is built, whichever strategy reads them
    with pytest.raises(ValueError, match=message):
        LoadSnapshot(np.array([1.0, 2.0]), np.array([0, 1]), 2, **options)


def test_snapshot_is_read_only_and_leaves_the_inputs_alone() -> None:
    load, current = np.array([8.0, 1.0]), np.array([0, 0])
    snapshot = LoadSnapshot(load, current, 2, state_size=np.array([3, 4]))
    with pytest.raises(ValueError, match="read-only"):
        snapshot.key_map[0] = 1
    answer = snapshot.current()
    answer[0] = 1
    assert snapshot.key_map.tolist() == [0, 0] and current.tolist() == [0, 0]
    assert load.flags.writeable and current.flags.writeable  # only the views are locked
    assert snapshot.state_size.tolist() == [3.0, 4.0] and snapshot.state_size.dtype == np.float64


# --------------------------------------------------------------------------------------------
# An exact, slow reference of Algorithm 1: integer loads, equal capacities, exact integer
# arithmetic for every RSTD comparison, every candidate key tried explicitly.


def _spread(loads: list[int]) -> tuple[int, int]:
    """(N·Σl² - S², S²): RSTD² = 10⁴ · first / second."""
    s = sum(loads)
    return len(loads) * sum(v * v for v in loads) - s * s, s * s


def _above(loads: list[int], theta: int) -> bool:
    num, den = _spread(loads)
    return den > 0 and 10_000 * num > theta * theta * den


def _better(new: list[int], old: list[int]) -> bool:
    (a, b), (c, d) = _spread(new), _spread(old)
    return a * d < c * b


def _moved(loads: list[int], src: int, dst: int, x: int) -> list[int]:
    trial = list(loads)
    trial[src] -= x
    trial[dst] += x
    return trial


def reference_dlb(load: list[int], current: list[int], n: int, theta: int, heavy: bool):
    key_map = list(current)
    loads = [0] * n
    for k, x in enumerate(load):
        loads[key_map[k]] += x
    while _above(loads, theta):
        order = sorted(range(n), key=lambda e: (-loads[e], e))
        e_min = order[-1]
        for e in order:
            if e == e_min:
                return key_map
            mine = sorted((load[k], k) for k in range(len(load)) if key_map[k] == e and load[k])
            trials = [(item, _moved(loads, e, e_min, item[0])) for item in mine]
            if heavy:
                improving = [(item, trial) for item, trial in trials if _better(trial, loads)]
                choice = improving[-1] if improving else None
            else:
                choice = trials[0] if trials and _better(trials[0][1], loads) else None
            if choice is not None:
                (_, k), loads = choice
                key_map[k] = e_min
                break
    return key_map


@st.composite
def problems(draw, max_keys: int = 12, max_engines: int = 5):
    # one engine or no key now and then (nothing can move); mostly maps skewed towards
    # the low engines, which something must move (uniform maps were balanced enough in
    # nearly half of the examples, which then passed by moving nothing)
    edge = draw(st.integers(0, 9)) == 0
    n = draw(st.integers(1, max_engines) if edge else st.integers(2, max_engines))
    k = draw(st.integers(0, max_keys) if edge else st.integers(3, max_keys))
    load = draw(st.lists(st.integers(0, 30), min_size=k, max_size=k))
    low = draw(st.integers(0, n - 1))
    current = draw(st.lists(st.integers(0, low), min_size=k, max_size=k))
    theta = draw(st.sampled_from([0, 5, 15, 40]))
    return np.array(load, dtype=np.int64), np.array(current, dtype=np.int64), n, theta


@settings(max_examples=300, deadline=None, database=None)
@given(problems(), st.booleans())
def _dlb_matches_exact_reference(problem, heavy) -> None:
    load, current, n, theta = problem
    fn = dlb_h if heavy else dlb_l
    expected = reference_dlb(load.tolist(), current.tolist(), n, theta, heavy)
    note([k for k, e in enumerate(expected) if e != current[k]])
    assert fn(LoadSnapshot(load, current, n, threshold=float(theta))).tolist() == expected


@st.composite
def general_problems(draw, float_loads: bool = True):
    load, current, n, theta = draw(problems(max_keys=30, max_engines=8))
    if float_loads and draw(st.booleans()):
        load = load * draw(st.floats(0.01, 10.0))
    capacity = None
    if draw(st.booleans()):
        capacity = np.array(draw(st.lists(st.floats(0.1, 5.0), min_size=n, max_size=n)))
    return load, current, n, float(theta), capacity


@settings(max_examples=200, deadline=None, database=None)
@given(general_problems(), st.sampled_from(sorted(STRATEGIES)))
def test_every_strategy_returns_a_total_map_and_never_mutates(problem, name) -> None:
    load, current, n, theta, capacity = problem
    load_copy, current_copy = load.copy(), current.copy()
    out = STRATEGIES[name](LoadSnapshot(load, current, n, threshold=theta, capacity=capacity))
    assert out.shape == current.shape and out.dtype == current.dtype
    assert out is not current
    assert np.all((out >= 0) & (out < n))
    assert np.array_equal(load, load_copy) and np.array_equal(current, current_copy)


@settings(max_examples=200, deadline=None, database=None)
@given(general_problems(), st.sampled_from(["dlb-h", "dlb-l", "lptf", "elb", "clb", "milp"]))
def _balancing_strategies_never_worsen_rstd_nor_move_idle_keys(problem, name) -> None:
    load, current, n, theta, capacity = problem
    out = STRATEGIES[name](LoadSnapshot(load, current, n, threshold=theta, capacity=capacity))
    note(np.flatnonzero(out != current), kind=name)
    before = imbalance(load, current, n, capacity)
    assert imbalance(load, out, n, capacity) <= before + 1e-9 * max(1.0, before)
    idle = load == 0
    assert np.array_equal(out[idle], current[idle])


@settings(max_examples=150, deadline=None, database=None)
@given(general_problems(float_loads=False), st.sampled_from(["dlb-h", "dlb-l"]))
def test_dlb_output_is_a_fixed_point(problem, name) -> None:
    # Algorithm 1 stops either below θ or when no engine has an improving key; both
    # conditions depend only on the final map, so running it again changes nothing.  (Integer
    # loads only: with float loads, an engine emptied by moves may hold 1e-16 instead of 0,
    # which can flip a tie for e_min against a fresh sum.)
    load, current, n, theta, capacity = problem
    fn = STRATEGIES[name]
    once = fn(LoadSnapshot(load, current, n, threshold=theta, capacity=capacity))
    again = fn(LoadSnapshot(load, once, n, threshold=theta, capacity=capacity))
    assert again.tolist() == once.tolist()


def test_dlb_matches_exact_reference() -> None:
    with bounded("dlb against the reference (nothing moved)"):
        _dlb_matches_exact_reference()


def test_balancing_strategies_never_worsen_rstd_nor_move_idle_keys() -> None:
    with bounded("never worse (nothing moved)"):
        _balancing_strategies_never_worsen_rstd_nor_move_idle_keys()


def test_dlb_reaches_threshold_on_many_keys() -> None:
    rng = np.random.default_rng(3)
    n_keys, n = 200_000, 64
    p = np.arange(1, n_keys + 1, dtype=float) ** -0.8
    load = rng.multinomial(2_000_000, p / p.sum()).astype(float)
    current = rng.integers(0, n, n_keys)
    for fn in (dlb_h, dlb_l):
        out = fn(LoadSnapshot(load, current, n))
        assert imbalance(load, out, n) <= 15.0
