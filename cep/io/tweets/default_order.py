"""The ``default`` order: the stream as generated, in event-time order.

A row is a first story if it is its story's seed, or the first tweet in the stream of a
story born before the stream started. Deciding the latter needs the blocks before a
range (only in the first ``MAX_SPAN_BLOCKS`` blocks), so consecutive ranges read in one
process share a memo of layouts and checkpoints (:class:`_DefaultMemo`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import cep.io.tweets.layout as lay
from cep.engine.table import sorted_unique
from cep.io.tweets.blocks import Block, clock, draw, kept_rows, world_renderer
from cep.io.tweets.world import World

AHEAD_BLOCKS = 64  # blocks past a range that its layout also covers, for the next ranges
_SEEN_KEPT = 8  # checkpoints of the pre-stream stories met, per seed


class _DefaultMemo:
    """What consecutive ranges of one default stream share, kept per process.

    Spark reads a stream as many consecutive pieces of 64 Ki rows, and each range of
    the default stream needs the births of the ``MAX_SPAN_BLOCKS`` blocks before it and,
    in the first ``MAX_SPAN_BLOCKS`` blocks, a replay of every block before it (which
    stories born before the stream already appeared): ~0.7 s of fixed cost per piece at
    row 2.8M, against ~0.3 s for its own rows. Here the layout is made for the range and
    ``AHEAD_BLOCKS`` more blocks, and the replay leaves checkpoints, so the next pieces a
    process reads start where the last one ended. Both are memos of pure functions of
    the seed and the block: the rows do not depend on what was read before."""

    def __init__(self) -> None:
        self.layouts: dict[int, lay.StreamLayout] = {}
        self.seen: dict[int, dict[int, np.ndarray]] = {}

    def layout(self, seed: int, first: int, last: int) -> lay.StreamLayout:
        """A layout that covers blocks ``first..last``."""
        cached = self.layouts.get(seed)
        if cached is None or not cached.covers(first, last):
            cached = self.layouts[seed] = lay.StreamLayout(seed, first, last + AHEAD_BLOCKS)
        return cached

    def seen_before(self, layout: lay.StreamLayout, b: int) -> np.ndarray:
        """Stories born before the stream whose later tweets appear in blocks ``0..b-1``
        (``layout`` covers blocks from 0), from the nearest checkpoint at or before ``b``."""
        points = self.seen.get(layout.seed, {})
        start = max((u for u in points if u <= b), default=0)
        met = [points.get(start, np.zeros(0, dtype=np.int64))]
        met += [layout.follow_counts(u)[0] for u in range(start, b)]
        seen = sorted_unique(np.concatenate(met))
        return seen[lay.birth_block(seen) < 0]

    def remember(self, seed: int, b: int, seen: np.ndarray) -> None:
        """Checkpoint: ``seen`` holds the pre-stream stories met in blocks before ``b``.

        The least recently made checkpoints go first, not the lowest blocks: a process
        that reads the stream a second time (a later run in the same Spark session)
        starts again near block 0, and evicting by block would drop each new checkpoint
        at once, so every read would replay from block 0 (a cost growing with ``b``)."""
        points = self.seen.setdefault(seed, {})
        points.pop(b, None)  # re-inserted last: dicts keep insertion order
        points[b] = seen
        while len(points) > _SEEN_KEPT:
            del points[next(iter(points))]


_MEMO = _DefaultMemo()


def default_blocks(plan: dict[str, Any], w: World, b0: int, b1: int, lo: int, hi: int
                   ) -> Iterator[Block]:
    """Blocks ``b0..b1`` of the default stream (texts for the rows in ``[lo, hi)``).

    A row is a first story if it is its story's seed, or the first tweet in the stream of
    a story born before the stream started (whose seed is not in it); such stories can
    only tweet in the first ``MAX_SPAN_BLOCKS`` blocks, so only ranges there look back.
    """
    seed = plan["seed"]
    look_back = b0 < lay.MAX_SPAN_BLOCKS
    layout = _MEMO.layout(seed, 0 if look_back else b0, b1)
    seen = _MEMO.seen_before(layout, b0) if look_back else np.zeros(0, dtype=np.int64)
    renderer = world_renderer(seed, len(w.handles))
    for b in range(b0, b1 + 1):
        bl = layout.block(b)
        drawn = draw(seed, plan["buckets"], w, bl, lay.block_rng(seed, lay.TEXT, b))
        keep = kept_rows(b, lo, hi)
        columns = {**drawn.columns, "text": np.empty(lay.BLOCK, dtype=object)}
        columns["text"][keep] = drawn.texts(renderer, keep)
        first = bl.is_seed.copy()
        if look_back:
            pre = np.flatnonzero(lay.birth_block(bl.gid) < 0)
            uniq, at = np.unique(bl.gid[pre], return_index=True)
            first[pre[at[~np.isin(uniq, seen)]]] = True
            seen = np.union1d(seen, uniq)
        ts, worker = clock(plan, b)
        yield Block(columns, first, bl.gid, drawn.keys, ts, worker)
    if look_back:
        _MEMO.remember(seed, b1 + 1, seen)
