"""Compiled inner loop of ``MAX(similarity(LE.text, TW.text))`` over window segments.

First Story Detection compares every new tweet with the up to H earlier tweets of its
key. In numpy that means materialising every (query, row) pair that shares a term, and
with frequent words (or a trending story, whose tweets share most of their words) that
is nearly every pair, each carried through several whole-array passes. This kernel
sweeps each key's rows once, newest first, keeping a table of the terms of the queries
whose segment holds the current row (term -> linked list of those queries' term
occurrences): a query enters when the sweep reaches its segment's end and leaves past
its start, so a row meets exactly the queries that see it, and only through the terms
they share. Dot products accumulate in place and fold into each query's maximum as soon
as a row is done; no pair is ever stored.

A query also leaves once its maximum exceeds ``cap``: the caller passes the HAVING
threshold when the rule only keeps triggers whose maximum stays at or below it (FSD's
``coalesce(MAX(...), 0) <= tau``), so a tweet of a trending story stops at the first
similar tweet instead of scoring all H. Its value is then some cosine above ``cap``
rather than the maximum, which HAVING rejects either way.

Exactness: term counts are integers stored as float64, so every dot product is the same
exact integer whatever the summation order, and the cosine is the same IEEE expression
``dot / sqrt(n2q * n2r)`` that :func:`cep.engine.text._cosine` evaluates (``sqrt`` and
division are correctly rounded), so the maxima are bit-identical to
:func:`cep.engine.text.similarity`. Compiled with numba and cached on disk, so a process
loads it rather than compiling it at each start.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _slot_of(term, mask, slot_used, slot_term):  # pragma: no cover - compiled
    """The slot of ``term`` in the open-addressing table (linear probing): where it is,
    or the free slot where it would go."""
    slot = term & mask
    while slot_used[slot] and slot_term[slot] != term:
        slot = (slot + 1) & mask
    return slot


@njit(cache=True, nogil=True)
def sweep_max_cosine(q_terms: np.ndarray, q_offsets: np.ndarray, q_norm2: np.ndarray,
                     q_lo: np.ndarray, q_hi: np.ndarray, key_starts: np.ndarray,
                     r_terms: np.ndarray, r_offsets: np.ndarray, r_norm2: np.ndarray,
                     cap: float, best: np.ndarray) -> None:  # pragma: no cover - compiled
    """Raise ``best[i]`` to query ``i``'s largest cosine against rows ``[q_lo[i], q_hi[i])``
    (or to any cosine above ``cap``, where it may stop).

    Queries ``key_starts[g]:key_starts[g+1]`` are one key's, sorted by ``q_hi``
    descending, and their segments lie inside that key's rows. Query ``i``'s terms are
    ``q_terms[q_offsets[i]:q_offsets[i+1]]`` (uint32 columns, one per token occurrence);
    row ``r``'s are ``r_terms[r_offsets[r]:r_offsets[r+1]]``. A row with a NaN norm (NULL
    text) or no terms adds nothing, so ``best`` must start at 0 for queries that see a
    non-NULL row.
    """
    n_queries = len(q_hi)
    owner = np.empty(len(q_terms), dtype=np.int64)
    for i in range(n_queries):
        owner[q_offsets[i]:q_offsets[i + 1]] = i
    following = np.empty(len(q_terms), dtype=np.int64)
    done = np.zeros(n_queries, dtype=np.bool_)
    dot = np.zeros(n_queries, dtype=np.float64)
    touched = np.empty(n_queries, dtype=np.int64)
    widest = 16
    for g in range(len(key_starts) - 1):
        terms = q_offsets[key_starts[g + 1]] - q_offsets[key_starts[g]]
        while widest < 2 * terms:
            widest *= 2
    slot_used = np.zeros(widest, dtype=np.bool_)
    slot_term = np.empty(widest, dtype=np.uint32)
    slot_head = np.empty(widest, dtype=np.int64)
    for g in range(len(key_starts) - 1):
        qa, qb = key_starts[g], key_starts[g + 1]
        if qa == qb:
            continue
        size = 16
        while size < 2 * (q_offsets[qb] - q_offsets[qa]):
            size *= 2
        mask = size - 1
        slot_used[:size] = False
        lowest = q_lo[qa]
        for i in range(qa, qb):
            lowest = min(lowest, q_lo[i])
        entering = qa
        for r in range(q_hi[qa] - 1, lowest - 1, -1):
            while entering < qb and q_hi[entering] > r:
                for k in range(q_offsets[entering], q_offsets[entering + 1]):
                    term = q_terms[k]
                    slot = _slot_of(term, mask, slot_used, slot_term)
                    if not slot_used[slot]:
                        slot_used[slot] = True
                        slot_term[slot] = term
                        slot_head[slot] = -1
                    following[k] = slot_head[slot]
                    slot_head[slot] = k
                entering += 1
            n2r = r_norm2[r]
            if not n2r > 0.0:  # NaN (NULL text) or no terms
                continue
            n_touched = 0
            for k in range(r_offsets[r], r_offsets[r + 1]):
                slot = _slot_of(r_terms[k], mask, slot_used, slot_term)
                if not slot_used[slot]:
                    continue
                previous = -1
                e = slot_head[slot]
                while e >= 0:
                    i = owner[e]
                    after = following[e]
                    if done[i] or r < q_lo[i]:  # left for good: unlink the occurrence
                        if previous < 0:
                            slot_head[slot] = after
                        else:
                            following[previous] = after
                    else:
                        if dot[i] == 0.0:
                            touched[n_touched] = i
                            n_touched += 1
                        dot[i] += 1.0
                        previous = e
                    e = after
            for t in range(n_touched):
                i = touched[t]
                cos = dot[i] / np.sqrt(q_norm2[i] * n2r)
                if cos > best[i]:
                    best[i] = cos
                    if cos > cap:
                        done[i] = True
                dot[i] = 0.0
