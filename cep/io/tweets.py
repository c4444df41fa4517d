"""The built-in ``tweets`` workload: a seeded synthetic tweet stream with first-story truth.

First Story Detection (``rules/fsd.epl``) needs tweets in which stories are born and
spread, so that "is this the first tweet of its story?" has a known answer, and the DLB
paper's second experiment needs the same kind of tweets re-ordered so that the popularity
of the LSH keys swings between balanced and skewed. Nothing is downloaded: every word,
user and story comes from seeded generators, so a seed gives the same rows in every
process (no Python ``hash()``, no global random state).

Ranges (what the Spark source calls)
    :func:`tweets_plan` turns a spec (``tweets:n=30000000,mode=zipf-periodic``) into a
    small JSON-serialisable plan: the arguments and the event time of every block
    boundary (blocks of :data:`~cep.io.tweet_layout.BLOCK` = 10,000 rows; 59 kB of JSON
    at n = 30M). :func:`tweets_range` gives rows ``lo..hi-1`` and their first-story flags.
    Everything random about block ``b`` comes from generators seeded ``(seed, purpose,
    b)``, and a story's attributes from a counter-based hash of ``(seed, story number)``
    (:func:`cep.io.tweet_world.hash_uniform`); no state flows from block to block. A range
    draws the blocks it overlaps whole and keeps its rows, so any cut of ``[0, n)``
    concatenates to the same rows bit for bit; :func:`generate_tweets` is the range
    ``[0, n)``. A block of the default stream also needs the births (not the texts) of
    the 361 blocks before it, because a story tweets for at most 3.6M rows. Measured
    (``bench/bench_tweets.py``, warm process, 2-core machine under a load of 5-7): a
    100k-row range of a 30M plan takes 0.95 s at ``lo = 0`` and 0.91 s at ``lo = 29.9M``
    (peak traced memory 99 MB both); zipf-periodic 0.8-1.0 s and 39 MB. Ranges that start
    in the first 3.6M rows also replay which stories the blocks before them used (to
    know whether a story born before the stream has appeared yet): at most ~3x, 2.7 s
    and 193 MB at ``lo = 3.5M``.

Vocabulary
    8,000 pronounceable words (1-4 consonant-vowel syllables, some closed by n/r/s/l/k),
    ranked shortest first (frequent words are short) and drawn from a Zipf-like law of
    exponent 0.8 over the ranks (the power law ``x**-0.8`` on ``[1, 8001)``, floored,
    sampled by inverting its CDF in closed form). The exponent is below 1 on purpose:
    with exponent 1 two unrelated 14-word tweets of one language average 0.14 cosine
    similarity from the common words alone, close to the FSD rule's τ = 0.2; at 0.8 they
    average 0.036. Each language (``en`` 72%, ``es`` 10%, ``fr`` 7%, ``pt`` 6%, ``de``
    5%) ranks the same words in its own seeded order (by length plus noise, so frequent
    words stay short), so languages differ in their frequent words. Users are word+digits
    handles (``n/10`` of them, 1,000-200,000), active with the same kind of law, exponent 1.

Stories (:mod:`cep.io.tweet_layout`)
    In every block, ``S ~ Binomial(10000, 0.25)`` stories are born at uniform positions:
    their seed tweets, so about a quarter of the rows are first stories. A story is a
    one-off with probability 0.7, otherwise it plans ``1 + Z`` tweets, ``Z`` Zipf(1.9)
    truncated at 20,000. Its later tweets follow it after exponential delays of mean
    ``20,000 rows · sqrt(size) · LogNormal(0, 0.5)`` clipped to [10k, 3.6M] rows, cut at
    6 means and at 3.6M rows (lifetimes count rows, 10 s to 1 h at 1,000 tweets/s, so
    the look-back is bounded whatever the rate). The other ``10000 - S`` rows of the
    block are later tweets of the stories alive in it, shared out by a multinomial whose
    weights are each story's planned later tweets times the mass of its delay law inside
    the block, at uniform positions within that part of the block; rows are ordered by
    position (a seed precedes its later tweets). Every block thus has exactly 10,000 rows
    (row -> block is arithmetic) and realised sizes follow the planned ones up to the
    normalisation. Stories born in the 361 blocks before the stream are included (their
    seeds are not in it), so the stream starts in steady state; the first tweet in the
    stream of such a story is its first story. Event time: block ``b`` lasts
    ``Gamma(10000, 1/rate)`` seconds (drawn in the plan), its rows are uniform order
    statistics inside it, i.e. Poisson arrivals at ``rate`` (1,000/s by default: 2.95M
    tweets ≈ 49 min).
    Trending stories: every 90 blocks (15 min at 1,000/s) the block's first-born story
    trends. It plans 20-35% of the rows for the next 90 blocks (a delay law ten times
    longer than that span, so nearly flat; about 18% once normalised) and every one of
    its tweets carries its hashtag, the next of the 4 "hot words" (see Key skew).
    At 2.95M tweets: 25.2% of the tweets are first stories, the largest story (a trend)
    has 191,758 tweets.

Key skew (default order)
    With key grouping over N engines, a window's engine loads have RSTD about
    ``sqrt((N - 1) · Σ p_k²)`` for key shares ``p_k``: over 5 engines, one key carrying a
    share ``p`` alone gives about ``2p``. Real tweets give 40-44.5% (the DLB paper) because
    a few tokens are both frequent and low under the MinHash permutations: a tweet that
    holds one takes its key from it. Zipf words with random hashes give ~4.5% (the
    previous version of this generator). Here the hot words are the 4 vocabulary words
    whose two MinHash values are lowest (fillers excluded), used only as trending
    hashtags: in 95% of a trend's tweets the hashtag attains both minima, so about 17%
    of the traffic shares one key while the trend lasts, and KG RSTD per 10,000-tweet
    window is 38% (median; p10-p90 31-46%, 292 windows at 2.95M), 40% at 30k. Rejected:
    (1) a topic word (a low-hash word per topic) in half of the seed texts gave 34% but
    cut FSD recall from 0.92 to 0.68 at 20k: unrelated same-topic tweets then share a
    key and a word, and their maximum similarity over the rule's 500-tweet window
    passes τ; (2) trending stories without a low-hash hashtag gave ~15%, because only
    about half of a story's paraphrases keep its seed's key. A trend's key window holds
    the trend's own tweets, so FSD quality does not suffer: reference runner
    (``cep run rules/fsd.epl --input tweets:n=... --runner local``) precision/recall
    0.747/0.931 at 20k and 0.687/0.783 at 200k (previous version 0.728/0.887 and
    0.635/0.734).

Paraphrase
    A later tweet of a story is a retweet (20%: ``RT @author: <seed text>``) or a
    paraphrase of the seed: 1-3 words dropped or replaced by fresh Zipf words, an adjacent
    pair swapped (40%), 0-2 frequent filler words, maybe a leading ``@mention``. Any tweet
    may end with the story's ``#hashtag`` (one of its seed words; 30%, a trend's always),
    capitalise its first word, carry a comma or end in ``!``/``?``/``...``. Sigils, case
    and punctuation vanish under the engine's ``[a-z0-9]+`` tokenisation. Measured with
    ``similarity`` (n = 30k, the test): two tweets of one story average 0.80; tweets of
    different stories average 0.022 (0.021 at 200k, 99th percentile 0.18).

Columns (typed like :func:`cep.io.readers.ranges.read_range` output for the FSD schema)
    ``seq`` 0..n-1, ``id`` (unique, Twitter's snowflake layout ``ms << 22 | worker << 12 |
    counter``: time-ordered to the millisecond, not within one; the counter is ``seq mod
    4096``, unique because one millisecond's rows are consecutive and fewer than 4096),
    ``ts`` (µs since the epoch, non-decreasing, from 2026-01-01T00:00Z), ``user``,
    ``lang``, ``text``, ``retweets`` (heavy-tailed: Zipf(2.1) minus one, plus the story's
    planned size on its seed tweet) and ``topic`` (16 topics, Zipf). Strings are Python
    ``str`` in object columns; the frame's index is ``lo..hi-1``.

Modes
    ``default``: the stream in event-time order, as generated.
    ``zipf-periodic``: the DLB paper's second experiment. Every block of 10,000 rows
    re-orders its own pool: 10,000 tweets laid out like a default block but
    self-contained (its stories are born and done inside it, no trend), each with its key
    ``lsh_bucket(text, buckets)``. The rows keep the default clock; the Zipf exponent is
    0.2 for the first 5 min of each 15 min of event time (counted from
    2026-01-01T00:00Z) and 1.5 for the other 10. Every row draws a key rank from the
    current (exact, discrete) Zipf law over the keys in the pool, ranked in one order for
    the whole stream (by frequency in a reference pool, the never-emitted pool of block
    -1, most frequent first, ties in a seeded order: the hot keys of a skewed phase stay
    hot for its 10 min and have many tweets to emit), and the ``j``-th use of a key in
    the block takes the pool's ``(j mod count)``-th tweet of that key, in pool order:
    when a key's pool tweets run out they come again (a repost, same text, user and
    story, fresh ``seq``/``id``/``ts``). The first story of a story is its first use in the block
    (pool stories never leave their block): 12.4% of the tweets at 2.95M. Pools are per
    block so that a range needs only its own blocks; the price is more reposts than a
    whole-stream pool (the top key of a skewed phase takes about 40% of a block).

Ground truth
    ``tweets_range`` returns each row's first-story flag; ``generate_tweets`` numbers
    stories by first appearance (``story_of``) and lists ``first_story_ids``, the ids of
    the flagged rows in stream order. :func:`write_ground_truth` writes them as JSON
    lines, the side file for FSD verification.

Keys
    :attr:`GeneratedTweets.keys` is every tweet's ``lsh_bucket(text, buckets)``, computed
    without tokenising the texts: the bucket hashes the token set's two MinHash minima,
    and each minimum is the least of its tokens' own values, so it is a row-wise ``min``
    over the token slots' precomputed values (:func:`cep.io.tweet_text.slot_keys`;
    equality with the UDF is tested).

Calibration (``bench/bench_tweets.py``: n = 2.95M, seed 7, 4,096 buckets, key grouping
``migration.hashing.kg_engine`` over 5 engines, RSTD = 100·std/mean of the engines' loads
per window of 10,000 tweets inside one phase; :func:`kg_window_rstd`)
    ``zipf-periodic``: median 3.9% in the 0.2 phases (p10-p90 2.2-5.6%, 113 windows) and
    71.3% in the 1.5 phases (p10-p90 64.6-79.2%, 179 windows); the paper measured ~3% and
    ~77%. Both depend on which engines the top-ranked keys hash to, i.e. on the seed: at
    n = 900k, seeds 1, 2, 3, 7, 11 give 2.7-4.1% and 70-88%. The 0.2 phases stay above
    the paper's 3% because a 10,000-tweet pool holds only ~2,500 of the 4,096 keys. At
    the test's setting (n = 60k, 60 tweets/s, 3,000-tweet windows) 5.6% and 76.1%.
    ``default`` order: 38.5% and 37.1% median under the same clock (no swing; see Key
    skew). The largest key holds 6.3% of the default stream (17% while its trend lasts)
    and 23.8% of the zipf-periodic one.

Speed (one run each on the shared 2-core development machine, load average 5-7)
    2.95M tweets: 20.4 s in ``default`` mode (6.9 µs per tweet, texts and keys included)
    and 10.6 s in ``zipf-periodic`` (it renders each pool tweet it emits, not the whole
    pool); peak resident memory 1.3 GB and 1.2 GB for the
    whole stream (a range's is bounded, above). Rendering the texts (joining and
    splitting strings) is the largest part of a range, so a block renders only the rows
    the range keeps.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cep.engine.table import sorted_unique
from cep.io import tweet_layout as lay
from cep.io.tweet_text import Renderer, slot_keys, stories, tweet_slots
from cep.io.tweet_world import LANGS, TOPICS, World, n_users, world, zipf_p
from migration.hashing import kg_engine
from splitter.policies.stats import rstd

__all__ = [
    "DEFAULT_RATE", "LANGS", "MODES", "START_US", "TOPICS", "TWITTER_EPOCH_MS",
    "GeneratedTweets", "generate_tweets", "kg_window_rstd", "parse_spec", "tweets_plan",
    "tweets_range", "write_ground_truth", "zipf_exponent",
]  # fmt: skip

MODES = ("default", "zipf-periodic")
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in µs since the Unix epoch
TWITTER_EPOCH_MS = 1_288_834_974_657  # snowflake ids count milliseconds from here
DEFAULT_RATE = 1000.0  # tweets per second of event time

# Zipf-periodic schedule: (seconds, exponent) phases, repeated from START_US.
PHASES: tuple[tuple[float, float], ...] = ((300.0, 0.2), (600.0, 1.5))
_PLAN_TIMES = 0x54494D45  # purpose of the generator of the blocks' durations
_KEY_PRIORITY = 0x4B455953  # purpose of the generator of the key tie-break order


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


# ---------------------------------------------------------------- plan


def _check(n: int, mode: str, seed: int, buckets: int, rate: float, users: int | None
           ) -> None:
    if n < 1:
        raise ValueError(f"tweets: n must be >= 1, got {n}")
    if users is not None and users < 1:
        raise ValueError(f"tweets: users must be >= 1, got {users}")
    if mode not in MODES:
        raise ValueError(f"tweets: unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"tweets: seed must be in [0, 2**63), got {seed}")
    if buckets < 1:
        raise ValueError(f"tweets: buckets must be >= 1, got {buckets}")
    if not 0 < rate <= 1e6:
        raise ValueError(f"tweets: rate must be in (0, 1e6] tweets/s, got {rate}")


def _plan(
    n: int = 200_000,
    mode: str = "default",
    seed: int = 7,
    buckets: int = 4096,
    rate: float = DEFAULT_RATE,
    users: int | None = None,
) -> dict[str, Any]:
    """The plan of a stream: its arguments and the event time at every block boundary.
    ``users`` (default: one per ten tweets, ``n_users``) fixes the world the tweets are
    drawn from, so that a stream cut short (a bench's warm-up) is the same stream's start.

    A block of ``BLOCK`` Poisson arrivals lasts ``Gamma(BLOCK, 1/rate)`` seconds; drawing
    those durations here (one number per block) is what lets a range know its clock
    without generating the rows before it.
    """
    _check(n, mode, seed, buckets, rate, users)
    n_blocks = -(-n // lay.BLOCK)
    rng = np.random.Generator(np.random.PCG64([seed, _PLAN_TIMES]))
    starts = np.concatenate([[0.0], np.cumsum(rng.standard_gamma(lay.BLOCK, n_blocks) / rate)])
    return {
        "n": n, "mode": mode, "seed": seed, "buckets": buckets, "rate": rate,
        "users": n_users(n) if users is None else users,
        "block": lay.BLOCK, "block_start_s": starts.tolist(),
    }  # fmt: skip


def tweets_plan(spec: str) -> dict[str, Any]:
    """The plan of the stream an input spec names (``tweets``, ``tweets:n=...,mode=...``).

    Small and JSON-serialisable (the arguments plus one float per block of
    ``BLOCK`` rows) so it can travel inside Spark partitions; :func:`tweets_range` turns
    it into rows. ``ValueError`` for a bad spec or bad arguments.
    """
    return _plan(**parse_spec(spec))


# ---------------------------------------------------------------- blocks


@dataclass
class _Block:
    """One block's rows (all ``BLOCK`` of them, texts only for the kept ones)."""

    columns: dict[str, np.ndarray]  # user, lang, text, retweets, topic
    first: np.ndarray  # first-story flags
    gid: np.ndarray  # story numbers
    keys: np.ndarray  # LSH keys
    ts: np.ndarray
    worker: np.ndarray


@functools.lru_cache(maxsize=4)
def _renderer(seed: int, users: int) -> Renderer:
    """A renderer per world, kept so that its table of rendered pieces is reused."""
    return Renderer(world(seed, users).tokens)


def _clock(plan: dict[str, Any], b: int) -> tuple[np.ndarray, np.ndarray]:
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
class _Drawn:
    """A block of tweets before rendering: columns but ``text``, token slots, keys."""

    columns: dict[str, np.ndarray]
    slots: tuple[np.ndarray, np.ndarray, np.ndarray]  # tokens, styles, endings
    keys: np.ndarray

    def texts(self, renderer: Renderer, rows: np.ndarray | slice) -> np.ndarray:
        """Rendered texts of ``rows`` (rendering is the costly part: only what is kept)."""
        tok, style, last_end = self.slots
        return renderer.render(tok[rows], style[rows], last_end[rows])


def _draw(
    seed: int, buckets: int, w: World, layout: lay.BlockLayout, rng: np.random.Generator
) -> _Drawn:
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
    return _Drawn(columns, (tok, style, last_end), slot_keys(w, tok, buckets))


def _keep(b: int, lo: int, hi: int) -> slice:
    """The rows of block ``b`` inside ``[lo, hi)``, as positions in the block."""
    return slice(max(lo - b * lay.BLOCK, 0), min(hi - b * lay.BLOCK, lay.BLOCK))


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


def _default_blocks(plan: dict[str, Any], w: World, b0: int, b1: int, lo: int, hi: int):
    """Blocks ``b0..b1`` of the default stream (texts for the rows in ``[lo, hi)``).

    A row is a first story if it is its story's seed, or the first tweet in the stream of
    a story born before the stream started (whose seed is not in it); such stories can
    only tweet in the first ``MAX_SPAN_BLOCKS`` blocks, so only ranges there look back.
    """
    seed = plan["seed"]
    look_back = b0 < lay.MAX_SPAN_BLOCKS
    layout = _MEMO.layout(seed, 0 if look_back else b0, b1)
    seen = _MEMO.seen_before(layout, b0) if look_back else np.zeros(0, dtype=np.int64)
    renderer = _renderer(seed, len(w.handles))
    for b in range(b0, b1 + 1):
        bl = layout.block(b)
        drawn = _draw(seed, plan["buckets"], w, bl, lay.block_rng(seed, lay.TEXT, b))
        keep = _keep(b, lo, hi)
        columns = {**drawn.columns, "text": np.empty(lay.BLOCK, dtype=object)}
        columns["text"][keep] = drawn.texts(renderer, keep)
        first = bl.is_seed.copy()
        if look_back:
            pre = np.flatnonzero(lay.birth_block(bl.gid) < 0)
            uniq, at = np.unique(bl.gid[pre], return_index=True)
            first[pre[at[~np.isin(uniq, seen)]]] = True
            seen = np.union1d(seen, uniq)
        ts, worker = _clock(plan, b)
        yield _Block(columns, first, bl.gid, drawn.keys, ts, worker)
    if look_back:
        _MEMO.remember(seed, b1 + 1, seen)


def _zipf_blocks(plan: dict[str, Any], w: World, b0: int, b1: int, lo: int, hi: int):
    """Blocks ``b0..b1`` of the zipf-periodic stream (texts for the rows in ``[lo, hi)``).

    Each block re-orders its own pool (:func:`tweet_layout.pool_block`) by key: row ``i``
    draws a key rank from the Zipf law of its phase over the keys in the pool, ranked as
    in :func:`_key_ranks`, and the ``j``-th use of a key in the block takes the pool's
    ``(j mod count)``-th tweet of that key. Pool stories live in their block, so the
    first story is the first use of a story in the block.
    """
    seed, buckets = plan["seed"], plan["buckets"]
    key_rank = _key_ranks(seed, buckets, len(w.handles))
    renderer = _renderer(seed, len(w.handles))
    for b in range(b0, b1 + 1):
        pool = lay.pool_block(seed, b)
        drawn = _draw(seed, buckets, w, pool, lay.block_rng(seed, lay.POOL_TEXT, b))
        ts, worker = _clock(plan, b)
        rows = _zipf_rows(lay.block_rng(seed, lay.ZIPF_KEYS, b), drawn.keys, key_rank, ts)
        keep = _keep(b, lo, hi)
        columns = {name: col[rows] for name, col in drawn.columns.items()}
        columns["text"] = np.empty(lay.BLOCK, dtype=object)
        columns["text"][keep] = drawn.texts(renderer, rows[keep])
        gid = pool.gid[rows]
        first = np.zeros(lay.BLOCK, dtype=bool)
        first[np.unique(gid, return_index=True)[1]] = True
        yield _Block(columns, first, gid, drawn.keys[rows], ts, worker)


@functools.lru_cache(maxsize=4)
def _key_ranks(seed: int, buckets: int, users: int) -> np.ndarray:
    """Every key's zipf-periodic rank (0 = the most popular in skewed phases).

    The same for all blocks, so the hot keys of a skewed phase stay hot for its 10 min:
    keys by their frequency in a reference pool (the pool of block -1, never emitted),
    most frequent first, so that the keys drawn most have the most tweets to emit;
    ties (and absent keys) in a seeded order.
    """
    w = world(seed, users)
    drawn = _draw(
        seed, buckets, w, lay.pool_block(seed, -1), lay.block_rng(seed, lay.POOL_TEXT, -1)
    )
    priority = np.random.Generator(np.random.PCG64([seed, _KEY_PRIORITY])).permutation(buckets)
    order = np.lexsort((priority, -np.bincount(drawn.keys, minlength=buckets)))
    ranks = np.empty(buckets, dtype=np.int64)
    ranks[order] = np.arange(buckets)
    return ranks


def _zipf_rows(
    rng: np.random.Generator, pool_keys: np.ndarray, key_rank: np.ndarray, ts: np.ndarray
) -> np.ndarray:
    """Pool rows to emit, in order, for one zipf-periodic block (see :func:`_zipf_blocks`)."""
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


@dataclass
class _Rows:
    """Rows ``lo..hi-1`` of a stream with what generate_tweets needs besides the frame."""

    frame: pd.DataFrame
    first: np.ndarray
    gid: np.ndarray
    keys: np.ndarray


_COLUMNS = ("seq", "id", "ts", "user", "lang", "text", "retweets", "topic")


def _rows(plan: dict[str, Any], lo: int, hi: int) -> _Rows:
    """Rows ``lo..hi-1``: whole blocks are drawn (so any cut agrees), the rows kept."""
    n = plan["n"]
    if plan["block"] != lay.BLOCK:
        raise ValueError(f"tweets: plan made for blocks of {plan['block']} rows, not {lay.BLOCK}")
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"tweets: range [{lo}, {hi}) is not within [0, {n})")
    w = world(plan["seed"], plan["users"])
    blocks = _zipf_blocks if plan["mode"] == "zipf-periodic" else _default_blocks
    parts: dict[str, list[np.ndarray]] = {name: [] for name in (*_COLUMNS, "first", "gid", "keys")}
    b0, b1 = lo // lay.BLOCK, max(lo, hi - 1) // lay.BLOCK  # an empty range: one block, cut empty
    for b, block in zip(range(b0, b1 + 1), blocks(plan, w, b0, b1, lo, hi), strict=True):
        keep = _keep(b, lo, hi)
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
    """Rows ``lo..hi-1`` of the planned stream and which of them are first stories.

    Any cut of ``[0, n)`` into consecutive ranges concatenates to the same frame and
    flags, bit for bit, in any process. Cost and memory: the blocks of ``BLOCK`` rows the
    range touches, plus the look-back of the default mode (births of the preceding
    ``MAX_SPAN_BLOCKS`` blocks, a few hundred thousand numbers), whatever ``lo`` and ``n``.
    """
    rows = _rows(plan, lo, hi)
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
    rows = _rows(_plan(n, mode, seed, buckets, rate, users), 0, n)
    story = pd.factorize(rows.gid)[0].astype(np.int64)  # numbered by first appearance
    return GeneratedTweets(
        frame=rows.frame,
        first_story_ids=rows.frame.id.to_numpy()[rows.first],
        story_of=story,
        keys=rows.keys,
    )


# ---------------------------------------------------------------- modes


def _phase_index(ts: np.ndarray) -> np.ndarray:
    """Number of the zipf-periodic phase (0, 1, 2, ... across cycles) of each timestamp."""
    bounds = np.cumsum([length for length, _ in PHASES])
    t = (np.asarray(ts, dtype=np.int64) - START_US) / 1e6
    cycle, within = np.divmod(t, bounds[-1])
    return cycle.astype(np.int64) * len(PHASES) + np.searchsorted(bounds, within, "right")


def zipf_exponent(ts: np.ndarray) -> np.ndarray:
    """The zipf-periodic exponent in force at each timestamp (µs): 0.2 or 1.5."""
    exponents = np.array([e for _, e in PHASES])
    return exponents[_phase_index(ts) % len(PHASES)]


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


# ---------------------------------------------------------------- calibration


def kg_window_rstd(
    keys: np.ndarray, ts: np.ndarray, n_engines: int = 5, window: int = 10_000
) -> tuple[np.ndarray, np.ndarray]:
    """Per-window RSTD (%) of engine loads under key grouping, and each window's exponent.

    Windows are ``window`` consecutive rows inside one zipf-periodic phase (a phase's
    last, shorter remainder is left out so every figure has the same sample size). The
    load of an engine is its number of rows, the engine ``kg_engine(key, n_engines)``.
    """
    engine = kg_engine(np.asarray(keys), n_engines)
    phase = _phase_index(ts)
    exponent = zipf_exponent(ts)
    starts = np.flatnonzero(np.diff(phase, prepend=-1))
    bounds = np.append(starts, len(phase))
    out_e, out_r = [], []
    for lo, hi in itertools.pairwise(bounds):
        for w in range(lo, hi - window + 1, window):
            out_r.append(rstd(np.bincount(engine[w : w + window], minlength=n_engines)))
            out_e.append(exponent[w])
    return np.array(out_e, dtype=np.float64), np.array(out_r, dtype=np.float64)


# ---------------------------------------------------------------- specs and side files

_SPEC_TYPES: dict[str, type] = {"n": int, "mode": str, "seed": int, "buckets": int, "rate": float,
                                 "users": int}


def parse_spec(spec: str) -> dict[str, Any]:
    """Keyword arguments of :func:`generate_tweets` from an input spec.

    ``tweets`` → ``{}`` (all defaults); ``tweets:n=2950000,mode=zipf-periodic,seed=7`` →
    ``{"n": 2950000, "mode": "zipf-periodic", "seed": 7}``. Only keys that are given are
    returned, so a caller can tell an explicit ``buckets`` from the default. Keys: ``n``,
    ``mode``, ``seed``, ``buckets``, ``users`` (ints except ``mode``) and ``rate`` (tweets
    per second of event time, a number). Anything else is a ``ValueError`` naming the problem.
    """
    name, sep, params = spec.strip().partition(":")
    if name.strip() != "tweets":
        raise ValueError(f"not a tweets spec: {spec!r} (expected 'tweets[:key=value,...]')")
    out: dict[str, Any] = {}
    if not sep:
        return out
    if not params.strip():
        raise ValueError(f"tweets spec {spec!r}: nothing after ':'")
    for item in params.split(","):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key or not value:
            raise ValueError(f"tweets spec {spec!r}: expected key=value, got {item.strip()!r}")
        if key not in _SPEC_TYPES:
            raise ValueError(
                f"tweets spec {spec!r}: unknown key {key!r}; known keys: {', '.join(_SPEC_TYPES)}"
            )
        if key in out:
            raise ValueError(f"tweets spec {spec!r}: key {key!r} given twice")
        try:
            parsed = _SPEC_TYPES[key](value)
        except ValueError:
            kind = _SPEC_TYPES[key].__name__
            raise ValueError(f"tweets spec {spec!r}: {key} must be {kind}, got {value!r}") from None
        out[key] = parsed
    if "mode" in out and out["mode"] not in MODES:
        raise ValueError(
            f"tweets spec {spec!r}: unknown mode {out['mode']!r}; expected one of "
            f"{', '.join(MODES)}"
        )
    return out


def write_ground_truth(gen: GeneratedTweets, path: str | os.PathLike[str]) -> None:
    """Write the first stories as JSON lines ``{"id": ..., "story": ...}``, stream order."""
    stories = np.arange(len(gen.first_story_ids))
    with open(path, "w", encoding="utf-8") as fh:
        for tweet_id, story in zip(gen.first_story_ids.tolist(), stories.tolist(), strict=True):
            fh.write(json.dumps({"id": tweet_id, "story": story}) + "\n")
