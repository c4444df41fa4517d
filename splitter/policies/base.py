"""What every map-based strategy shares: the load snapshot it decides from (built and
validated once), the "never worse than the input" rule and the per-run wrapper for
strategies that decide only every m windows.

The signature (see :mod:`splitter.policies.strategies` for what each field means)::

    strategy(LoadSnapshot(key_load, key_map, n_engines, threshold=15.0, state_size=None,
                          capacity=None, load_series=None)) -> new key_map

Strategy-specific options (ELB's tolerance, MILP's budget, ...) are further keyword arguments
with defaults, so ``functools.partial(milp, budget=0.1)`` is again a strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from splitter.policies.stats import capacity_weights, imbalance


def _read_only(values: np.ndarray) -> np.ndarray:
    """A view of ``values`` that cannot be written through (the caller's array is untouched)."""
    view = values.view()
    view.flags.writeable = False
    return view


def _per_key(values: np.ndarray, n_keys: int, name: str) -> np.ndarray:
    """A per-key array such as ``state_size``, checked (length, finite, non-negative), as
    float64."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (n_keys,) or not np.all(np.isfinite(arr)) or (arr.size and arr.min() < 0):
        raise ValueError(f"{name} must hold {n_keys} finite non-negative values")
    return arr


def _series(values: np.ndarray, n_keys: int) -> np.ndarray:
    """``load_series`` checked (shape ``(windows, n_keys)``, finite, non-negative), as
    float64."""
    series = np.asarray(values, dtype=np.float64)
    if series.ndim != 2 or series.shape[1] != n_keys:
        raise ValueError(f"load_series must have shape (windows, {n_keys}), got {series.shape}")
    if series.size and not (np.all(np.isfinite(series)) and series.min() >= 0):
        raise ValueError("load_series must be finite and non-negative")
    return series


@dataclass(frozen=True)
class LoadSnapshot:
    """One decision's input: the keys' loads, the map in force, the engines and θ.

    Built once per decision by the runtime (:class:`splitter.balancer.Balancer`) or the
    simulator and handed to the strategy, so the checks every strategy needs run in one
    place and every strategy reads the same normalised values: ``load``, ``state_size`` and
    ``load_series`` as float64, ``key_map`` with its own integer dtype (a strategy's answer
    keeps it), ``capacity`` checked through :func:`~splitter.policies.stats.capacity_weights`.
    The arrays are read-only views: a strategy starts its answer from :meth:`current`.

    * ``load[k]``: key ``k``'s load in the statistics window (events, possibly decayed).
    * ``key_map[k]``: its engine now, in ``[0, n_engines)``.
    * ``threshold``: θ, the imbalance (RSTD, %) above which a strategy acts.
    * ``state_size[k]``: per-key state (e.g. events buffered), for strategies that price
      migrations; ``None`` when unknown.
    * ``capacity``: per-engine target share weights (``None`` = equal).
    * ``load_series``: per-window counts, shape ``(windows, keys)``, oldest first; ``None``
      for strategies that do not read it.
    """

    load: np.ndarray
    key_map: np.ndarray
    n_engines: int
    threshold: float = 15.0
    state_size: np.ndarray | None = None
    capacity: np.ndarray | None = None
    load_series: np.ndarray | None = None

    def __post_init__(self) -> None:
        load = np.asarray(self.load, dtype=np.float64)
        current = np.asarray(self.key_map)
        if load.ndim != 1 or current.shape != load.shape:
            raise ValueError(
                f"key_load {load.shape} and key_map {current.shape} must be equal 1-D")
        if current.dtype.kind not in "iu":
            raise TypeError(f"key_map must be an integer array, got {current.dtype}")
        if self.n_engines < 1:
            raise ValueError("n_engines must be >= 1")
        if current.size and (current.min() < 0 or current.max() >= self.n_engines):
            raise ValueError(f"key_map holds engine ids outside [0, {self.n_engines})")
        if load.size and not (np.all(np.isfinite(load)) and load.min() >= 0):
            raise ValueError("key_load must be finite and non-negative")
        capacity_weights(self.capacity, self.n_engines)  # raises on bad weights
        normalised = {"load": load, "key_map": current}
        if self.state_size is not None:
            normalised["state_size"] = _per_key(self.state_size, len(load), "state_size")
        if self.load_series is not None:
            normalised["load_series"] = _series(self.load_series, len(load))
        for name, value in normalised.items():
            object.__setattr__(self, name, _read_only(value))

    @property
    def weights(self) -> np.ndarray:
        """Per-engine multiplier from raw to capacity-relative load (all 1 without
        ``capacity``): :func:`~splitter.policies.stats.capacity_weights`."""
        return capacity_weights(self.capacity, self.n_engines)

    def current(self) -> np.ndarray:
        """A fresh, writable copy of the map in force: the answer "change nothing", and the
        start of every proposal."""
        return self.key_map.copy()

    def imbalance(self, key_map: np.ndarray | None = None) -> float:
        """RSTD (%) of ``key_map``'s capacity-relative engine loads (default: the map in
        force)."""
        chosen = self.key_map if key_map is None else key_map
        return imbalance(self.load, chosen, self.n_engines, self.capacity)

    def balanced(self) -> bool:
        """Whether the map in force is within θ, where most strategies do nothing."""
        return self.imbalance() <= self.threshold

    def keep_if_better(self, proposal: np.ndarray) -> np.ndarray:
        """``proposal`` if its RSTD is strictly lower than the current map's, else the
        current map (a fresh copy).

        Whole-map heuristics (LPT, ELB's first fit, a MILP solved to a gap) can return a map
        worse than the one they replace; moving state to get worse is never worth it, so
        every such strategy ends with this test and "never worse than the input" holds for
        all of them.
        """
        return proposal if self.imbalance(proposal) < self.imbalance() else self.current()


class Strategy(Protocol):
    """The shared signature of every map-based strategy (see the module docstring)."""

    def __call__(self, snapshot: LoadSnapshot) -> np.ndarray: ...


class Periodic:
    """A strategy that decides only on every ``every``-th call and keeps the map otherwise.

    CLB (Guo & Zhou) rebalances once every m statistics windows so that its large moves are
    amortised; strategies are pure functions, so the memory of "how many windows since the
    last decision" lives in this wrapper, one instance per run (``get_strategy`` makes a fresh
    one each time it is asked).  It counts calls, i.e. decisions: a runtime that replays a
    batch and asks again advances the count once more.
    """

    def __init__(self, strategy: Strategy, every: int) -> None:
        if every < 1:
            raise ValueError("every must be >= 1")
        self.strategy = strategy
        self.every = every
        self._calls = 0

    def __call__(self, snapshot: LoadSnapshot) -> np.ndarray:
        self._calls += 1
        if self._calls % self.every:
            return snapshot.current()
        return self.strategy(snapshot)
