"""The automatic scaling policy (``splitter.autoscale``) as a pure function of a load
series (issue 51, ``--engines auto``).

Oracles: Guo and Zhou's formula computed independently (``pi = ceil(2w/(u+v))`` with
exact fractions), and an independent queue model of a live job (``_Queue``: events
arrive at a rate, each engine processes ``capacity`` per second, a batch costs a fixed
overhead and reads what has arrived): the count the policy settles at must keep up in
that model (engines busy under ``u``, the lag bounded), with at most two changes per
4x step, none on noise, and never outside the bounds."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splitter.autoscale import AutoscaleHook, Autoscaler, Observation, observation, parallelism


@given(st.floats(0.001, 500), st.floats(0.05, 0.5), st.floats(0.51, 1.0))
def test_parallelism_is_guo_and_zhou_s(load, lower, upper):
    exact = math.ceil(Fraction(2) * Fraction(load) / (Fraction(upper) + Fraction(lower)))
    got = parallelism(load, upper, lower)
    # the 1e-9 guard only rounds a load a hair above a whole multiple down
    assert got in (exact, exact - 1) and got >= 1
    assert got * (upper + lower) / 2 >= load * (1 - 1e-8)


class _Queue:
    """A live job: ``rate`` events/s arrive, each engine does ``capacity`` events/s, a
    batch costs ``overhead`` s plus its events over its engines (evenly spread), and
    reads what arrived up to ``cap``; ``noise`` varies each batch's arrivals."""

    def __init__(self, capacity=100.0, overhead=0.5, cap=5_000, seed=1, noise=0.2):
        self.capacity, self.overhead, self.cap = capacity, overhead, cap
        self.rng = np.random.default_rng(seed)
        self.noise = noise
        self.backlog = 0.0
        self.wall = 0.0
        self.last = 0.5

    def batch(self, rate: float, engines: int) -> Observation:
        arrived = rate * self.last * (1 + self.noise * self.rng.uniform(-1, 1))
        self.backlog += arrived
        events = int(min(self.cap, self.backlog))
        busy = events / engines / self.capacity
        self.last = self.overhead + busy
        self.backlog -= events
        return Observation((busy,) * engines, self.last, events, self.backlog)


def _drive(policy: Autoscaler, rates: list[float], start: int, queue: _Queue
           ) -> tuple[list[int], list[tuple[int, str, int]]]:
    """Run the policy over the rates; a change applies two batches after it is asked
    (the Balancer writes map t+2). The engines per batch and the changes asked."""
    engines, counts, changes, pending = start, [], [], []
    for t, rate in enumerate(rates):
        for at, n in list(pending):
            if at == t:
                engines = n
                pending.remove((at, n))
        decision = policy.step(queue.batch(rate, engines))
        counts.append(engines)
        if decision.target is not None:
            changes.append((t, decision.action, decision.target))
            pending.append((t + 2, decision.target))
    return counts, changes


@pytest.mark.parametrize("seed", range(6))
def test_a_4x_step_up_and_back_down_settles_with_at_most_two_changes_per_step(seed):
    queue = _Queue(seed=seed)
    base = 150.0  # events/s: 1.5 engines' capacity, so 4x needs 6 of them
    rates = [base] * 60 + [4 * base] * 120 + [base] * 120
    policy = Autoscaler(1, 16)
    counts, changes = _drive(policy, rates, 4, queue)
    up = [c for c in changes if 60 <= c[0] < 180]
    down = [c for c in changes if c[0] >= 180]
    before = [c for c in changes if c[0] < 60]
    print(f"\nseed {seed}: changes {changes}; counts at the ends of the steps "
          f"{counts[59]}, {counts[179]}, {counts[-1]}")
    assert len(before) <= 1 and len(up) <= 2 and len(down) <= 2
    assert all(a == "out" for _, a, _ in up) and all(a == "in" for _, a, _ in down)
    for end, rate in ((179, 4 * base), (len(rates) - 1, base)):
        n = counts[end]
        utilisation = rate / (n * queue.capacity)
        assert utilisation <= policy.upper, f"{n} engines do not keep up with {rate}/s"
    assert counts[179] >= math.ceil(4 * base / queue.capacity)  # it keeps up
    assert queue.backlog < 4 * base  # the lag did not keep growing
    assert all(policy.lo <= n <= policy.hi for n in counts)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), share=st.floats(0.45, 0.6), n=st.integers(1, 12))
def test_no_change_on_noise_inside_the_band(seed, share, n):
    queue = _Queue(seed=seed, noise=0.3)
    # each engine busy about share of its time, the noise (±30%) keeping it in [v, u]
    rate = share * n * queue.capacity
    _, changes = _drive(Autoscaler(1, 16), [rate] * 200, n, queue)
    assert changes == []


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), lo=st.integers(1, 4), width=st.integers(0, 4),
       level=st.sampled_from([0.05, 0.5, 3.0, 20.0]))
def test_bounds_are_respected(seed, lo, width, level):
    hi = lo + width
    queue = _Queue(seed=seed)
    rates = [level * 100.0] * 80 + [level * 400.0] * 80 + [level * 10.0] * 80
    counts, changes = _drive(Autoscaler(lo, hi), rates, lo, queue)
    assert all(lo <= target <= hi for _, _, target in changes)
    assert all(lo <= n <= hi for n in counts)


def test_never_more_than_one_change_in_flight():
    """After a decision the policy waits until the batches run the count it asked,
    then cools down; a request seen at start (``expect``) counts as in flight too."""
    policy = Autoscaler(1, 8, patience=2, cooldown=3)
    behind = 0.0
    actions = []
    for _ in range(8):  # 1 engine, busy all the time, the lag growing: out
        behind += 500
        actions.append(policy.step(Observation((1.0,), 1.0, 100, behind)).action)
    # the first batch has no lag growth to read: two of the streak, then the change
    assert actions[:3] == ["hold", "hold", "out"] and set(actions[3:]) == {"wait"}
    target = policy._asked
    steps = [policy.step(Observation((1.0,) * target, 1.0, 100, behind + 500 * i)).action
             for i in range(1, 6)]
    assert steps[:3] == ["wait"] * 3 and "wait" not in steps[3:]
    other = Autoscaler(1, 8, patience=1)
    other.expect(3)
    assert other.step(Observation((1.0,), 1.0, 100, 1e6)).action == "wait"


def test_the_hook_reads_the_metrics_and_writes_one_request():
    asked = []
    hook = AutoscaleHook(Autoscaler(1, 4, patience=1),
                         lambda n, why: asked.append((n, why)) or len(asked))
    metrics = []
    for b, behind in enumerate([0, 400, 900, 1500]):
        m = {"batch": b, "wall_time": 10.0 + b, "busy_s_per_engine": [0.95],
             "events_in": 100, "input": {"sources": [{"behind_records": behind}]}}
        hook(b, [], m)
        metrics.append(m["autoscale"])
    assert [m["action"] for m in metrics] == ["hold", "out", "wait", "wait"]
    assert asked == [(4, metrics[1]["reason"])] and metrics[1]["target"] == 4  # HI
    assert metrics[1]["request"] == 1 and "pi = ceil(2w/(u+v))" in metrics[1]["reason"]
    assert observation({"busy_s_per_engine": [1, 2], "events_in": 3}, None).wall_s == 0


def test_a_bounded_run_scales_out_while_more_is_left_than_a_batch_reads():
    """A bounded input is all there at the start: its lag only shrinks. Busy engines
    with more left than a batch reads are behind it (out); a followed job whose lag
    shrinks is catching up (hold)."""
    def series(policy: Autoscaler) -> list[str]:
        left = 100_000.0
        out = []
        for _ in range(6):
            left -= 1_000
            out.append(policy.step(Observation((0.95, 0.9), 1.0, 1_000, left)).action)
        return out

    bounded = series(Autoscaler(1, 8, bounded=True))
    assert bounded[:3] == ["hold", "hold", "out"]
    assert "out" not in series(Autoscaler(1, 8))
