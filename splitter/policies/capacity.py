"""Capacity shares from measured busy time (after Schneider, Wolf, Hildrum, Wu & Khandekar,
"Dynamic Load Balancing for Ordered Data-Parallel Regions in Distributed Streaming Systems").

Engines may differ in speed (other work on the host, slower hardware).  Equal loads then mean
unequal finishing times, and a micro-batch lasts as long as its slowest engine.  The paper
keeps, per connection, a cost curve ``F_j(w)`` — the blocking rate it would see if given the
fraction ``w`` of all tuples — and picks the shares that minimise the largest ``F_j(w_j)``.
We have better data than a blocking rate: every engine reports how long it was busy each
batch (``busy_s`` in the runtime's metrics), and every engine reports it every batch, so the
paper's workarounds for scarce data (drafting, clustering, forced exploration) are not needed.

* :class:`CapacityModel` turns (events, busy seconds) per engine per batch into one monotone
  cost curve per engine, as in §5.1: smooth new points into the old ones, force the points
  non-decreasing by monotone (isotonic) regression, fill the grid by linear interpolation and
  extrapolation.
* :func:`minimax_shares` is §5.2: the minimax separable resource allocation, solved exactly by
  Fox's greedy marginal allocation.
* :meth:`CapacityModel.shares` are target load shares for the ``capacity=`` argument of every
  strategy (see :func:`splitter.policies.stats.capacity_weights`).
"""

from __future__ import annotations

import numpy as np

RESOLUTION = 1000
"""Shares are multiples of 1/1000 (0.1%), the paper's ``r = 0.001``."""


def minimax_shares(
    cost_curves: np.ndarray, total: int, minimum: int | np.ndarray = 0
) -> np.ndarray:
    """Fox's greedy for ``min max_j F_j(w_j)`` subject to ``Σ_j w_j = total`` units.

    ``cost_curves[j, i]`` is ``F_j`` at ``i`` units (columns ``0..total``), non-decreasing in
    ``i``.  Start every ``w_j`` at ``minimum``; then, ``total − Σ minimum`` times, give one
    unit to the engine whose cost after the unit, ``F_j(w_j + 1)``, is smallest (ties: lowest
    j).  Optimal for monotone curves (the paper's interchange argument).

    Vectorised: because columns are monotone, the greedy takes the remaining entries
    ``F_j(i)``, ``i > minimum_j``, in increasing order of (value, j, i) — so it takes exactly
    the smallest ones under that order, and each engine's share is how many of its entries
    were taken.  Returns integer units per engine summing to ``total``.
    """
    curves = np.asarray(cost_curves, dtype=np.float64)
    n, width = curves.shape
    lows = np.broadcast_to(np.asarray(minimum, dtype=np.int64), (n,))
    if width != total + 1:
        raise ValueError(f"cost_curves must have total + 1 = {total + 1} columns, got {width}")
    if np.any(lows < 0) or lows.sum() > total:
        raise ValueError("minimum units must be non-negative and sum to at most total")
    if np.any(np.diff(curves, axis=1) < 0):
        raise ValueError("cost curves must be non-decreasing")
    units = np.arange(width)
    free = units[None, :] > lows[:, None]
    engine, unit = np.nonzero(free)
    order = np.lexsort((unit, engine, curves[engine, unit]))[: total - int(lows.sum())]
    return lows + np.bincount(engine[order], minlength=n)


class CapacityModel:
    """One smoothed, monotone cost curve per engine, fed batch by batch.

    A batch where engine ``e`` got ``events_e`` of the ``W`` events and was busy ``b_e``
    seconds is the point ``(w, F) = (events_e / W, b_e / W)`` of e's curve: the busy time per
    event of the whole stream that e costs when given the share w (for an engine that needs
    c seconds per event, ``F(w) = c · w``).  Shares are binned to 0.1%; a new point is blended
    into its bin as ``F ← (1 − smoothing) F + smoothing · F_new``.  ``(0, 0)`` is assumed.
    Beyond the largest observed share the curve is extended along its last segment (the
    slope from the origin when only one share was seen, or when the last segment is flat:
    busy time never stops growing with load).

    Engines never observed borrow the median per-event cost of the others; with no data at
    all the shares are equal.
    """

    def __init__(self, n_engines: int, *, smoothing: float = 0.5,
                 resolution: int = RESOLUTION) -> None:
        if n_engines < 1:
            raise ValueError("n_engines must be >= 1")
        if not 0.0 < smoothing <= 1.0:
            raise ValueError("smoothing must be in (0, 1]")
        self.n_engines = n_engines
        self.smoothing = float(smoothing)
        self.resolution = int(resolution)
        self._cost = np.zeros((n_engines, self.resolution + 1))
        self._seen = np.zeros((n_engines, self.resolution + 1), dtype=bool)

    def observe(self, events: np.ndarray, busy_seconds: np.ndarray) -> None:
        """Record one batch: events routed to and busy seconds of every engine."""
        ev = np.asarray(events, dtype=np.float64)
        busy = np.asarray(busy_seconds, dtype=np.float64)
        if ev.shape != (self.n_engines,) or busy.shape != (self.n_engines,):
            raise ValueError(f"events and busy_seconds must have {self.n_engines} values")
        if not (np.all(np.isfinite(ev)) and np.all(np.isfinite(busy))) or \
                ev.min() < 0 or busy.min() < 0:
            raise ValueError("events and busy_seconds must be finite and non-negative")
        total = ev.sum()
        if total <= 0:
            return
        engines = np.flatnonzero(ev > 0)
        bins = np.clip(np.rint(ev[engines] / total * self.resolution), 1, self.resolution)
        bins = bins.astype(np.int64)
        new = busy[engines] / total
        old = self._cost[engines, bins]
        seen = self._seen[engines, bins]
        self._cost[engines, bins] = np.where(seen, old + self.smoothing * (new - old), new)
        self._seen[engines, bins] = True

    def curves(self) -> np.ndarray:
        """``F_e(i / resolution)`` for ``i = 0..resolution``, shape ``(N, resolution + 1)``;
        rows of never-observed engines are NaN."""
        grid = np.arange(self.resolution + 1, dtype=np.float64)
        out = np.full((self.n_engines, self.resolution + 1), np.nan)
        for e in range(self.n_engines):
            bins = np.flatnonzero(self._seen[e])
            if not len(bins):
                continue
            # scipy.optimize takes ~0.45 s to import: only the capacity modes pay it
            from scipy.optimize import isotonic_regression

            x = np.concatenate([[0.0], bins])
            y = isotonic_regression(np.concatenate([[0.0], self._cost[e, bins]])).x
            slope = (y[-1] - y[-2]) / (x[-1] - x[-2]) if len(x) > 2 else 0.0
            if slope <= 0:
                slope = y[-1] / x[-1]
            out[e] = np.where(grid <= x[-1], np.interp(grid, x, y),
                              y[-1] + slope * (grid - x[-1]))
        return out

    def shares(self) -> np.ndarray:
        """Target load share of every engine (sums to 1, each at least 1/resolution so that
        capacity weights stay finite and the engine keeps being measured)."""
        curves = self.curves()
        known = ~np.isnan(curves[:, -1])
        if not known.any():
            return np.full(self.n_engines, 1.0 / self.n_engines)
        grid = np.arange(self.resolution + 1)
        curves[~known] = np.median(curves[known, -1]) / self.resolution * grid
        return minimax_shares(curves, self.resolution, minimum=1) / self.resolution
