"""Load bookkeeping shared by every strategy: engine loads, the RSTD imbalance score and the
per-key load statistics window.

Capacity.  Engines may differ in speed; ``capacity`` gives per-engine target share weights
(any positive numbers, normalised here; ``None`` = equal).  Balance then means
``load_e / share_e`` equal for all engines, so every helper works on the *relative* load
``load_e / (N · share_e)``: identical to the raw load when capacities are equal (no rounding,
so integer loads stay exact) and scaled by ``1 / (N · share_e)`` otherwise.  Putting this in
:func:`engine_loads` is what lets every strategy honour capacities without knowing about them.
"""

from __future__ import annotations

from collections import deque
from itertools import islice

import numpy as np

# a key's load: its events (the DLB paper's), or the seconds its engine spent on it


def capacity_weights(capacity: np.ndarray | None, n_engines: int) -> np.ndarray:
    """Per-engine multiplier turning a raw load into a relative load: ``1 / (N · share_e)``."""
    if capacity is None:
        return np.ones(n_engines)
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.shape != (n_engines,) or not np.all(np.isfinite(cap)) or np.any(cap <= 0):
        raise ValueError(f"capacity must be {n_engines} positive finite weights, got {capacity!r}")
    return cap.sum() / (n_engines * cap)


def engine_loads(
    key_load: np.ndarray,
    key_map: np.ndarray,
    n_engines: int,
    capacity: np.ndarray | None = None,
) -> np.ndarray:
    """Equation (1) of the DLB paper: per-engine sum of its keys' loads (float64, length N),
    divided by the engine's capacity share (see the module docstring) when ``capacity`` is set.
    """
    loads = np.bincount(
        np.asarray(key_map, dtype=np.intp),
        weights=np.asarray(key_load, dtype=np.float64),
        minlength=n_engines,
    )
    if len(loads) != n_engines:
        raise ValueError(f"key_map holds engine ids outside [0, {n_engines})")
    if capacity is None:
        return loads
    return loads * capacity_weights(capacity, n_engines)


def rstd(loads: np.ndarray) -> float:
    """Relative standard deviation in percent, ``100 · std / mean`` (population std, the NumPy
    default, equation (2) of the DLB paper); 0 when the mean is 0 (nothing to balance)."""
    arr = np.asarray(loads, dtype=np.float64)
    mean = arr.mean() if arr.size else 0.0
    if mean == 0:
        return 0.0
    return float(100.0 * arr.std() / mean)


def imbalance(
    key_load: np.ndarray,
    key_map: np.ndarray,
    n_engines: int,
    capacity: np.ndarray | None = None,
) -> float:
    """The imbScore of a key map: RSTD of its (capacity-relative) engine loads."""
    return rstd(engine_loads(key_load, key_map, n_engines, capacity))


def max_over_mean_bound(key_load: np.ndarray, n_engines: int) -> float:
    """Lower bound on ``max engine load / mean engine load`` for ANY key-preserving map:
    ``max(1, N · p1)`` with ``p1`` the heaviest key's share (that key's engine carries at
    least ``p1`` of the total).  1.0 when there is no load."""
    arr = np.asarray(key_load, dtype=np.float64)
    total = arr.sum()
    if total <= 0:
        return 1.0
    return max(1.0, n_engines * float(arr.max()) / total)


def rstd_lower_bound(key_load: np.ndarray, n_engines: int) -> float:
    """Lower bound on the RSTD (%) of ANY key-preserving map, from the heaviest key alone.

    With ``b = N · p1 > 1`` one engine carries at least ``b`` times the mean; for a fixed load
    above the mean on one engine the variance is smallest when that load is exactly ``b · mean``
    and the other ``N - 1`` engines share the rest equally, giving
    ``RSTD = 100 · (b - 1) / sqrt(N - 1)``.  0 when ``b <= 1`` (the bound says nothing).
    """
    b = max_over_mean_bound(key_load, n_engines)
    if b <= 1.0 or n_engines < 2:
        return 0.0
    return 100.0 * (b - 1.0) / float(np.sqrt(n_engines - 1))


class LoadStatistics:
    """Per-key event counts (or weights) over a sliding window of the last ``window`` batches.

    ``load`` is ``sum_a decay**a · count[t - a]`` over the last ``window`` batches (age ``a = 0``
    is the newest), i.e. a plain sliding-window count when ``decay`` is None.  Batches are kept
    sparse (distinct ids and their counts) and the load is summed on demand, so nothing drifts:
    a key that left the window has exactly zero load, which the strategies rely on (zero-load
    keys are never moved).  Key ids are dense ``0..K-1``; ``K`` grows when a larger id appears.
    ``seen`` counts every event ever recorded per key (the length-window state model needs it).
    ``series`` is the per-batch counts themselves, for strategies that look at how each key's
    load moves over time (CLB); ``series_windows`` keeps that many batches for it even when the
    load window is shorter (the load still sums only the newest ``window``).
    """

    def __init__(self, window: int = 1, decay: float | None = None, *,
                 series_windows: int = 0) -> None:
        if window < 1:
            raise ValueError("window must be >= 1 batch")
        if decay is not None and not 0.0 < decay <= 1.0:
            raise ValueError("decay must be in (0, 1]")
        if series_windows < 0:
            raise ValueError("series_windows must be >= 0")
        self.window = window
        self.decay = 1.0 if decay is None else float(decay)
        self._batches: deque[tuple[np.ndarray, np.ndarray]] = deque(
            maxlen=max(window, series_windows))
        self._seen = np.zeros(0, dtype=np.int64)

    @property
    def n_keys(self) -> int:
        """Number of dense key ids known so far (``max id + 1``)."""
        return len(self._seen)

    def ensure_keys(self, n_keys: int) -> None:
        """Grow the id space to at least ``n_keys`` (new keys start with zero load)."""
        if n_keys > len(self._seen):
            self._seen = np.concatenate([self._seen, np.zeros(n_keys - len(self._seen), np.int64)])

    def update(self, key_ids: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Record one batch: ``key_ids`` holds the dense key id of every event in it.
        ``weights``: each event's load instead of 1 (a key's measured cost spread over
        its events, say); ``seen`` counts events either way."""
        ids = np.asarray(key_ids)
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0):
            raise ValueError("key ids must be non-negative integers")
        ids = ids.astype(np.intp, copy=False)
        counts = np.bincount(ids, minlength=self.n_keys)
        self.ensure_keys(len(counts))
        present = np.flatnonzero(counts)
        loads = counts if weights is None else np.bincount(ids, weights, len(counts))
        self._batches.append((present, loads[present]))
        self._seen[present] += counts[present]

    @property
    def load(self) -> np.ndarray:
        """Per-key load over the window (float64, length ``n_keys``)."""
        out = np.zeros(self.n_keys)
        newest = islice(reversed(self._batches), self.window)
        for age, (ids, counts) in enumerate(newest):
            out[ids] += counts * self.decay**age  # ids are distinct within a batch
        return out

    @property
    def series(self) -> np.ndarray:
        """Per-batch event counts of every kept batch, oldest first: float64, shape
        ``(batches kept, n_keys)`` (not decayed; at most ``max(window, series_windows)``
        rows)."""
        out = np.zeros((len(self._batches), self.n_keys))
        for row, (ids, counts) in enumerate(self._batches):
            out[row, ids] = counts
        return out

    @property
    def seen(self) -> np.ndarray:
        """Events ever recorded per key (int64 copy, length ``n_keys``)."""
        return self._seen.copy()
