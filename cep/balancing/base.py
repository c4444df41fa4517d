"""What every map-based strategy shares: the signature, input validation, the "never worse
than the input" rule and the per-run wrapper for strategies that decide only every m windows.

The signature (see :mod:`cep.balancing.strategies` for what each argument means)::

    strategy(key_load, key_map, n_engines, *, threshold=15.0, state_size=None, capacity=None,
             load_series=None) -> new key_map

Strategy-specific options (ELB's tolerance, MILP's budget, ...) are further keyword arguments
with defaults, so ``functools.partial(milp, budget=0.1)`` is again a strategy.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from cep.balancing.stats import imbalance


class Strategy(Protocol):
    """The shared signature of every map-based strategy (see the module docstring)."""

    def __call__(
        self,
        key_load: np.ndarray,
        key_map: np.ndarray,
        n_engines: int,
        *,
        threshold: float = 15.0,
        state_size: np.ndarray | None = None,
        capacity: np.ndarray | None = None,
        load_series: np.ndarray | None = None,
    ) -> np.ndarray: ...


def prepare(
    key_load: np.ndarray, key_map: np.ndarray, n_engines: int
) -> tuple[np.ndarray, np.ndarray]:
    """Validate the inputs; return (load as float64, a private copy of the map)."""
    load = np.asarray(key_load, dtype=np.float64)
    current = np.asarray(key_map)
    if load.ndim != 1 or current.shape != load.shape:
        raise ValueError(f"key_load {load.shape} and key_map {current.shape} must be equal 1-D")
    if current.dtype.kind not in "iu":
        raise TypeError(f"key_map must be an integer array, got {current.dtype}")
    if n_engines < 1:
        raise ValueError("n_engines must be >= 1")
    if current.size and (current.min() < 0 or current.max() >= n_engines):
        raise ValueError(f"key_map holds engine ids outside [0, {n_engines})")
    if load.size and not (np.all(np.isfinite(load)) and load.min() >= 0):
        raise ValueError("key_load must be finite and non-negative")
    return load, current.copy()


def per_key(values: np.ndarray, n_keys: int, name: str = "state_size") -> np.ndarray:
    """A per-key array such as ``state_size``, checked (length, finite, non-negative), as
    float64."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (n_keys,) or not np.all(np.isfinite(arr)) or (arr.size and arr.min() < 0):
        raise ValueError(f"{name} must hold {n_keys} finite non-negative values")
    return arr


def keep_if_better(
    load: np.ndarray,
    current: np.ndarray,
    proposal: np.ndarray,
    n_engines: int,
    capacity: np.ndarray | None,
) -> np.ndarray:
    """``proposal`` if its RSTD is strictly lower than ``current``'s, else ``current``.

    Whole-map heuristics (LPT, ELB's first fit, a MILP solved to a gap) can return a map worse
    than the one they replace; moving state to get worse is never worth it, so every such
    strategy ends with this test and "never worse than the input" holds for all of them.
    """
    before = imbalance(load, current, n_engines, capacity)
    return proposal if imbalance(load, proposal, n_engines, capacity) < before else current


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

    def __call__(
        self, key_load: np.ndarray, key_map: np.ndarray, n_engines: int, **options: Any
    ) -> np.ndarray:
        self._calls += 1
        if self._calls % self.every:
            return prepare(key_load, key_map, n_engines)[1]
        return self.strategy(key_load, key_map, n_engines, **options)
