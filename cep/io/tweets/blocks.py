"""One block of ``tweets`` rows drawn from its layout: the draws, the clock, the texts.

Both orders of the stream (:mod:`cep.io.tweets.default_order`,
:mod:`cep.io.tweets.zipf_periodic`) draw a block's tweets the same way from a
:class:`~cep.io.tweets.layout.BlockLayout`; they differ in which layout and in what order
its rows are emitted. What they share is here: the random draws of a block's columns
and token slots, its clock, the rows of a block a range keeps, and the renderer that
writes only those rows' texts (rendering is the costly part).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

import cep.io.tweets.layout as lay
from cep.io.tweets.plan import START_US
from cep.io.tweets.text import Renderer, slot_keys, stories, tweet_slots
from cep.io.tweets.world import LANGS, TOPICS, World, world


@dataclass
class Block:
    """One block's rows (all ``BLOCK`` of them, texts only for the kept ones)."""

    columns: dict[str, np.ndarray]  # user, lang, text, retweets, topic
    first: np.ndarray  # first-story flags
    gid: np.ndarray  # story numbers
    keys: np.ndarray  # LSH keys
    ts: np.ndarray
    worker: np.ndarray


@functools.lru_cache(maxsize=4)
def world_renderer(seed: int, users: int) -> Renderer:
    """A renderer per world, kept so that its table of rendered pieces is reused."""
    return Renderer(world(seed, users).tokens)


def clock(plan: dict[str, Any], b: int) -> tuple[np.ndarray, np.ndarray]:
    """Timestamps (µs) and snowflake worker ids of block ``b``'s rows.

    Given that the block's last arrival is at its end, the other arrivals of a Poisson
    process are uniform order statistics over the block.
    """
    start, end = plan["block_start_s"][b], plan["block_start_s"][b + 1]
    rng = lay.block_rng(plan["seed"], lay.TIMES, b)
    x = np.append(np.sort(rng.random(lay.BLOCK - 1)), 1.0)
    ts = START_US + np.floor((start + (end - start) * x) * 1e6).astype(np.int64)
    return ts, rng.integers(0, 1024, lay.BLOCK)


@dataclass
class Drawn:
    """A block of tweets before rendering: columns but ``text``, token slots, keys."""

    columns: dict[str, np.ndarray]
    slots: tuple[np.ndarray, np.ndarray, np.ndarray]  # tokens, styles, endings
    keys: np.ndarray

    def texts(self, renderer: Renderer, rows: np.ndarray | slice) -> np.ndarray:
        """Rendered texts of ``rows`` (rendering is the costly part: only what is kept)."""
        tok, style, last_end = self.slots
        return renderer.render(tok[rows], style[rows], last_end[rows])


def draw(
    seed: int, buckets: int, w: World, layout: lay.BlockLayout, rng: np.random.Generator
) -> Drawn:
    """The tweets of a block laid out as ``layout``, all random draws from ``rng``."""
    uniq, story = np.unique(layout.gid, return_inverse=True)
    st = stories(w, seed, uniq, lay.trend_of(uniq))
    user = w.users(rng.random(lay.BLOCK))
    user[layout.is_seed] = st.author[story[layout.is_seed]]
    retweets = np.minimum(rng.zipf(2.1, lay.BLOCK) - 1, 10_000_000)
    retweets[layout.is_seed] += layout.size[layout.is_seed] - 1
    tok, style, last_end = tweet_slots(rng, w, st, story, layout.is_seed)
    columns = {
        "user": w.handles[user],
        "lang": np.array(LANGS, dtype=object)[st.lang[story]],
        "retweets": retweets.astype(np.int64),
        "topic": np.array(TOPICS, dtype=object)[st.topic[story]],
    }
    return Drawn(columns, (tok, style, last_end), slot_keys(w, tok, buckets))


def kept_rows(b: int, lo: int, hi: int) -> slice:
    """The rows of block ``b`` inside ``[lo, hi)``, as positions in the block."""
    return slice(max(lo - b * lay.BLOCK, 0), min(hi - b * lay.BLOCK, lay.BLOCK))
