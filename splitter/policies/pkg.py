"""Partial Key Grouping (Nasir et al., ICDE 2015): two hash choices per key, per-event routing
to the choice with the smaller *local* load estimate.

Unlike the map-based strategies this splits keys: a key's events go to up to two engines, so
per-key CEP state is split and the rule output can differ from KG's (the DLB paper counted
13.4% false first stories).  It is therefore not in ``KEY_PRESERVING``.

Faithful to the paper's scheme (and Storm's ``PartialKeyGrouping``): the two choices come from
two independent seeded hash functions and may coincide for some keys (those keys then never
split); the load estimate is the number of events *this router* has sent to each engine
("local load estimation", no coordination); ties go to the first choice.
"""

from __future__ import annotations

import numpy as np

from migration.hashing import engine_of_hash, splitmix64

_PI_DIGITS = (0x243F6A8885A308D3, 0x13198A2E03707344)


class PartialKeyGrouping:
    """A PKG router with ``n_engines`` targets; its load estimates persist across ``route``
    calls, like a long-lived Storm/Spark source task.

    ``route`` is the exact sequential definition — event ``t`` sees the estimates after events
    ``0..t-1`` — written as a tight loop over Python ints (measured ≈ 5 M events/s on the
    2-core reference machine).  We do not approximate by freezing estimates over chunks: within
    a frozen chunk every event of a key takes the same choice, which is exactly the imbalance
    PKG exists to avoid.
    """

    def __init__(self, n_engines: int, seed: int = 0) -> None:
        if n_engines < 1:
            raise ValueError("n_engines must be >= 1")
        self.n_engines = n_engines
        # Two independent hash functions: splitmix64 of the key hash XOR two salts derived from
        # the seed (the salt constants are digits of pi, nothing up the sleeve).
        self._salts = splitmix64(
            np.uint64(seed & ((1 << 64) - 1)) ^ np.array(_PI_DIGITS, dtype=np.uint64)
        )
        self._estimate = [0] * n_engines

    def candidates(self, key_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two candidate engines (int32 arrays) of every key hash."""
        h = np.asarray(key_hashes, dtype=np.uint64)
        s1, s2 = self._salts
        n = self.n_engines
        return engine_of_hash(splitmix64(h ^ s1), n), engine_of_hash(splitmix64(h ^ s2), n)

    def route(self, key_hashes: np.ndarray) -> np.ndarray:
        """Engine (int32) of every event, in order; updates the load estimates."""
        return self.route_candidates(*self.candidates(key_hashes))

    def route_candidates(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """Route events whose two choices are given: the choice with the smaller estimate
        (ties → ``first``), counting each event as it is sent."""
        first, second = np.asarray(first), np.asarray(second)
        if first.shape != second.shape:
            raise ValueError("first and second choices must have the same shape")
        for c in (first, second):
            if c.size and (c.min() < 0 or c.max() >= self.n_engines):
                raise ValueError(f"choices must be engine ids in [0, {self.n_engines})")
        est = self._estimate
        choice = first.tolist()
        other = second.tolist()
        for i in range(len(choice)):
            a, b = choice[i], other[i]
            if est[b] < est[a]:
                a = b
                choice[i] = a
            est[a] += 1
        return np.array(choice, dtype=np.int32)
