"""Compiled walk of ``every ([n:m] b until c) [WITHIN T]`` over a batch's sorted rows.

One instance of the repeat runs per key at a time, so each key is a short sequential
scan with three numbers of state (b's collected, the first one's time, their rows): no
per-rule code, one function for every such rule (``cache=True``), imported only by the
rules that use it (numba costs a process time to import). The semantics are
:mod:`cep.engine.patterns.interpreter`' (see :mod:`cep.engine.patterns.until_rule`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def scan_until(starts: np.ndarray, ends: np.ndarray, held: np.ndarray, is_b: np.ndarray,
               is_c: np.ndarray, times: np.ndarray, count0: np.ndarray,
               first0: np.ndarray, slots0: np.ndarray, base: int, least: int, most: int,
               within: int, has_until: bool):  # pragma: no cover - compiled
    """Walk key g's rows ``starts[g]:ends[g]`` from its state (state row ``held[g]``,
    -1 for none: nothing collected), event by event:

    * an instance holding b's whose first is ``within`` or more before the event is
      discarded first, and a fresh one sees the event (``within`` < 0: no WITHIN);
    * a c (looked at first) completes it with the b's so far when there are at least
      ``least`` of them, else ends it; either way the next instance starts after it;
    * a b is collected (row ``base + row``); the ``most``-th completes it.

    Returns per match (at most one per row): its key's g, b count, c row (-1: none),
    trigger row and b rows [matches, most]; and per key its count, first b's time and
    b rows after the batch."""
    n_keys = len(starts)
    cap = 0
    for g in range(n_keys):
        cap += ends[g] - starts[g]
    m_key = np.empty(cap, np.int64)
    m_count = np.empty(cap, np.int64)
    m_c = np.empty(cap, np.int64)
    m_trigger = np.empty(cap, np.int64)
    m_slots = np.full((cap, most), -1, np.int64)
    count = np.zeros(n_keys, np.int64)
    first = np.zeros(n_keys, np.int64)
    slots = np.full((n_keys, most), -1, np.int64)
    found = 0
    for g in range(n_keys):
        k = 0
        f = 0
        p = held[g]
        if p >= 0:
            k = count0[p]
            f = first0[p]
            for i in range(k):
                slots[g, i] = slots0[p, i]
        for r in range(starts[g], ends[g]):
            if k > 0 and within >= 0 and times[r] - f >= within:
                k = 0
            if has_until and is_c[r]:
                if k >= least:
                    m_key[found] = g
                    m_count[found] = k
                    m_c[found] = base + r
                    m_trigger[found] = r
                    for i in range(k):
                        m_slots[found, i] = slots[g, i]
                    found += 1
                k = 0
                continue
            if is_b[r]:
                slots[g, k] = base + r
                if k == 0:
                    f = times[r]
                k += 1
                if k == most:
                    m_key[found] = g
                    m_count[found] = k
                    m_c[found] = -1
                    m_trigger[found] = r
                    for i in range(k):
                        m_slots[found, i] = slots[g, i]
                    found += 1
                    k = 0
        count[g] = k
        first[g] = f
    return (m_key[:found], m_count[:found], m_c[:found], m_trigger[:found],
            m_slots[:found], count, first, slots)
