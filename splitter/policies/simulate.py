"""A trace simulator for paper-scale strategy comparisons without Spark, and the DLB paper's
periodic-Zipf workload.

The simulator replays a trace of dense key ids in windows of ``window`` events (one window =
one micro-batch): it routes the window with the current map (PKG: per event), records engine
loads and RSTD, feeds the window to :class:`~splitter.policies.stats.LoadStatistics`, and asks the
strategy for the map of the next window.  (The Spark runtime applies a decision one batch
later, t → t+2; the simulator applies it to the very next window, the paper's setting.)

Costs it reports: rebalances (decisions that changed the map), keys moved per rebalance
(absolute and as % of keys seen so far), state moved, makespan (sum over windows of the
busiest engine's load — the time a window takes when engines run in parallel) and decision
time.  State moved depends on what the rule keeps per key:

* ``"length"`` (``#groupwin(k)#length(H)``, the FSD rule): a moved key ships
  ``min(events seen for it so far, H)`` events;
* ``"time"`` (``#time(T)`` with T = one window): it ships its events of the last window.

Each window also gets the trace's own lower bounds for any key-preserving map: ``max / mean``
engine load ``>= max(1, N · p1)`` and the RSTD bound that implies
(:func:`~splitter.policies.stats.rstd_lower_bound`), ``p1`` being the window's heaviest key share
(bounds for equal shares).

Heterogeneous engines: ``engine_cost[e]`` is engine e's busy time per event, so a window's
busy time per engine is its events times that, and the busy makespan (sum over windows of
the busiest engine's busy time) is how long the run takes.  ``capacity="measured"`` feeds
those busy times to a :class:`~splitter.policies.capacity.CapacityModel` after every window and
balances relative to its shares from then on; ``"equal"`` balances events.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from migration.hashing import kg_engine, stable_hash
from splitter.policies.base import LoadSnapshot
from splitter.policies.capacity import CapacityModel
from splitter.policies.names import CAPACITY_MODES
from splitter.policies.pkg import PartialKeyGrouping
from splitter.policies.stats import (
    LoadStatistics,
    capacity_weights,
    max_over_mean_bound,
    rstd,
    rstd_lower_bound,
)
from splitter.policies.strategies import SERIES_WINDOWS, get_strategy

PAPER_RATE = 2_950_000 / 40
"""Events per "minute" in the paper's Zipf experiment: ~2.95 M tweets in a 40-minute run
(≈ 1,229 tuples/s, the throughput the paper reports)."""


@dataclass(frozen=True)
class SimResult:
    """Per-window arrays (index = window) and a summary of one simulated run."""

    strategy: str
    engine_loads: np.ndarray  # (windows, N) events routed to each engine
    rstd: np.ndarray  # (windows,) RSTD % of the window's engine loads relative to `shares`
    lower_bound_max_over_mean: np.ndarray  # (windows,) max(1, N·p1)
    rstd_lower_bound: np.ndarray  # (windows,) RSTD % no key-preserving map can beat
    keys_moved: np.ndarray  # (windows,) keys whose engine changed after this window
    keys_moved_pct: np.ndarray  # (windows,) the same, % of keys seen so far
    state_moved: np.ndarray  # (windows,) events of state shipped for those keys
    split_keys_pct: np.ndarray  # (windows,) % of the window's keys sent to > 1 engine (pkg)
    decision_ms: np.ndarray  # (windows,) time to compute the next map
    busy: np.ndarray  # (windows, N) busy time of each engine: events · engine_cost
    shares: np.ndarray  # (windows, N) target load shares in force (equal unless measured)
    summary: dict[str, float | int | str] = field(default_factory=dict)


def _split_keys_pct(ids: np.ndarray, engines: np.ndarray, n_engines: int) -> float:
    """% of the distinct keys in a window whose events went to more than one engine."""
    pairs = np.unique(ids.astype(np.int64) * n_engines + engines)
    keys, per_key = np.unique(pairs // n_engines, return_counts=True)
    return 100.0 * float(np.mean(per_key > 1)) if len(keys) else 0.0


STATE_MODELS = ("length", "time")


def _state_of_keys(
    state_model: str, seen: np.ndarray, window_count: np.ndarray, h: int
) -> np.ndarray:
    """Events of state each key holds (see the module docstring)."""
    return np.minimum(seen, h) if state_model == "length" else window_count


def simulate(
    key_trace: np.ndarray,
    strategy: str,
    n_engines: int = 5,
    window: int = 10_000,
    threshold: float = 15.0,
    decay: float | None = None,
    state_model: str = "length",
    H: int = 500,
    *,
    history: int = 1,
    seed: int = 0,
    engine_cost: np.ndarray | None = None,
    capacity: str = "equal",
) -> SimResult:
    """Replay ``key_trace`` (event → dense key id) under ``strategy`` (a name in
    :data:`~splitter.policies.strategies.STRATEGIES`, or ``"pkg"``).

    ``history`` windows (optionally ``decay``-weighted) make up the load statistics each
    decision sees; ``seed`` seeds PKG's hash functions.  The initial map is KG:
    ``kg_engine(key id)``.  ``engine_cost`` (busy time per event, per engine; default all 1)
    and ``capacity`` (``"equal"`` or ``"measured"``): see the module docstring.  PKG routes by
    its own load estimates and ignores capacity.
    """
    trace = np.asarray(key_trace)
    if trace.ndim != 1 or (trace.size and (trace.dtype.kind not in "iu" or trace.min() < 0)):
        raise ValueError("key_trace must be a 1-D array of non-negative integer key ids")
    if window < 1:
        raise ValueError("window must be >= 1 event")
    if state_model not in STATE_MODELS:
        raise ValueError(f"state_model must be one of {STATE_MODELS}, got {state_model!r}")
    if capacity not in CAPACITY_MODES:
        raise ValueError(f"capacity must be one of {CAPACITY_MODES}, got {capacity!r}")
    cost = np.ones(n_engines) if engine_cost is None else np.asarray(engine_cost, np.float64)
    if cost.shape != (n_engines,) or not np.all(np.isfinite(cost)) or np.any(cost <= 0):
        raise ValueError(f"engine_cost must be {n_engines} positive finite values")
    n_keys = int(trace.max()) + 1 if trace.size else 0
    starts = range(0, len(trace), window)
    n_windows = len(starts)
    router = PartialKeyGrouping(n_engines, seed) if strategy == "pkg" else None
    decide = None if router is not None else get_strategy(strategy)
    key_hashes = stable_hash(np.arange(n_keys))
    key_map = kg_engine(np.arange(n_keys), n_engines)
    stats = LoadStatistics(history, decay, series_windows=SERIES_WINDOWS.get(strategy, 0))
    stats.ensure_keys(n_keys)
    model = CapacityModel(n_engines) if capacity == "measured" else None
    target: np.ndarray | None = None  # capacity shares in force; None = equal

    loads = np.zeros((n_windows, n_engines))
    shares = np.full((n_windows, n_engines), 1.0 / n_engines)
    rstds, lb_ratio, lb_rstd, split, ms = (np.zeros(n_windows) for _ in range(5))
    moved, moved_pct, state_moved = (np.zeros(n_windows) for _ in range(3))
    for t, start in enumerate(starts):
        ids = trace[start : start + window]
        if router is not None:
            engines = router.route(key_hashes[ids])
            split[t] = _split_keys_pct(ids, engines, n_engines)
        else:
            engines = key_map[ids]
        loads[t] = np.bincount(engines, minlength=n_engines)
        if target is not None:
            shares[t] = target
        rstds[t] = rstd(loads[t] * capacity_weights(target, n_engines))
        if model is not None:
            model.observe(loads[t], loads[t] * cost)
            target = model.shares()
        window_count = np.bincount(ids, minlength=n_keys)
        lb_ratio[t] = max_over_mean_bound(window_count, n_engines)
        lb_rstd[t] = rstd_lower_bound(window_count, n_engines)
        stats.update(ids)
        if decide is None or t == n_windows - 1:
            continue  # PKG has no map; after the last window there is nothing to route
        seen = stats.seen
        state = _state_of_keys(state_model, seen, window_count, H)
        series = stats.series if strategy in SERIES_WINDOWS else None
        tic = time.perf_counter()
        new_map = decide(LoadSnapshot(stats.load, key_map, n_engines, threshold=threshold,
                                      state_size=state, capacity=target, load_series=series))
        ms[t] = 1000.0 * (time.perf_counter() - tic)
        changed = np.flatnonzero(new_map != key_map)
        moved[t] = len(changed)
        moved_pct[t] = 100.0 * len(changed) / max(1, int(np.count_nonzero(seen)))
        state_moved[t] = state[changed].sum()
        key_map = new_map

    result = SimResult(
        strategy=strategy, engine_loads=loads, rstd=rstds, lower_bound_max_over_mean=lb_ratio,
        rstd_lower_bound=lb_rstd, keys_moved=moved, keys_moved_pct=moved_pct,
        state_moved=state_moved, split_keys_pct=split, decision_ms=ms, busy=loads * cost,
        shares=shares,
    )
    result.summary.update(summarize(result, threshold))
    result.summary.update(n_engines=n_engines, window=window, events=len(trace))
    return result


def run_trace(
    trace: np.ndarray,
    strategies: Iterable[str],
    *,
    n_engines: int,
    window: int,
    threshold: float,
    H: int,
    seed: int,
    exponents: tuple[float, ...] = (0.2, 1.5),
    durations: tuple[float, ...] = (5.0, 10.0),
    rate: float = PAPER_RATE,
) -> Iterator[tuple[str, SimResult, dict[str, float | int | str]]]:
    """Simulate each strategy in turn on a :func:`periodic_zipf_trace` (same ``exponents``,
    ``durations`` and ``rate``) with the ``"length"`` state model, as the benches compare
    them.  Yields ``(name, result, row)`` as each run ends; ``row`` is the run's summary plus
    ``sim_seconds`` (its wall time) and ``avg_rstd_zipf<exponent>`` (the average RSTD over the
    windows of each phase, a window belonging to the phase of its middle event)."""
    phases = phase_schedule(len(trace), durations, rate)
    mids = np.minimum(np.arange(0, len(trace), window) + window // 2, len(trace) - 1)
    window_phase = phases[mids]
    for name in strategies:
        tic = time.perf_counter()
        result = simulate(trace, name, n_engines, window, threshold, state_model="length", H=H,
                          seed=seed)
        row = dict(result.summary)
        row["sim_seconds"] = time.perf_counter() - tic
        for phase, exponent in enumerate(exponents):
            row[f"avg_rstd_zipf{exponent}"] = float(result.rstd[window_phase == phase].mean())
        yield name, result, row


def summarize(result: SimResult, threshold: float) -> dict[str, float | int | str]:
    """Headline figures of a run (see :func:`simulate` for the per-window meanings).

    ``feasible`` windows are those whose RSTD lower bound is at most ``threshold``: the only
    windows where a key-preserving strategy *can* meet θ.  The makespan lower bound sums, per
    window, ``max(1, N·p1) · mean engine load`` (neither the heaviest key nor the average can
    be beaten by a key-preserving map; PKG splits keys and may go below it).  The busy
    makespan is the same sum over busy times, i.e. with each engine's cost per event.
    """
    rebal = result.keys_moved > 0
    feasible = result.rstd_lower_bound <= threshold
    loads = result.engine_loads
    decided = result.decision_ms[:-1] if len(result.decision_ms) > 1 else result.decision_ms

    def mean(a: np.ndarray) -> float:
        return float(a.mean()) if a.size else 0.0

    def peak(a: np.ndarray) -> float:
        return float(a.max()) if a.size else 0.0

    return {
        "strategy": result.strategy,
        "windows": len(result.rstd),
        "avg_rstd": mean(result.rstd),
        "max_rstd": peak(result.rstd),
        "avg_rstd_lower_bound": mean(result.rstd_lower_bound),
        "avg_rstd_excess_over_bound": mean(result.rstd - result.rstd_lower_bound),
        "feasible_windows": int(feasible.sum()),
        "avg_rstd_feasible_windows": mean(result.rstd[feasible]),
        "avg_lower_bound_max_over_mean": mean(result.lower_bound_max_over_mean),
        "rebalances": int(rebal.sum()),
        "avg_keys_moved_per_rebalance": mean(result.keys_moved[rebal]),
        "avg_pct_keys_moved_per_rebalance": mean(result.keys_moved_pct[rebal]),
        "max_pct_keys_moved_per_rebalance": peak(result.keys_moved_pct[rebal]),
        "events_moved": float(result.state_moved.sum()),
        "avg_events_moved_per_rebalance": mean(result.state_moved[rebal]),
        "makespan": float(loads.max(axis=1).sum()),
        "makespan_lower_bound": float(
            (result.lower_bound_max_over_mean * loads.mean(axis=1)).sum()
        ),
        "busy_makespan": float(result.busy.max(axis=1).sum()),
        "avg_split_keys_pct": mean(result.split_keys_pct),
        "decision_ms_mean": mean(decided),
        "decision_ms_p99": float(np.percentile(decided, 99)) if decided.size else 0.0,
        "decision_ms_max": peak(decided),
    }


# --------------------------------------------------------------------------------------------
# Workload


def zipf_probabilities(n_keys: int, exponent: float) -> np.ndarray:
    """Finite Zipf: ``P(rank r) ∝ r^-exponent`` for ranks ``1..n_keys``."""
    p = np.arange(1, n_keys + 1, dtype=np.float64) ** -exponent
    return p / p.sum()


def phase_schedule(
    n_events: int,
    durations: tuple[float, ...] = (5.0, 10.0),
    rate: float = PAPER_RATE,
) -> np.ndarray:
    """Phase index (into ``durations``) of every event: phases of ``duration · rate`` events,
    cycling through ``durations`` until ``n_events`` events are covered."""
    lengths = np.maximum(1, np.round(np.asarray(durations, dtype=np.float64) * rate)).astype(int)
    cycles = -(-n_events // int(lengths.sum())) if n_events else 0
    phase_ids = np.tile(np.arange(len(lengths)), cycles)
    return np.repeat(phase_ids, np.tile(lengths, cycles))[:n_events]


def periodic_zipf_trace(
    n_events: int,
    n_keys: int = 4096,
    exponents: tuple[float, ...] = (0.2, 1.5),
    durations: tuple[float, ...] = (5.0, 10.0),
    rate: float = PAPER_RATE,
    seed: int = 0,
    *,
    shift_hot: bool = False,
) -> np.ndarray:
    """The DLB paper's second workload: key popularity Zipf(0.2) for 5 minutes, Zipf(1.5) for
    10, repeating (durations in minutes, ``rate`` events per minute).  Returns dense key ids.

    Popularity rank → key is a random permutation drawn once from ``seed`` and kept for the
    whole trace (the paper re-draws nothing: the same topics get hot again).  Which keys are
    hot then decides KG's imbalance — over random placements of 4096 keys on 5 engines, KG's
    RSTD for Zipf(1.5) has median ≈ 80% (the paper's "≈ 77–80%") with a 10–90% range of
    roughly 66–106%, so quote the value of the seed you use.  ``shift_hot=True`` draws a fresh
    permutation for every phase instead, so a skewed phase heats different keys than the last.
    """
    if len(exponents) != len(durations):
        raise ValueError("exponents and durations must have the same length")
    rng = np.random.default_rng(seed)
    phases = phase_schedule(n_events, durations, rate)
    cdfs = [np.cumsum(zipf_probabilities(n_keys, s)) for s in exponents]
    trace = np.empty(n_events, dtype=np.int64)
    rank_to_key = rng.permutation(n_keys)
    bounds = np.flatnonzero(np.diff(phases)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n_events], strict=True):
        if shift_hot and lo > 0:
            rank_to_key = rng.permutation(n_keys)
        cdf = cdfs[phases[lo]]
        ranks = np.minimum(np.searchsorted(cdf, rng.random(hi - lo) * cdf[-1]), n_keys - 1)
        trace[lo:hi] = rank_to_key[ranks]
    return trace
