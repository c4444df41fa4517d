"""Which story each row of the ``tweets`` stream belongs to, one block of rows at a time.

Part of :mod:`cep.io.tweets` (its docstring, "Stories", explains the model). The stream is
cut into blocks of :data:`BLOCK` rows; everything random about block ``b`` comes from
generators seeded with ``(seed, purpose, b)``, and a story can only tweet within
:data:`MAX_SPAN_BLOCKS` blocks of its birth, so block ``b`` needs the births of blocks
``b - MAX_SPAN_BLOCKS .. b``: a range's cost does not grow with its position or with n.
(Which stories born before the stream already appeared is the one thing that needs the
blocks before a range, and only in the first ``MAX_SPAN_BLOCKS`` blocks:
:meth:`StreamLayout.follow_counts`.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.io.tweets.world import HOT_WORDS, zipf_p

BLOCK = 10_000  # rows per block
P_SEED = 0.25  # share of rows that start a story (its seed tweet)
P_ONEOFF = 0.7  # share of stories that never get a second tweet
SIZE_ZIPF = 1.9
SIZE_CAP = 20_000
LIFETIME_ROWS = 20_000.0  # lifetime scale: LIFETIME_ROWS * sqrt(size) * LogNormal(0, 0.5)
LIFETIME_CLIP = (10_000.0, 3_600_000.0)  # rows (10 s to 1 h at 1,000 tweets/s)
TAIL = 6.0  # delays are exponential, cut at TAIL lifetimes ...
MAX_SPAN = 3_600_000.0  # ... and at this many rows after the birth
TREND_EVERY = 90  # blocks between the births of trending stories (15 min at 1,000/s)
TREND_SHARE = (0.2, 0.35)  # a trending story's planned share of the rows
MAX_SPAN_BLOCKS = int(np.ceil(MAX_SPAN / BLOCK)) + 1  # look-back of a block, in blocks
_GID_OFFSET = MAX_SPAN_BLOCKS + 1  # story numbers: (birth block + offset) << 20 | index
POOL_BIT = np.int64(1) << 62  # story numbers of zipf-periodic pool stories

# Purposes of the per-block generators.
_BIRTHS, _FOLLOW, _POOL_BIRTHS, _POOL_FOLLOW = 1, 2, 3, 4
TEXT, TIMES, POOL_TEXT, ZIPF_KEYS = 5, 6, 7, 8

SHORT_SPAN_BLOCKS = 64  # stories of a shorter span are found by birth block (see active)
_SIZE_CDF = np.cumsum(zipf_p(SIZE_CAP, SIZE_ZIPF))


def block_rng(seed: int, purpose: int, b: int) -> np.random.Generator:
    """The generator of one purpose in block ``b`` (``b >= -MAX_SPAN_BLOCKS``)."""
    return np.random.Generator(np.random.PCG64([seed, purpose, b + _GID_OFFSET]))


@dataclass
class Births:
    """Stories born in some blocks, in birth order (block, then position in the block)."""

    gid: np.ndarray  # story number
    t0: np.ndarray  # birth time, in blocks (block + position)
    size: np.ndarray  # planned tweets: 1 for one-offs
    life: np.ndarray  # mean delay of later tweets, in blocks
    span: np.ndarray  # later tweets fall in [t0, t0 + span)

    def take(self, sel: np.ndarray | slice) -> Births:
        return Births(*(getattr(self, f)[sel] for f in ("gid", "t0", "size", "life", "span")))

    @staticmethod
    def concat(parts: list[Births]) -> Births:
        return Births(
            *(np.concatenate([getattr(p, f) for p in parts])
              for f in ("gid", "t0", "size", "life", "span"))
        )  # fmt: skip


def births(seed: int, b: int, pool: bool = False) -> Births:
    """The stories born in block ``b``: how many, when, how big, how long they last."""
    rng = block_rng(seed, _POOL_BIRTHS if pool else _BIRTHS, b)
    m = int(rng.binomial(BLOCK, P_SEED))
    t0 = b + np.sort(rng.random(m))
    size = np.ones(m, dtype=np.int64)
    multi = rng.random(m) >= P_ONEOFF
    big = np.searchsorted(_SIZE_CDF, rng.random(int(multi.sum())), "right")
    size[multi] = 2 + np.minimum(big, SIZE_CAP - 1)
    rows = LIFETIME_ROWS * np.sqrt(size) * rng.lognormal(0.0, 0.5, m)
    life = np.clip(rows, *LIFETIME_CLIP) / BLOCK
    span = np.minimum(TAIL * life, MAX_SPAN / BLOCK)
    if b % TREND_EVERY == 0 and not pool and m:
        # The block's first story trends: a share of the rows until the next one is born
        # (a delay law ten times longer than its span: nearly flat).
        size[0] = 2 + int(rng.uniform(*TREND_SHARE) * BLOCK * TREND_EVERY)
        life[0], span[0] = 10.0 * TREND_EVERY, TREND_EVERY
    gid = ((np.int64(b) + _GID_OFFSET) << 20) | np.arange(m, dtype=np.int64)
    return Births(gid | POOL_BIT if pool else gid, t0, size, life, span)


@dataclass
class BlockLayout:
    """The rows of one block: story number, seed flag, planned story size."""

    gid: np.ndarray
    is_seed: np.ndarray
    size: np.ndarray


def _follow_ups(
    rng: np.random.Generator, active: Births, b: int, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` later tweets in block ``b`` shared among ``active`` stories: how many each
    gets (multinomial, by the mass of its delay law inside the block) and their times."""
    a = np.maximum(float(b), active.t0)
    c = np.minimum(b + 1.0, active.t0 + active.span)
    norm = -np.expm1(-active.span / active.life)
    mass = (
        (active.size - 1)
        * (np.exp(-(a - active.t0) / active.life) - np.exp(-(c - active.t0) / active.life))
        / norm
    )
    mass = np.where(c > a, mass, 0.0)
    counts = rng.multinomial(count, mass / mass.sum())
    who = np.repeat(np.arange(len(counts)), counts)
    return who, a[who] + (c - a)[who] * rng.random(len(who))


class StreamLayout:
    """Story layout of the blocks of one stream (births are drawn once per instance).

    Block ``b``: ``S ~ Binomial(BLOCK, P_SEED)`` stories are born at uniform positions and
    the other ``BLOCK - S`` rows are later tweets of the stories still alive, shared out by
    the mass of each story's delay law inside the block. So every block has exactly
    ``BLOCK`` rows (row -> block is arithmetic, no global count needed), and a story's
    tweets spread over its lifetime like the exponential delays of a Poisson cascade.
    """

    def __init__(self, seed: int, first: int, last: int) -> None:
        """Layouts of blocks ``first..last`` (inclusive) will be asked for."""
        self.seed = seed
        self.first = first - MAX_SPAN_BLOCKS
        self.last = last
        self.born = {b: births(seed, b) for b in range(self.first, last + 1)}
        every = Births.concat(list(self.born.values()))
        multi = every.take(every.size > 1)
        short = multi.span <= SHORT_SPAN_BLOCKS
        self.short, self.long = multi.take(short), multi.take(~short)
        blocks = np.arange(self.first, last + 2)
        self.short_start = np.searchsorted(birth_block(self.short.gid), blocks)

    def covers(self, first: int, last: int) -> bool:
        """Whether blocks ``first..last`` may be asked for (the same answers as a layout
        made for exactly them: a block's active stories do not depend on the others)."""
        return self.first + MAX_SPAN_BLOCKS <= first and last <= self.last

    def active(self, b: int) -> Births:
        """Stories with later tweets that may fall in block ``b``.

        Short-lived stories are looked up by birth block (a contiguous slice of the last
        ``SHORT_SPAN_BLOCKS`` blocks' births), the few long-lived ones by a scan: a block
        then costs about the births of ``SHORT_SPAN_BLOCKS`` blocks, not of the look-back.
        """
        lo = self.short_start[max(b - SHORT_SPAN_BLOCKS - self.first, 0)]
        near = self.short.take(slice(lo, self.short_start[b + 1 - self.first]))
        near = near.take(near.t0 + near.span > b)
        far = self.long.take((self.long.t0 < b + 1) & (self.long.t0 + self.long.span > b))
        return Births.concat([near, far])

    def follow_counts(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Story numbers of block ``b``'s later tweets and how many each story has there."""
        active = self.active(b)
        rng = block_rng(self.seed, _FOLLOW, b)
        who, _ = _follow_ups(rng, active, b, BLOCK - len(self.born[b].gid))
        return np.unique(active.gid[who], return_counts=True)

    def block(self, b: int) -> BlockLayout:
        """Block ``b``'s rows in time order."""
        return _layout(self.born[b], self.active(b), block_rng(self.seed, _FOLLOW, b), b)


def pool_block(seed: int, b: int) -> BlockLayout:
    """A self-contained block for zipf-periodic: stories born in it tweet only within it."""
    born = births(seed, b, pool=True)
    return _layout(born, born.take(born.size > 1), block_rng(seed, _POOL_FOLLOW, b), b)


def _layout(born: Births, active: Births, rng: np.random.Generator, b: int) -> BlockLayout:
    """Seeds of ``born`` and later tweets of ``active``, ordered by time within block ``b``."""
    who, when = _follow_ups(rng, active, b, BLOCK - len(born.gid))
    time = np.concatenate([born.t0, when])
    order = np.argsort(time, kind="stable")  # a seed precedes its later tweets
    gid = np.concatenate([born.gid, active.gid[who]])[order]
    is_seed = (np.arange(BLOCK) < len(born.gid))[order]
    size = np.concatenate([born.size, active.size[who]])[order]
    return BlockLayout(gid, is_seed, size)


def trend_of(gid: np.ndarray) -> np.ndarray:
    """Each story's hashtag among the hot words if it trends (they take turns), else -1."""
    b = birth_block(gid)
    trend = ((gid & ((1 << 20) - 1)) == 0) & (b % TREND_EVERY == 0) & ((gid & POOL_BIT) == 0)
    return np.where(trend, (b // TREND_EVERY) % HOT_WORDS, -1)


def birth_block(gid: np.ndarray) -> np.ndarray:
    """The block a story was born in, from its number."""
    return ((gid & ~POOL_BIT) >> 20) - _GID_OFFSET
