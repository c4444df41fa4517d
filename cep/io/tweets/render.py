"""Compiled rendering of tweet texts from token slots (see :class:`cep.io.tweets.text.Renderer`).

A tweet is its non-empty slots in order, each written as ``prefix + token + suffix`` in
its style's case, followed by a space, except the last, followed by the tweet's end mark.
Building the UTF-8 bytes of a whole block in one loop and handing them to Arrow, which
makes the ``str`` objects, costs a fraction of looking up and joining one Python string
per slot. Tokens are ASCII (``[a-z0-9]+``), so upper-casing is a byte operation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

KEEP, CAPITALISE, UPPER = 0, 1, 2  # how a style writes the token's letters


@njit(cache=True, inline="always")
def _cased(c: np.uint8, upper: bool) -> np.uint8:  # pragma: no cover - compiled
    return c - np.uint8(32) if upper and np.uint8(97) <= c <= np.uint8(122) else c


@njit(cache=True, nogil=True)
def render_bytes(tok: np.ndarray, style: np.ndarray, last_end: np.ndarray,
                 token_bytes: np.ndarray, token_offsets: np.ndarray,
                 style_bytes: np.ndarray, prefix_offsets: np.ndarray,
                 suffix_offsets: np.ndarray, style_case: np.ndarray,
                 end_bytes: np.ndarray, end_offsets: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """UTF-8 bytes and int64 offsets of each row's text.

    Style ``s`` writes ``style_bytes[prefix_offsets[s]:prefix_offsets[s+1]]`` before the
    token and ``style_bytes[suffix_offsets[s]:suffix_offsets[s+1]]`` after it, in case
    ``style_case[s]``; end mark ``e`` is ``end_bytes[end_offsets[e]:end_offsets[e+1]]``
    (end 0 separates slots)."""
    n, width = tok.shape
    offsets = np.zeros(n + 1, dtype=np.int64)
    for r in range(n):
        size = 0
        last = -1
        for c in range(width):
            t = tok[r, c]
            if t < 0:
                continue
            s = style[r, c]
            size += (token_offsets[t + 1] - token_offsets[t]
                     + prefix_offsets[s + 1] - prefix_offsets[s]
                     + suffix_offsets[s + 1] - suffix_offsets[s])
            size += end_offsets[1] - end_offsets[0]
            last = c
        if last >= 0:
            size -= end_offsets[1] - end_offsets[0]
            e = last_end[r]
            size += end_offsets[e + 1] - end_offsets[e]
        offsets[r + 1] = offsets[r] + size
    out = np.empty(offsets[n], dtype=np.uint8)
    for r in range(n):
        p = offsets[r]
        last = -1
        for c in range(width):
            if tok[r, c] >= 0:
                last = c
        for c in range(width):
            t = tok[r, c]
            if t < 0:
                continue
            s = style[r, c]
            for q in range(prefix_offsets[s], prefix_offsets[s + 1]):
                out[p] = style_bytes[q]
                p += 1
            case = style_case[s]
            first = True
            for q in range(token_offsets[t], token_offsets[t + 1]):
                out[p] = _cased(token_bytes[q], case == UPPER or (case == CAPITALISE and first))
                first = False
                p += 1
            for q in range(suffix_offsets[s], suffix_offsets[s + 1]):
                out[p] = style_bytes[q]
                p += 1
            e = last_end[r] if c == last else 0
            for q in range(end_offsets[e], end_offsets[e + 1]):
                out[p] = end_bytes[q]
                p += 1
    return out, offsets
