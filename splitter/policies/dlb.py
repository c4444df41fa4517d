"""DLB (Zacheilas et al., DAIS 2016, Algorithm 1): move one key at a time from the most loaded
engine to the least loaded one while the RSTD is above θ, picking the heaviest (DLB-H) or the
lightest (DLB-L) key whose move lowers it.  Shared signature: see :mod:`splitter.policies.base`."""

from __future__ import annotations

import bisect
from collections.abc import Callable

import numpy as np

from splitter.policies.base import LoadSnapshot
from splitter.policies.stats import engine_loads


def _move_limit(ra: float, rb: float, wa: float, wb: float, s1: float, s2: float) -> float:
    """Largest key load ``x`` (exclusive) whose move from engine a to engine b lowers the RSTD.

    ``ra, rb`` are the engines' relative loads, ``wa, wb`` their capacity weights (a key of load
    ``x`` adds ``x · w`` to an engine's relative load), ``s1, s2`` the sum and sum of squares of
    all relative loads.  RSTD is monotone in ``q = s2 / s1²`` (``RSTD² = 10⁴ (N q - 1)``) and
    after the move ``s1' = s1 + x c`` with ``c = wb - wa`` and
    ``s2' = s2 + x β + x² γ`` with ``β = 2 (rb wb - ra wa)``, ``γ = wa² + wb²``.
    ``q' < q`` reduces to ``x (s1² γ - s2 c²) < 2 s1 s2 c - s1² β``; the factor on the left is
    positive (``s2 <= s1²`` and ``c² < γ``), so the improving moves are exactly
    ``0 < x < limit``: the O(1) "tentative move" of lines 13–16, and monotone in ``x``, which is
    what lets DLB-H binary-search for the heaviest improving key.  With equal weights ``s1`` is
    unchanged and the limit is just the load gap ``(ra - rb) / w``, exact for integer loads.
    """
    if wa == wb:
        return (ra - rb) / wa
    c = wb - wa
    beta = 2.0 * (rb * wb - ra * wa)
    gamma = wa * wa + wb * wb
    return (2.0 * s2 * c - s1 * beta) / (s1 * gamma - s2 * c * c / s1)


class _EngineKeys:
    """The positive-load keys of every engine, for DLB's key choice, updated move by move.

    Each engine's keys are two parallel Python lists (negated load, negated key id) sorted
    ascending, i.e. by (load, key id) descending: the lightest key is the last element (DLB-L
    removes it without shifting anything), the heaviest key under a limit is one bisection
    away (DLB-H), and a move is a ``del`` plus an ``insert`` at a bisected position — C-level
    memmoves, no per-key Python loop.  Engines are converted lazily, so a decision that only
    touches a few engines never pays for the rest.
    """

    def __init__(self, load: np.ndarray, key_map: np.ndarray, n_engines: int) -> None:
        self._load = load
        keys = np.flatnonzero(load > 0)
        engines = key_map[keys]
        # N <= 32767 engines: int16 makes the stable sort a radix sort.
        small = engines.astype(np.int16 if n_engines <= np.iinfo(np.int16).max else np.int64)
        grouped = keys[np.argsort(small, kind="stable")]  # by engine, then key id
        bounds = np.cumsum(np.bincount(engines, minlength=n_engines))[:-1]
        self._pending: list[np.ndarray | None] = list(np.split(grouped, bounds))
        self._neg_load: list[list[float]] = [[] for _ in range(n_engines)]
        self._neg_key: list[list[int]] = [[] for _ in range(n_engines)]

    def _lists(self, e: int) -> tuple[list[float], list[int]]:
        keys = self._pending[e]
        if keys is not None:
            keys = keys[::-1]  # key id descending, so the stable sort below breaks ties by it
            keys = keys[np.argsort(-self._load[keys], kind="stable")]
            self._neg_load[e] = (-self._load[keys]).tolist()
            self._neg_key[e] = (-keys).tolist()
            self._pending[e] = None
        return self._neg_load[e], self._neg_key[e]

    def heaviest_below(self, e: int, limit: float) -> tuple[float, int] | None:
        """The (load, key) of ``e``'s heaviest key with load < ``limit``, if any."""
        neg_load, neg_key = self._lists(e)
        i = bisect.bisect_right(neg_load, -limit)
        return (-neg_load[i], -neg_key[i]) if i < len(neg_load) else None

    def lightest(self, e: int) -> tuple[float, int] | None:
        """The (load, key) of ``e``'s lightest positive-load key, if any."""
        neg_load, neg_key = self._lists(e)
        return (-neg_load[-1], -neg_key[-1]) if neg_load else None

    def move(self, item: tuple[float, int], src: int, dst: int) -> None:
        """Move key ``item = (load, key)`` from engine ``src`` to engine ``dst``."""
        x, k = -item[0], -item[1]
        neg_load, neg_key = self._lists(src)
        i = self._position(neg_load, neg_key, x, k)
        del neg_load[i], neg_key[i]
        neg_load, neg_key = self._lists(dst)
        i = self._position(neg_load, neg_key, x, k)
        neg_load.insert(i, x)
        neg_key.insert(i, k)

    @staticmethod
    def _position(neg_load: list[float], neg_key: list[int], x: float, k: int) -> int:
        """Index of (x, k) in the (neg_load, neg_key) order: where it is, or would go."""
        lo = bisect.bisect_left(neg_load, x)
        return bisect.bisect_left(neg_key, k, lo, bisect.bisect_right(neg_load, x, lo))


_MAX_MOVES_PER_KEY = 16
"""Safety net for Algorithm 1's loop.  A key may legitimately move more than once (DLB-L
shuffles light keys between engines that take turns being the extremes), so K moves is not
enough; in 60,000 random cases with θ = 0 the worst was 1.7 moves per key.  Exact arithmetic
guarantees termination; the cap only guards against floating-point cycling."""

_Picker = Callable[[_EngineKeys, int, float], "tuple[float, int] | None"]


def _pick_heavy(pool: _EngineKeys, e: int, limit: float) -> tuple[float, int] | None:
    """DLB-H: the most loaded key of ``e`` whose move reduces the imbalance."""
    return pool.heaviest_below(e, limit)


def _pick_light(pool: _EngineKeys, e: int, limit: float) -> tuple[float, int] | None:
    """DLB-L: the least loaded key of ``e``, if moving it reduces the imbalance."""
    item = pool.lightest(e)
    return item if item is not None and item[0] < limit else None


def _dlb(snapshot: LoadSnapshot, pick: _Picker) -> np.ndarray:
    """Algorithm 1 of Zacheilas et al. (DAIS 2016), shared by both policies.

    Listing, line by line (``load`` = capacity-relative engine load):

    * 3–4: ``imbScore = RSTD(load)``; loop while ``imbScore > θ``.
    * 5–6: order engines by load, descending (ties: lower engine id first), and take
      ``e_min`` = the last one, the least loaded (among tied minima, the highest id).
    * 8–11: walk that order; reaching ``e_min`` returns the map.  So if no engine above
      ``e_min`` has an improving key, the algorithm stops — the text's "if all engines are
      examined and the criterion is still not met … the best allocation found is returned".
    * 12: ``k* = selectKey(policy)`` among ``e_loaded``'s keys (the listing omits
      ``e_loaded``; the text makes it clear).
    * 13–16: tentatively move ``k*`` to ``e_min``; keep it only if the RSTD strictly drops,
      then restart from line 5 (``break``); otherwise try the next engine.

    Where the listing and the text disagree or are loose, we follow the text's intent:

    * line 7 copies ``eng_load`` into ``eng_load_temp`` once per pass, so a rejected tentative
      move would leak into the next engine's test and could even be committed by line 18.  We
      evaluate every tentative move from the current committed loads (``_move_limit``, O(1)).
    * DLB-H: the text defines ``k*`` as "the most loaded key … that reduces the imbalancing
      score", so we pick the heaviest key whose move improves, not the heaviest key outright
      (which would almost never improve when one key dominates an engine).
    * DLB-L: the listing moves on to the next engine when the lightest key does not improve
      and does not try the next-lightest.  Because improving loads form an interval
      ``(0, limit)`` (see ``_move_limit``), a heavier key could not improve either, so the
      listing and the "try more keys" reading coincide.

    Keys whose window load is zero are never candidates: they carry no load (moving one cannot
    lower the RSTD, and line 16 would reject it) and moving them would only cost state.  For
    DLB-L this matters: the lightest key would otherwise be a zero-load key and block the
    policy.  Among keys of equal load, DLB-H takes the highest key id and DLB-L the lowest
    (their (load, key id) order), which keeps the result deterministic.

    Every committed move strictly lowers the RSTD, so the loop terminates; as a safety net
    against floating-point cycling it also stops after ``_MAX_MOVES_PER_KEY · K + N`` moves.
    Cost: one
    O(K) pass to group keys by engine, an O(K_e log K_e) sort of each engine DLB examines,
    then per move O(1) improvement tests, O(log K) key lookups and an O(log N) re-ranking of
    the two engines involved (plus list memmoves).  The threshold test is exact for integer
    loads and integer θ, and so are the improvement tests when capacities are equal.
    """
    load, new_map, n_engines = snapshot.load, snapshot.current(), snapshot.n_engines
    absolute = engine_loads(load, new_map, n_engines)
    weights = snapshot.weights.tolist()
    # Raw loads move by exact additions (exact for integer loads); the relative load of an
    # engine is always recomputed as raw · weight, never accumulated, so a decision depends on
    # the map alone and not on the path that led to it (re-running on the output is a no-op).
    raw = absolute.tolist()
    r = [v * w for v, w in zip(raw, weights, strict=True)]
    s1, s2 = sum(r), sum(v * v for v in r)
    # RSTD > θ  <=>  10⁴ (N·s2 - s1²) > θ² s1²: exact for integer loads and an integer θ.
    theta2 = float(snapshot.threshold) ** 2
    # Engines by load descending, ties by id: (-load, e) ascending.  A move re-ranks two
    # engines with bisect instead of re-sorting all N.
    ranking = sorted((-v, e) for e, v in enumerate(r))
    pool = _EngineKeys(load, new_map, n_engines)
    # With equal capacities an engine that failed stays failed until its keys change: the
    # improvement test is "key load < r_e - r_min", r_e is fixed while the engine is untouched
    # and the minimum load never decreases (a move lands both engines strictly between the old
    # extremes).  Remembering failures skips re-testing them; it changes no decision.  With
    # unequal capacities the test also depends on s1 and s2, so nothing is remembered.
    failed: set[int] = set()
    remember = len(set(weights)) == 1
    # A move must beat the improvement limit by more than floating-point noise: a key whose
    # load equals the gap only swaps the two engines' loads (no real improvement) and must not
    # be accepted because of the last bit.  1e-10 of the mean load is far above the rounding
    # of float loads and far below 1, so integer loads keep their exact test.
    slack = 1e-10 * s1 / n_engines
    for _ in range(_MAX_MOVES_PER_KEY * len(load) + n_engines):
        if s1 <= 0 or 1e4 * (n_engines * s2 - s1 * s1) <= theta2 * s1 * s1:
            break
        e_min = ranking[-1][1]
        for _neg, e in ranking:
            if e == e_min:
                return new_map
            if e in failed:
                continue
            limit = _move_limit(r[e], r[e_min], weights[e], weights[e_min], s1, s2) - slack
            item = pick(pool, e, limit)
            if item is not None:
                break
            if remember:
                failed.add(e)
        failed.discard(e_min)
        x, k = item
        pool.move(item, e, e_min)
        new_map[k] = e_min
        for engine, delta in ((e, -x), (e_min, x)):
            raw[engine] += delta
            old, value = r[engine], raw[engine] * weights[engine]
            s1 += value - old
            s2 += (value - old) * (value + old)
            del ranking[bisect.bisect_left(ranking, (-old, engine))]
            bisect.insort(ranking, (-value, engine))
            r[engine] = value
    return new_map


def dlb_h(snapshot: LoadSnapshot) -> np.ndarray:
    """DLB-H: Algorithm 1 moving, each step, the heaviest key of the most loaded engine (that
    has one) whose move to the least loaded engine lowers the RSTD.  Few, big moves."""
    return _dlb(snapshot, _pick_heavy)


def dlb_l(snapshot: LoadSnapshot) -> np.ndarray:
    """DLB-L: Algorithm 1 moving, each step, the lightest key of the most loaded engine whose
    lightest key improves the RSTD.  Many small moves, finer balance."""
    return _dlb(snapshot, _pick_light)
