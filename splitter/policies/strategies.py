"""Map-based balancing strategies: pure functions from per-key load and the current key map to
the next key map, and the registry the runtime, ``cep verify``, ``cep bench`` and
``cep simulate`` pick them from.

Every strategy has the same signature (:class:`splitter.policies.base.Strategy`)::

    strategy(LoadSnapshot(key_load, key_map, n_engines, threshold=15.0, state_size=None,
                          capacity=None, load_series=None)) -> new key_map

The snapshot (:class:`splitter.policies.base.LoadSnapshot`) is checked once when it is built.
``key_load[k]`` is key ``k``'s load in the statistics window (events, possibly decayed),
``key_map[k]`` its current engine.  The result is a fresh array of the same length and integer
dtype with every key on an engine in ``[0, n_engines)``; inputs are never mutated. ``threshold``
is θ, the imbalance (RSTD, %) above which a strategy acts.  ``capacity`` holds per-engine target
share weights (e.g. :meth:`splitter.policies.capacity.CapacityModel.shares`); it is honoured
through :func:`splitter.policies.stats.engine_loads`, so "load" always means capacity-relative
load. ``state_size`` (per-key state, e.g. events buffered) is for strategies that price
migrations (elb, milp with ``budget_unit="state"``); kg, dlb-h, dlb-l and lptf decide on load
alone, as in the DLB paper.  ``load_series`` (shape ``(windows, keys)``, per-window counts,
oldest first: :attr:`splitter.policies.stats.LoadStatistics.series`) is read by clb only; the
others ignore it.  Further options are strategy-specific keywords with defaults (ELB
``tolerance``, CLB ``windows``, MILP ``budget``, ``budget_unit``, ``time_limit``, ``groups``,
``gap``).

The strategies: kg here; dlb-h and dlb-l in :mod:`splitter.policies.dlb`; lptf here; elb
(:mod:`splitter.policies.elb`), clb (:mod:`splitter.policies.clb`) and milp
(:mod:`splitter.policies.milp`).  A runtime
asks :func:`get_strategy` for the decider of one run, which also makes clb decide only every
m windows (:data:`PERIODS`), and feeds clb its series (:data:`SERIES_WINDOWS`).
"""

from __future__ import annotations

import heapq

import numpy as np

from splitter.policies.base import LoadSnapshot, Periodic, Strategy
from splitter.policies.clb import DEFAULT_WINDOWS as CLB_WINDOWS
from splitter.policies.clb import clb
from splitter.policies.dlb import dlb_h, dlb_l
from splitter.policies.elb import elb
from splitter.policies.milp import milp


def kg(snapshot: LoadSnapshot) -> np.ndarray:
    """Key grouping: never moves a key.  The runtime seeds the map with
    :func:`migration.hashing.kg_engine`, so this is the hash-mod-N reference."""
    return snapshot.current()


def lptf(snapshot: LoadSnapshot) -> np.ndarray:
    """Longest Processing Time First: recompute the whole map greedily.

    When the current RSTD exceeds θ, keys are taken by load, heaviest first (ties: lower key
    id), and each goes to the engine with the least (capacity-relative) load so far (ties:
    lower engine id), via a heap over engines.  Zero-load keys keep their engine: they do not
    affect the balance and moving them would only ship state.

    LPT is a makespan heuristic, not an RSTD optimiser, and it ignores the current map, so its
    result can be worse than the map it replaces (e.g. a map just above θ that LPT's greedy
    order cannot reproduce); :meth:`~splitter.policies.base.LoadSnapshot.keep_if_better` then keeps
    the current one.
    """
    if snapshot.balanced():
        return snapshot.current()
    load = snapshot.load
    weights = snapshot.weights.tolist()
    keys = np.flatnonzero(load > 0)
    keys = keys[np.argsort(-load[keys], kind="stable")]
    heap = [(0.0, e) for e in range(snapshot.n_engines)]
    chosen = np.empty(len(keys), dtype=np.int64)
    for i, x in enumerate(load[keys].tolist()):
        rel, e = heap[0]
        chosen[i] = e
        heapq.heapreplace(heap, (rel + x * weights[e], e))
    proposal = snapshot.current()
    proposal[keys] = chosen
    return snapshot.keep_if_better(proposal)


STRATEGIES: dict[str, Strategy] = {
    "kg": kg, "dlb-h": dlb_h, "dlb-l": dlb_l, "lptf": lptf, "elb": elb, "clb": clb, "milp": milp,
}
"""Map-based strategies by CLI name, each a pure function.  ``pkg`` is not here: it routes per
event, see :mod:`splitter.policies.pkg`."""

# their names, for whoever needs only the names, are splitter.policies.names.MAP_STRATEGIES
# (tests/splitter/test_strategies.py checks that the two agree)

SERIES_WINDOWS: dict[str, int] = {"clb": CLB_WINDOWS}
"""Strategies that read ``load_series``, and how many windows of it they want: give
:class:`~splitter.policies.stats.LoadStatistics` ``series_windows=`` that many and pass its
``series`` (the others get ``load_series=None``: building the dense series costs windows × keys)."""

PERIODS: dict[str, int] = {"clb": CLB_WINDOWS}
"""Strategies that decide only every m windows (CLB amortises its moves over m windows, as in
the paper); :func:`get_strategy` wraps them in a fresh :class:`~splitter.policies.base.Periodic`."""


def get_strategy(name: str) -> Strategy:
    """The decider for one run of strategy ``name`` (known names in the error otherwise).

    For most names that is the pure function ``STRATEGIES[name]``; for the names in
    :data:`PERIODS` it is a new :class:`~splitter.policies.base.Periodic` wrapper around it, holding
    the run's own count of decisions — so call this once per run (one Balancer, one
    simulation), not once per decision.
    """
    try:
        strategy = STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}")\
            from None
    return Periodic(strategy, PERIODS[name]) if name in PERIODS else strategy
