"""The ``zipf-periodic`` order: the DLB paper's second experiment, phases of key skew.

The exponent of the keys' Zipf law follows the event-time clock (:data:`PHASES`: 0.2 for
5 min, 1.5 for 10 min, from the stream's start), and every block of rows re-orders its
own self-contained pool by key under the exponent of its rows' phase. The package's
docstring (:mod:`cep.io.tweets`, "Modes") describes the model and its calibration.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

import cep.io.tweets.layout as lay
from cep.io.tweets.blocks import Block, clock, draw, kept_rows, world_renderer
from cep.io.tweets.plan import START_US, tweets_plan
from cep.io.tweets.world import World, world, zipf_p

# Zipf-periodic schedule: (seconds, exponent) phases, repeated from START_US.
PHASES: tuple[tuple[float, float], ...] = ((300.0, 0.2), (600.0, 1.5))
_KEY_PRIORITY = 0x4B455953  # purpose of the generator of the key tie-break order


def phase_index(ts: np.ndarray) -> np.ndarray:
    """Number of the zipf-periodic phase (0, 1, 2, ... across cycles) of each timestamp."""
    bounds = np.cumsum([length for length, _ in PHASES])
    t = (np.asarray(ts, dtype=np.int64) - START_US) / 1e6
    cycle, within = np.divmod(t, bounds[-1])
    return cycle.astype(np.int64) * len(PHASES) + np.searchsorted(bounds, within, "right")


def zipf_exponent(ts: np.ndarray) -> np.ndarray:
    """The zipf-periodic exponent in force at each timestamp (µs): 0.2 or 1.5."""
    exponents = np.array([e for _, e in PHASES])
    return exponents[phase_index(ts) % len(PHASES)]


def batch_exponents(spec: str, batch_size: int) -> list[float]:
    """The zipf-periodic exponent in force for most tweets of each batch of
    ``batch_size`` rows (rows ``[b·B, (b+1)·B)``: the generator's micro-batches), read
    from the plan's block clock alone, a block's rows spread evenly over its span (they
    are uniform order statistics in it): no tweet is generated, and only a batch that
    straddles a phase's edge by about half can be classed on the other side."""
    plan = tweets_plan(spec)
    starts = np.asarray(plan["block_start_s"])
    rows = np.arange(plan["n"]) + 0.5
    block, within = np.divmod(rows, plan["block"])
    seconds = starts[block.astype(np.int64)] + within / plan["block"] * np.diff(starts)[
        block.astype(np.int64)]
    exponents = zipf_exponent(START_US + (seconds * 1e6).astype(np.int64))
    out = []
    for lo in range(0, plan["n"], batch_size):
        values, counts = np.unique(exponents[lo:lo + batch_size], return_counts=True)
        out.append(float(values[np.argmax(counts)]))
    return out


def zipf_blocks(plan: dict[str, Any], w: World, b0: int, b1: int, lo: int, hi: int
                   ) -> Iterator[Block]:
    """Blocks ``b0..b1`` of the zipf-periodic stream (texts for the rows in ``[lo, hi)``).

    Each block re-orders its own pool (:func:`cep.io.tweets.layout.pool_block`) by key: row ``i``
    draws a key rank from the Zipf law of its phase over the keys in the pool, ranked as
    in :func:`key_ranks`, and the ``j``-th use of a key in the block takes the pool's
    ``(j mod count)``-th tweet of that key. Pool stories live in their block, so the
    first story is the first use of a story in the block.
    """
    seed, buckets = plan["seed"], plan["buckets"]
    key_rank = key_ranks(seed, buckets, len(w.handles))
    renderer = world_renderer(seed, len(w.handles))
    for b in range(b0, b1 + 1):
        pool = lay.pool_block(seed, b)
        drawn = draw(seed, buckets, w, pool, lay.block_rng(seed, lay.POOL_TEXT, b))
        ts, worker = clock(plan, b)
        rows = zipf_rows(lay.block_rng(seed, lay.ZIPF_KEYS, b), drawn.keys, key_rank, ts)
        keep = kept_rows(b, lo, hi)
        columns = {name: col[rows] for name, col in drawn.columns.items()}
        columns["text"] = np.empty(lay.BLOCK, dtype=object)
        columns["text"][keep] = drawn.texts(renderer, rows[keep])
        gid = pool.gid[rows]
        first = np.zeros(lay.BLOCK, dtype=bool)
        first[np.unique(gid, return_index=True)[1]] = True
        yield Block(columns, first, gid, drawn.keys[rows], ts, worker)


@functools.lru_cache(maxsize=4)
def key_ranks(seed: int, buckets: int, users: int) -> np.ndarray:
    """Every key's zipf-periodic rank (0 = the most popular in skewed phases).

    The same for all blocks, so the hot keys of a skewed phase stay hot for its 10 min:
    keys by their frequency in a reference pool (the pool of block -1, never emitted),
    most frequent first, so that the keys drawn most have the most tweets to emit;
    ties (and absent keys) in a seeded order.
    """
    w = world(seed, users)
    drawn = draw(
        seed, buckets, w, lay.pool_block(seed, -1), lay.block_rng(seed, lay.POOL_TEXT, -1)
    )
    priority = np.random.Generator(np.random.PCG64([seed, _KEY_PRIORITY])).permutation(buckets)
    order = np.lexsort((priority, -np.bincount(drawn.keys, minlength=buckets)))
    ranks = np.empty(buckets, dtype=np.int64)
    ranks[order] = np.arange(buckets)
    return ranks


def zipf_rows(
    rng: np.random.Generator, pool_keys: np.ndarray, key_rank: np.ndarray, ts: np.ndarray
) -> np.ndarray:
    """Pool rows to emit, in order, for one zipf-periodic block (see :func:`zipf_blocks`)."""
    uniq, key_idx, key_count = np.unique(pool_keys, return_inverse=True, return_counts=True)
    by_rank = np.argsort(key_rank[uniq])  # rank among the pool's keys -> index into uniq
    u = rng.random(len(ts))
    exponent = zipf_exponent(ts)
    out_key = np.empty(len(ts), dtype=np.int64)
    for _, e in PHASES:
        sel = exponent == e
        cdf = np.cumsum(zipf_p(len(uniq), e))
        out_key[sel] = by_rank[np.minimum(np.searchsorted(cdf, u[sel], "right"), len(uniq) - 1)]
    # j-th use of key k takes the pool's (j mod count_k)-th tweet of k, in pool order.
    by_key = np.argsort(key_idx, kind="stable")
    key_start = np.concatenate([[0], np.cumsum(key_count)[:-1]])
    out_order = np.argsort(out_key, kind="stable")
    out_start = np.searchsorted(out_key[out_order], out_key[out_order], "left")
    use = np.empty(len(ts), dtype=np.int64)
    use[out_order] = np.arange(len(ts)) - out_start
    return by_key[key_start[out_key] + use % key_count[out_key]]
