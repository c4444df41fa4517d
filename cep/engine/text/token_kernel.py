"""Compiled tokeniser of :mod:`cep.engine.text`: a batch's UTF-8 bytes to token ids.

FSD tokenises every tweet twice (its LSH key when it arrives, its term row when it
enters the window), and numpy needs a dozen whole-batch passes plus an Arrow dictionary
encoding for that. This kernel does it in one pass over the bytes: a token is a maximal
run of ASCII letters and digits inside one text, lower-cased (the definition of
:mod:`cep.engine.text`), and each distinct token gets a small id through a
hash table keyed by the token's bytes, so only distinct tokens are hashed (BLAKE2b, in
Python, through a cache). The table's hash (FNV-1a) only finds candidates; tokens are
compared byte by byte, so ids never merge two tokens. Compiled with numba and cached.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)
# byte -> its lower-case form if it is a token byte (ASCII letter or digit), else 0
TOKEN_BYTES = np.zeros(256, dtype=np.uint8)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789":
    TOKEN_BYTES[_c] = _c
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    TOKEN_BYTES[_c] = _c + 32


@njit(cache=True, nogil=True)
def scan_tokens(data: np.ndarray, offsets: np.ndarray, token_bytes: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Tokens of the texts ``data[offsets[i]:offsets[i+1]]`` (uint8 UTF-8 bytes), with
    ``token_bytes`` = :data:`TOKEN_BYTES`.

    Returns ``(tokens per text, id of every token in text order, start and length of
    each distinct token's first occurrence in data)``; ids number distinct tokens by
    first occurrence. The tables grow here, between calls of :func:`_scan_texts`, whose
    arrays are never reassigned (numba would otherwise count references on every token).
    """
    n = len(offsets) - 1
    total = 0
    for i in range(n):
        inside = False
        for p in range(offsets[i], offsets[i + 1]):
            word = token_bytes[data[p]] != 0
            if word and not inside:
                total += 1
            inside = word
    lengths = np.zeros(n, dtype=np.int64)
    ids = np.empty(total, dtype=np.int64)
    slot_id = np.full(1024, -1, dtype=np.int64)
    d_start = np.empty(512, dtype=np.int64)
    d_len = np.empty(512, dtype=np.int64)
    d_hash = np.empty(512, dtype=np.uint64)
    d_at = np.empty(512, dtype=np.int64)
    d_bytes = np.empty(4096, dtype=np.uint8)
    state = np.zeros(4, dtype=np.int64)  # next text, next token, distinct, bytes used
    while state[0] < n:
        _scan_texts(data, offsets, token_bytes, lengths, ids, slot_id, d_start, d_len, d_hash,
                    d_at, d_bytes, state)
        if state[0] == n:
            break
        # the next text might not fit: double whatever is short of its worst case
        worst = offsets[state[0] + 1] - offsets[state[0]]
        distinct = state[2]
        while distinct + worst > len(d_start):
            d_start = np.concatenate((d_start, np.empty_like(d_start)))
            d_len = np.concatenate((d_len, np.empty_like(d_len)))
            d_hash = np.concatenate((d_hash, np.empty_like(d_hash)))
            d_at = np.concatenate((d_at, np.empty_like(d_at)))
        while state[3] + worst > len(d_bytes):
            d_bytes = np.concatenate((d_bytes, np.empty_like(d_bytes)))
        cap = len(slot_id)
        while 2 * (distinct + worst) > cap:
            cap *= 2
        if cap > len(slot_id):  # re-insert by the stored hashes
            slot_id = np.full(cap, -1, dtype=np.int64)
            for j in range(distinct):
                s = np.int64(d_hash[j] & np.uint64(cap - 1))
                while slot_id[s] >= 0:
                    s = (s + 1) & (cap - 1)
                slot_id[s] = j
    return lengths, ids, d_start[:state[2]].copy(), d_len[:state[2]].copy()


@njit(cache=True, nogil=True)
def _scan_texts(data: np.ndarray, offsets: np.ndarray, token_bytes: np.ndarray,
                lengths: np.ndarray, ids: np.ndarray, slot_id: np.ndarray,
                d_start: np.ndarray, d_len: np.ndarray, d_hash: np.ndarray,
                d_at: np.ndarray, d_bytes: np.ndarray, state: np.ndarray
                ) -> None:  # pragma: no cover - compiled
    """Tokenise texts from ``state[0]`` on while the next one surely fits the tables
    (``state``: next text, next token, distinct tokens, bytes of distinct tokens).

    Distinct tokens: first occurrence (start, length) in ``data``, hash, and the place
    of a compact copy of their lower-cased bytes in ``d_bytes`` (comparing against it
    stays in cache; ``data`` does not)."""
    cap = len(slot_id)
    i, k, distinct, used = state[0], state[1], state[2], state[3]
    while i < len(offsets) - 1:
        p, end = offsets[i], offsets[i + 1]
        worst = end - p
        if (distinct + worst > len(d_start) or used + worst > len(d_bytes)
                or 2 * (distinct + worst) > cap):
            break
        while p < end:
            if token_bytes[data[p]] == 0:
                p += 1
                continue
            start = p
            h = _FNV_OFFSET
            while p < end:
                c = token_bytes[data[p]]
                if c == 0:
                    break
                h = (h ^ np.uint64(c)) * _FNV_PRIME
                p += 1
            h ^= h >> np.uint64(29)  # FNV's low bits mix poorly: fold the high ones in
            size = p - start
            slot = np.int64(h & np.uint64(cap - 1))
            found = -1
            while slot_id[slot] >= 0:
                j = slot_id[slot]
                if d_hash[j] == h and d_len[j] == size:
                    at = d_at[j]
                    same = True
                    for q in range(size):
                        if d_bytes[at + q] != token_bytes[data[start + q]]:
                            same = False
                            break
                    if same:
                        found = j
                        break
                slot = (slot + 1) & (cap - 1)
            if found < 0:
                found = distinct
                for q in range(size):
                    d_bytes[used + q] = token_bytes[data[start + q]]
                d_start[found], d_len[found], d_hash[found], d_at[found] = start, size, h, used
                used += size
                slot_id[slot] = found
                distinct += 1
            ids[k] = found
            k += 1
            lengths[i] += 1
        i += 1
    state[0], state[1], state[2], state[3] = i, k, distinct, used


SHORT_ROW = 48  # rows up to this many terms count equal pairs directly, longer ones sort


@njit(cache=True, nogil=True)
def squared_counts(columns: np.ndarray, lengths: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``Σ count²`` of each row's columns (rows are consecutive runs of ``lengths``): the
    squared norm of its term-count vector, an exact integer (as float64). That is the
    number of ordered pairs of equal columns: ``n + 2·#{j < i: c_j = c_i}``, counted
    directly for a tweet-sized row, from sorted runs for a long one."""
    out = np.zeros(len(lengths), dtype=np.float64)
    start = 0
    for i in range(len(lengths)):
        n = lengths[i]
        if n <= SHORT_ROW:
            equal = 0
            for a in range(start + 1, start + n):
                for b in range(start, a):
                    if columns[a] == columns[b]:
                        equal += 1
            out[i] = n + 2 * equal
        else:
            row = np.sort(columns[start:start + n])
            run = 1
            total = 0
            for j in range(1, n):
                if row[j] == row[j - 1]:
                    run += 1
                else:
                    total += run * run
                    run = 1
            out[i] = total + run * run
        start += n
    return out
