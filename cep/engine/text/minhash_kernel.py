"""Compiled MinHash minima of :func:`cep.engine.text.minhash_signatures`.

The numpy form multiplies every token hash by every permutation into a (tokens, perms)
matrix and reduces it per text: a few whole-batch arrays per call, on the path of every
FSD tweet (its key). This loop keeps one running minimum per permutation instead. The
arithmetic is datasketch's ``affine32`` scheme exactly, done in uint64 and cut to 32 bits
(numba would otherwise widen the uint32 products), so the minima are the same values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_LOW32 = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0x85EBCA6B)
_C2 = np.uint64(0xC2B2AE35)
_S16 = np.uint64(16)
_S13 = np.uint64(13)
_S32 = np.uint64(32)


@njit(cache=True, nogil=True)
def minhash_minima(hashes: np.ndarray, lengths: np.ndarray, perm_a: np.ndarray,
                   perm_b: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """For text ``i`` (``lengths[i]`` consecutive 64-bit token hashes) and permutation
    ``j``: ``min((fmix32(h >> 32) * perm_a[j] + perm_b[j]) mod 2**32)`` over its tokens,
    ``2**32 - 1`` for a text without tokens. uint32, shape (texts, permutations)."""
    k = len(perm_a)
    out = np.full((len(lengths), k), 0xFFFFFFFF, dtype=np.uint32)
    a = perm_a.astype(np.uint64)
    b = perm_b.astype(np.uint64)
    start = 0
    for i in range(len(lengths)):
        for t in range(start, start + lengths[i]):
            h = hashes[t] >> _S32
            h ^= h >> _S16
            h = (h * _C1) & _LOW32
            h ^= h >> _S13
            h = (h * _C2) & _LOW32
            h ^= h >> _S16
            for j in range(k):
                v = np.uint32((h * a[j] + b[j]) & _LOW32)
                if v < out[i, j]:
                    out[i, j] = v
        start += lengths[i]
    return out
