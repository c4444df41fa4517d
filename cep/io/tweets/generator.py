"""Rows of a ``tweets`` stream: any range of a plan, a whole stream, its ground truth.

What readers and benches call (:func:`tweets_range`, :func:`generate_tweets`,
:func:`write_ground_truth`): it draws the blocks a range overlaps in the plan's order
(:mod:`cep.io.tweets.default_order` or :mod:`cep.io.tweets.zipf_periodic`), keeps the
range's rows, and gives them ``seq``, snowflake ids and typed columns. The design is in
the package's docstring, :mod:`cep.io.tweets`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import cep.io.tweets.layout as lay
from cep.io.tweets.blocks import kept_rows
from cep.io.tweets.default_order import default_blocks
from cep.io.tweets.plan import DEFAULT_RATE, TWITTER_EPOCH_MS, make_plan
from cep.io.tweets.world import world
from cep.io.tweets.zipf_periodic import zipf_blocks


@dataclass(frozen=True)
class GeneratedTweets:
    """A generated stream and its ground truth.

    ``frame``: the events (columns ``seq, id, ts, user, lang, text, retweets, topic``).
    ``first_story_ids``: ids of the first tweet of every story, in stream order.
    ``story_of``: story number of every row (stories numbered by first appearance).
    ``keys``: every row's FSD key ``lsh_bucket(text, buckets)``, int64, so that load
    studies need not recompute it (equal to the UDF by construction, pinned by a test).
    """

    frame: pd.DataFrame
    first_story_ids: np.ndarray
    story_of: np.ndarray
    keys: np.ndarray


@dataclass
class _Rows:
    """Rows ``lo..hi-1`` of a stream with what generate_tweets needs besides the frame."""

    frame: pd.DataFrame
    first: np.ndarray
    gid: np.ndarray
    keys: np.ndarray


_COLUMNS = ("seq", "id", "ts", "user", "lang", "text", "retweets", "topic")


def _stream_rows(plan: dict[str, Any], lo: int, hi: int) -> _Rows:
    """Rows ``lo..hi-1``: whole blocks are drawn (so any cut agrees), the rows kept."""
    n = plan["n"]
    if plan["block"] != lay.BLOCK:
        raise ValueError(f"tweets: plan made for blocks of {plan['block']} rows, not {lay.BLOCK}")
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"tweets: range [{lo}, {hi}) is not within [0, {n})")
    w = world(plan["seed"], plan["users"])
    blocks = zipf_blocks if plan["mode"] == "zipf-periodic" else default_blocks
    parts: dict[str, list[np.ndarray]] = {name: [] for name in (*_COLUMNS, "first", "gid", "keys")}
    b0, b1 = lo // lay.BLOCK, max(lo, hi - 1) // lay.BLOCK  # an empty range: one block, cut empty
    for b, block in zip(range(b0, b1 + 1), blocks(plan, w, b0, b1, lo, hi), strict=True):
        keep = kept_rows(b, lo, hi)
        ms = block.ts // 1000 - TWITTER_EPOCH_MS
        if np.unique(ms, return_counts=True)[1].max() >= 4096:
            raise ValueError("tweets: more than 4096 tweets in one millisecond; lower the rate")
        seq = np.arange(b * lay.BLOCK, (b + 1) * lay.BLOCK, dtype=np.int64)
        # Rows of one millisecond are consecutive, fewer than 4096: seq mod 4096 is a
        # counter unique within the millisecond, computed without the neighbouring rows.
        ids = (ms << 22) | (block.worker << 12) | (seq % 4096)
        values = {"seq": seq, "id": ids, "ts": block.ts, **block.columns,
                  "first": block.first, "gid": block.gid, "keys": block.keys}  # fmt: skip
        for name, col in values.items():
            parts[name].append(col[keep])
    cols = {name: np.concatenate(p) for name, p in parts.items()}
    # Explicit dtypes: pandas >= 3 would otherwise infer its string dtype for the str
    # columns, and the engine expects object columns of Python str (as read_range).
    index = pd.RangeIndex(lo, hi)  # as generate_tweets(...).frame.iloc[lo:hi]
    frame = pd.DataFrame(
        {
            name: pd.Series(cols[name], index=index, dtype=cols[name].dtype, copy=False)
            for name in _COLUMNS
        },
        copy=False,
    )
    return _Rows(frame, cols["first"], cols["gid"], cols["keys"])


def tweets_range(plan: dict[str, Any], lo: int, hi: int) -> tuple[pd.DataFrame, np.ndarray]:
    """_Rows ``lo..hi-1`` of the planned stream and which of them are first stories.

    Any cut of ``[0, n)`` into consecutive ranges concatenates to the same frame and
    flags, bit for bit, in any process. Cost and memory: the blocks of ``BLOCK`` rows the
    range touches, plus the look-back of the default mode (births of the preceding
    ``MAX_SPAN_BLOCKS`` blocks, a few hundred thousand numbers), whatever ``lo`` and ``n``.
    """
    rows = _stream_rows(plan, lo, hi)
    return rows.frame, rows.first


def generate_tweets(
    n: int = 200_000,
    mode: str = "default",
    seed: int = 7,
    buckets: int = 4096,
    rate: float = DEFAULT_RATE,
    users: int | None = None,
) -> GeneratedTweets:
    """The ``tweets`` workload: ``n`` tweets and their first-story ground truth.

    ``buckets`` is the number of LSH keys (the FSD rule's ``buckets`` variable); it shapes
    the zipf-periodic order and ``keys``. ``rate`` is tweets per second of event time.
    The same rows as ``tweets_range(plan, 0, n)``.
    """
    rows = _stream_rows(make_plan(n, mode, seed, buckets, rate, users), 0, n)
    story = pd.factorize(rows.gid)[0].astype(np.int64)  # numbered by first appearance
    return GeneratedTweets(
        frame=rows.frame,
        first_story_ids=rows.frame.id.to_numpy()[rows.first],
        story_of=story,
        keys=rows.keys,
    )


def write_ground_truth(gen: GeneratedTweets, path: str | os.PathLike[str]) -> None:
    """Write the first stories as JSON lines ``{"id": ..., "story": ...}``, stream order."""
    stories = np.arange(len(gen.first_story_ids))
    with open(path, "w", encoding="utf-8") as fh:
        for tweet_id, story in zip(gen.first_story_ids.tolist(), stories.tolist(), strict=True):
            fh.write(json.dumps({"id": tweet_id, "story": story}) + "\n")
