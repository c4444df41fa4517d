"""The MILP load balancer of ALBIC (Madsen, Zhou & Cao, "Integrative Dynamic Reconfiguration in
a Parallel Stream Processing Engine", §4.3.1): minimise the largest deviation of any engine's
load from the mean, subject to a budget on the migration cost, solved exactly by SciPy's
``milp`` (HiGHS) over key groups.

Shared signature: see :mod:`splitter.policies.base`.  Options: ``budget``, ``budget_unit``,
``time_limit``, ``groups``, ``gap``.  The rest of ALBIC (collocating communicating key groups,
horizontal scaling) has no counterpart in a single-operator CEP engine and is not here.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy import sparse

from migration.hashing import splitmix64
from splitter.policies.base import LoadSnapshot
from splitter.policies.dlb import dlb_h

if TYPE_CHECKING:
    from scipy.optimize import Bounds, LinearConstraint

logger = logging.getLogger("splitter.policies.milp")

SECONDARY_WEIGHT = 1e-3
"""``w2 / w1``: the paper asks for ``w1 >> w2`` so that ``d`` is minimised first and the
tightening variables ``d_u, d_l`` only break ties.  Loads are in units of the mean, so d lives
in [0, 1] and 1e-3 keeps the tie-break well below any difference in d that matters."""

MOVE_WEIGHT = 1e-4
"""``w3``: weight of the migration cost, as a fraction of the budget, in the objective (ours;
see :func:`_model`): spending the whole budget weighs as much as 0.01% of the mean in d."""


def key_groups(
    keys: np.ndarray, engines: np.ndarray, groups: int, n_engines: int
) -> tuple[np.ndarray, np.ndarray]:
    """(group of every key, current engine of every group) for the keys ``keys`` now on
    ``engines``: keys hashed into ``groups // N`` buckets *per engine*.  A group never
    straddles two engines, so keeping every group in place costs nothing and the model is
    always feasible; there are at most ``groups`` of them (at least N).

    The bucket hash is splitmix64 applied twice to the key id (stable across processes).
    Once would be KG's own hash of an integer key, and with ``N`` dividing the bucket count
    the bucket would follow from the KG engine: one group per engine."""
    buckets = max(1, groups // n_engines)
    hashed = splitmix64(splitmix64(keys.astype(np.uint64)))
    bucket = (hashed % np.uint64(buckets)).astype(np.int64)
    labels, group = np.unique(engines.astype(np.int64) * buckets + bucket, return_inverse=True)
    return group, labels // buckets


def _classes(
    home: np.ndarray, load: np.ndarray, price: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Units (keys or key groups) that share home engine, load and price are interchangeable:
    (class of every unit, and per class its home, load, price and size).

    The MILP then decides how many units of a class go to each engine (an integer in
    ``[0, size]``) instead of one binary per unit — the same optimum, without the symmetric
    solutions that make branch and bound crawl: in a window of 10,000 events most of 4,096
    keys have a load of 1, 2 or 3, so a few hundred classes stand for thousands of keys.
    """
    order = np.lexsort((price, load, home))
    columns = (home[order], load[order], price[order])
    first = np.zeros(len(order), dtype=bool)
    first[:1] = True
    for col in columns:
        first[1:] |= col[1:] != col[:-1]
    cls = np.empty(len(order), dtype=np.int64)
    cls[order] = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    size = np.diff(np.append(starts, len(order)))
    return cls, columns[0][starts].astype(np.int64), columns[1][starts], columns[2][starts], size


def _model(
    rel: np.ndarray, cost: np.ndarray, size: np.ndarray, budget: float
) -> tuple[np.ndarray, LinearConstraint, np.ndarray, Bounds]:
    """The paper's MILP in SciPy's form over classes of interchangeable units:
    ``rel[e, c]`` = the load one unit of class c puts on engine e, in units of the mean,
    ``cost[e, c]`` = its migration cost there, ``size[c]`` = the units in the class.

    Variables: ``x[e, c]`` (integer in ``[0, size[c]]``, index ``e·C + c``; binary when every
    class has one unit, the paper's ``x_{i,k}``), then ``d``, ``d_u``, ``d_l`` and a constant
    1 (see the objective).  Constraints, numbered as in the paper:

    1. ``Σ_e x[e, c] = size[c]`` — every unit on one engine;
    2. ``Σ cost[e, c] · x[e, c] <= budget``;
    3. ``Σ_c rel[e, c] · x[e, c] <= 1 + d − d_u`` for every engine;
    4. ``Σ_c rel[e, c] · x[e, c] >= 1 − d + d_l`` for every engine (no engine is marked for
       removal: the cluster is fixed);
    5. ``1 − d >= 0`` — but a unit heavier than twice the mean makes that infeasible, so the
       bound is ``d <= max(1, d_min)``: constraint 4 is then vacuous, which is all (5) was
       for.  ``d_min = max_c min_e rel[e, c] − 1`` (some engine must hold the heaviest unit)
       is a valid lower bound on d that the LP relaxation would not see on its own; giving
       it to the solver closes the gap at the root when one hot key decides the optimum.

    Objective ``d − w2 (d_u + d_l) + w3 · cost(x) / budget + 1``.  The constant 1 makes
    HiGHS's relative gap an absolute tolerance on d in units of the mean (d itself is often
    ~0, where a relative gap would never close).  The ``w3`` term is ours: in the paper's model
    every move within the budget is free, so the solver spends the whole budget on moves that
    change nothing (at Zipf 0.8, 140 keys moved where 22 give the same RSTD); a weight far
    below d's makes it prefer, among (nearly) equally balanced maps, the one that moves less.
    """
    # scipy.optimize takes ~0.3 s to import: only a run that uses MILP pays it
    from scipy.optimize import Bounds, LinearConstraint

    n, c = rel.shape
    nx = n * c
    x_index = np.arange(nx).reshape(n, c)
    rows = [np.tile(np.arange(c), n), np.full(nx, c)]
    cols = [x_index.ravel(), x_index.ravel()]
    vals = [np.ones(nx), cost.ravel()]
    for first_row, sign in ((c + 1, -1.0), (c + 1 + n, 1.0)):  # constraints 3 and 4
        rows += [first_row + np.repeat(np.arange(n), c), first_row + np.arange(n)]
        cols += [x_index.ravel(), np.full(n, nx)]
        vals += [rel.ravel(), np.full(n, sign)]
    rows += [c + 1 + np.arange(n), c + 1 + n + np.arange(n)]  # +d_u in (3), −d_l in (4)
    cols += [np.full(n, nx + 1), np.full(n, nx + 2)]
    vals += [np.ones(n), -np.ones(n)]
    matrix = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(c + 1 + 2 * n, nx + 4),
    )
    lower = np.concatenate([size, [-np.inf], np.full(n, -np.inf), np.ones(n)])
    upper = np.concatenate([size, [budget], np.ones(n), np.full(n, np.inf)])
    d_min = max(0.0, float(rel.min(axis=0).max()) - 1.0)
    d_max = max(1.0, d_min)
    bounds = Bounds(
        np.concatenate([np.zeros(nx), [d_min, 0.0, 0.0, 1.0]]),
        np.concatenate([np.tile(size, n), [d_max, d_max, d_max, 1.0]]),
    )
    move_weight = MOVE_WEIGHT / budget if budget > 0 else 0.0
    objective = np.concatenate(
        [move_weight * cost.ravel(), [1.0, -SECONDARY_WEIGHT, -SECONDARY_WEIGHT, 1.0]])
    integrality = np.concatenate([np.ones(nx), np.zeros(4)])
    return objective, LinearConstraint(matrix, lower, upper), integrality, bounds


def _destinations(counts: np.ndarray, home: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Engine of every unit from the solved ``counts[e, c]``: within a class, units in id
    order fill the home engine first (they stay), then the other engines in id order."""
    n = len(counts)
    order = np.argsort(np.arange(n)[None, :] != home[:, None], axis=1, kind="stable")
    per_class = np.take_along_axis(counts.T, order, axis=1)
    dest = np.repeat(order.ravel(), per_class.ravel())
    out = np.empty(len(cls), dtype=np.int64)
    out[np.argsort(cls, kind="stable")] = dest
    return out


def milp(
    snapshot: LoadSnapshot,
    *,
    budget: float = 0.05,
    budget_unit: Literal["keys", "state"] = "keys",
    time_limit: float = 5.0,
    groups: int = 512,
    gap: float = 0.01,
) -> np.ndarray:
    """When the RSTD is above θ, solve the paper's MILP (see :func:`_model`) and return its
    map; fall back to :func:`~splitter.policies.dlb.dlb_h` when HiGHS does not prove a solution
    within ``time_limit`` seconds (or fails otherwise), logging the reason on the
    ``splitter.policies.milp`` logger (a warning; each solved model is logged at debug level
    with its solve time).

    * ``budget``: the paper's ``maxMigrCost`` as a fraction of the migration cost of all keys
      with load — of their number with ``budget_unit="keys"``, of their ``state_size`` with
      ``"state"`` (``mc_k = α |σ_k|`` with α = 1).
    * ``gap``: d is optimal to within this fraction of the mean load (HiGHS's relative MIP gap
      on an objective offset by 1).
    * ``groups``: the model's size.  Keys with the same engine, load and price are
      interchangeable and the model counts them per class (:func:`_classes`), so a window of
      4,096 keys is solved key by key in a few hundred classes.  When the keys with load fall
      into more than ``groups`` classes (a million keys with distinct loads), they are first
      hashed into at most ``groups`` key groups (:func:`key_groups`), the paper's unit of
      migration.  The model has ``N · classes`` integer variables; at 5 engines HiGHS takes
      about 1–3 s for 512 distinct classes on the 2-core reference machine, 3–7 s for 1024,
      and often cannot prove 4096 within 5 s.
    * The mean is the exact mean load (the paper rounds it up to an integer percentage);
      with ``capacity`` every group's load on engine e is multiplied by e's capacity weight,
      the paper's "node capacity weight".

    Zero-load keys stay where they are.  A dlb-h fallback does not honour the budget.  HiGHS
    reads its clock between phases, so a hard model can overrun ``time_limit`` (13 s for 5 s
    seen at 128 engines × 1024 groups).  Like every strategy here the result is kept only if
    its RSTD is lower than the input's.
    """
    if snapshot.balanced():
        return snapshot.current()
    if budget_unit not in ("keys", "state"):
        raise ValueError(f"budget_unit must be 'keys' or 'state', got {budget_unit!r}")
    if budget_unit == "state" and snapshot.state_size is None:
        raise ValueError("budget_unit='state' needs state_size")
    load, current, n_engines = snapshot.load, snapshot.key_map, snapshot.n_engines
    keys = np.flatnonzero(load > 0)
    price = np.ones(len(keys))
    if budget_unit == "state":
        price = snapshot.state_size[keys]
    group = np.arange(len(keys))
    cls, home, unit_load, unit_price, size = _classes(current[keys], load[keys], price)
    if len(size) > groups:
        group, group_home = key_groups(keys, current[keys], groups, n_engines)
        cls, home, unit_load, unit_price, size = _classes(
            group_home,
            np.bincount(group, weights=load[keys], minlength=len(group_home)),
            np.bincount(group, weights=price, minlength=len(group_home)),
        )
    n_classes = len(size)
    rel = np.outer(snapshot.weights, unit_load / (load.sum() / n_engines))
    cost = np.tile(unit_price, (n_engines, 1))
    cost[home, np.arange(n_classes)] = 0.0
    objective, constraints, integrality, bounds = _model(
        rel, cost, size.astype(np.float64), budget * price.sum())
    tic = time.perf_counter()
    from scipy.optimize import milp as solve_milp

    result = solve_milp(
        objective, constraints=constraints, integrality=integrality, bounds=bounds,
        options={"time_limit": float(time_limit), "mip_rel_gap": float(gap)},
    )
    if result.status != 0 or result.x is None:
        logger.warning(
            "milp: no proven solution for %d key classes (%d groups) x %d engines after "
            "%.2f s (%s); falling back to dlb-h", n_classes, group.max() + 1, n_engines,
            time.perf_counter() - tic, result.message,
        )
        return dlb_h(snapshot)
    logger.debug("milp: %d key classes (%d groups) x %d engines solved in %.3f s",
                 n_classes, group.max() + 1, n_engines, time.perf_counter() - tic)
    counts = np.rint(result.x[: n_engines * n_classes]).astype(np.int64)
    proposal = snapshot.current()
    proposal[keys] = _destinations(counts.reshape(n_engines, n_classes), home, cls)[group]
    return snapshot.keep_if_better(proposal)
