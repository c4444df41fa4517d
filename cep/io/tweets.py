"""The built-in ``tweets`` workload: a seeded synthetic tweet stream with first-story truth.

First Story Detection (``rules/fsd.epl``) needs tweets in which stories are born and
spread, so that "is this the first tweet of its story?" has a known answer, and the DLB
paper's second experiment needs the same tweets re-ordered so that the popularity of the
LSH keys swings between balanced and skewed. Nothing is downloaded: every word, user and
story comes from ``numpy.random.Generator(PCG64(seed))``, so a seed gives the same frame in
every process (no Python ``hash()``, no global random state).

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

Stories
    Stories are born as a Poisson process in event time. A story's size is 1 (a one-off)
    with probability 0.7, otherwise ``1 + Z`` with ``Z`` Zipf(1.9) truncated at 20,000:
    most stories get a few tweets and a few get thousands (mean 4.0 tweets). The first
    tweet is the story's seed text (8-20 words, in the story's language and topic); the
    others follow it after independent exponential delays with a story lifetime
    ``20 s · sqrt(size) · LogNormal(0, 0.5)`` clipped to [10 s, 1 h]. Stories born during
    the four hours before the stream starts are included through the memoryless property
    (only their tweets after time 0, a Binomial share), so the stream starts in steady
    state instead of with a burst of new stories; such a story's first tweet in the
    stream is a paraphrase, and it is the first story in the ground truth because FSD
    only sees the stream. The birth rate is ``rate / 4.0`` stories/s, so the stream
    carries ``rate`` tweets per second of event time on average (1,000 by default: 2.95M
    tweets ≈ 49 min), with the bursts of popular stories. At 2.95M tweets: 25.1% of the
    tweets are first stories, 17.5% are one-offs, the largest story has 12,811 tweets.

Paraphrase
    A later tweet of a story is a retweet (20%: ``RT @author: <seed text>``) or a
    paraphrase of the seed: 1-3 words dropped or replaced by fresh Zipf words, an adjacent
    pair swapped (40%), 0-2 frequent filler words, maybe a leading ``@mention``. Any tweet
    may end with the story's ``#hashtag`` (one of its seed words), capitalise its first
    word, carry a comma or end in ``!``/``?``/``...``. Sigils, case and punctuation vanish
    under the engine's ``[a-z0-9]+`` tokenisation. Measured with ``similarity`` (n = 30k):
    two tweets of one story average 0.79 (97% of later tweets are > 0.5 to their story's
    first tweet); tweets of different stories average 0.026 (99th percentile 0.2).

Columns (typed like :func:`cep.io.sources.read_events` output for the FSD schema)
    ``seq`` 0..n-1, ``id`` (unique, Twitter's snowflake layout ``ms << 22 | worker << 12 |
    counter``: time-ordered to the millisecond, not within one), ``ts`` (µs since the
    epoch, non-decreasing, from 2026-01-01T00:00Z), ``user``, ``lang``, ``text``,
    ``retweets`` (heavy-tailed: Zipf(2.1) minus one, plus the story's size on its seed
    tweet) and ``topic`` (16 topics, Zipf). Strings are Python ``str`` in object columns.

Modes
    ``default``: the stream in event-time order, as generated.
    ``zipf-periodic``: the DLB paper's second experiment. A pool of ``n`` tweets is
    generated exactly as the ``default`` stream of the same arguments, and each pool
    tweet's key ``lsh_bucket(text, buckets)`` is computed. The output gets fresh Poisson
    arrival times at ``rate``; the Zipf exponent is 0.2 for the first 5 min of each 15 min
    of event time (counted from 2026-01-01T00:00Z) and 1.5 for the other 10. For every
    output position a key rank is drawn from the current (exact, discrete) Zipf law over
    the keys that occur in the pool, mapped to a key through a seeded permutation, and
    the next unused pool tweet of that key (in pool order) is emitted. When a key's pool
    tweets run out it cycles: its tweets are emitted again from its first one, with fresh
    ``seq``/``id``/``ts`` but the same text, user and story (a repost). Skewed phases need
    that: the top key takes ~38% of their traffic, far more than any key's share of the
    pool. Ground truth is recomputed on the output order: a story's first story is its
    first tweet in the output (13.7% of the tweets at 2.95M).

Ground truth
    ``story_of[i]`` numbers stories by first appearance (0, 1, ...), ``first_story_ids``
    are the ids of those first appearances, in stream order. :func:`write_ground_truth`
    writes them as JSON lines, the side file for FSD verification.

Keys
    :attr:`GeneratedTweets.keys` is every tweet's ``lsh_bucket(text, buckets)``, computed
    without tokenising 2.95M texts: the bucket depends only on the two MinHash minima of
    the token set, and the two tokens attaining them have exactly those minima on their
    own, so each tweet is keyed by ``lsh_bucket("<token a> <token b>")`` of its minimising
    pair, asked once per distinct pair (equality with the UDF is tested).

Calibration (``bench/bench_tweets.py``: n = 2.95M, seed 7, 4,096 buckets, key grouping
``splitter.hashing.kg_engine`` over 5 engines, RSTD = 100·std/mean of the engines' loads
per window of 10,000 tweets inside one phase; :func:`kg_window_rstd`)
    ``zipf-periodic``: median 2.1% in the 0.2 phases (p10-p90 1.2-3.1%, 111 windows) and
    73.7% in the 1.5 phases (p10-p90 72.5-74.9%, 179 windows); the paper measured ~3% and
    ~77%. The 1.5 figure depends on which engines the top-ranked keys hash to, i.e. on
    the seed: 84-100% for seeds 1, 2, 3, 11 at n = 60k (the test's setting: 60 tweets/s,
    3,000-tweet windows, where seed 7 gives 3.9% and 91%). ``default`` order: 4.5-4.9%
    median under the same clock, no swing. All 4,096 keys occur; the largest key holds
    1.7% of the default stream and 23.7% of the zipf-periodic one.

Speed (one run each on the shared 2-core development machine)
    2.95M tweets: 18.7 s in ``default`` mode and 18.5 s in ``zipf-periodic`` when the
    machine was quiet (6.3 µs per tweet, texts and keys included), 29-37 s under a load
    average of 5-6 (the figures in ``bench/results/tweets.json``); peak memory 1.3 GB.
    About a quarter of the time is rendering the texts (building, joining and splitting
    strings), an eighth tokenising the vocabulary and the distinct key pairs.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cep.engine.text import lsh_bucket, minhash_signatures
from splitter.hashing import kg_engine
from splitter.stats import rstd

MODES = ("default", "zipf-periodic")
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in µs since the Unix epoch
TWITTER_EPOCH_MS = 1_288_834_974_657  # snowflake ids count milliseconds from here
DEFAULT_RATE = 1000.0  # tweets per second of event time

# Zipf-periodic schedule: (seconds, exponent) phases, repeated from START_US.
PHASES: tuple[tuple[float, float], ...] = ((300.0, 0.2), (600.0, 1.5))

VOCAB_SIZE = 8000
WORD_ZIPF = 0.8
LANGS = ("en", "es", "fr", "pt", "de")
LANG_P = (0.72, 0.10, 0.07, 0.06, 0.05)
TOPICS = (
    "politics", "sports", "music", "entertainment", "tech", "business", "science",
    "health", "weather", "gaming", "travel", "food", "fashion", "education", "crime",
    "local",
)  # fmt: skip
SEED_LEN = (8, 20)  # words in a story's seed text, inclusive
P_ONEOFF = 0.7
SIZE_ZIPF = 1.9
SIZE_CAP = 20_000
LIFETIME_S = 20.0  # story lifetime scale: LIFETIME_S * sqrt(size) * LogNormal(0, 0.5)
LIFETIME_CLIP = (10.0, 3600.0)
PREHISTORY_S = 4 * 3600.0  # stories born this long before the stream may still tweet in it
P_RETWEET = 0.2
FILLER_RANKS = 30  # filler words are the language's 30 most frequent words

# Text layout: one token slot per column; -1 = empty.
_W_RT, _W_MENTION, _W_BODY, _W_FILLER, _W_TAG = 0, 1, 2, 2 + SEED_LEN[1], 4 + SEED_LEN[1]
_WIDTH = _W_TAG + 1
# Token styles: how a token is written. None changes the token under the engine's
# [a-z0-9]+ lower-cased tokenisation, so the text's tokens are exactly the slot tokens.
_STYLE_FORMS = (
    lambda t: t,  # _PLAIN
    str.capitalize,  # _CAP
    lambda t: "#" + t,  # _HASH
    lambda t: "@" + t,  # _MENTION
    lambda t: "@" + t + ":",  # _MENTION_COLON
    lambda t: t + ",",  # _COMMA
    str.upper,  # _UPPER
)
_PLAIN, _CAP, _HASH, _MENTION, _MENTION_COLON, _COMMA, _UPPER = range(len(_STYLE_FORMS))
_N_STYLE = len(_STYLE_FORMS)
_ENDS = (" ", "\n", "!\n", "?\n", "...\n")  # what follows a token; index 0 = more follow
_END_P = (0.6, 0.2, 0.1, 0.1)  # probabilities of ends 1..4 after a tweet's last token
_CHUNK = 200_000  # rows rendered at once (bounds memory; fixed, so output is too)


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


# ---------------------------------------------------------------- vocabulary and users

_ONSETS = np.array([*"bdfgklmnprstvz", "br", "ch", "sh", "tr", "st"], dtype=object)
_VOWELS = np.array([*"aeiou", "ai", "ou"], dtype=object)
_CODAS = np.array(["", "", "", "", "n", "r", "s", "l", "k"], dtype=object)


def _vocabulary(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` distinct pronounceable words, shortest first (rank 0 = most frequent)."""
    words: dict[str, None] = {}
    while len(words) < size:
        m = 2 * size
        n_syl = rng.choice(np.arange(1, 5), size=m, p=[0.15, 0.45, 0.3, 0.1])
        parts = (
            _ONSETS[rng.integers(0, len(_ONSETS), (m, 4))]
            + _VOWELS[rng.integers(0, len(_VOWELS), (m, 4))]
            + _CODAS[rng.integers(0, len(_CODAS), (m, 4))]
        )
        for row, k in zip(parts.tolist(), n_syl.tolist(), strict=True):
            word = "".join(row[:k])
            if word != "rt":
                words.setdefault(word)
                if len(words) == size:
                    break
    ordered = sorted(words, key=len)  # stable: ties keep their seeded order
    return np.array(ordered, dtype=object)


def _handles(rng: np.random.Generator, vocab: np.ndarray, count: int) -> np.ndarray:
    """``count`` distinct user handles ``word+digits`` (only ``[a-z0-9]``: one token)."""
    out: dict[str, None] = {}
    while len(out) < count:
        m = 2 * count
        w = vocab[rng.integers(0, len(vocab), m)]
        d = rng.integers(0, 10_000, m)
        for word, num in zip(w.tolist(), d.tolist(), strict=True):
            out.setdefault(f"{word}{num}")
            if len(out) == count:
                break
    return np.array(list(out), dtype=object)


def _power_ranks(rng: np.random.Generator, k: int, s: float, size: int) -> np.ndarray:
    """Ranks in ``[0, k)`` from the power law ``x**-s`` on ``[1, k + 1)``, floored.

    A Zipf-like law sampled by inverting its CDF in closed form: ~10x faster than
    ``Generator.choice(p=...)`` (a binary search per draw), which matters for the tens of
    millions of word and user draws at paper scale.
    """
    u = rng.random(size)
    if s == 1.0:
        x = np.exp(u * np.log(k + 1.0))
    else:
        x = (1.0 + u * ((k + 1.0) ** (1.0 - s) - 1.0)) ** (1.0 / (1.0 - s))
    return np.minimum(x.astype(np.int64) - 1, k - 1)


def _zipf_p(k: int, s: float) -> np.ndarray:
    """Probabilities of ranks 1..k under a Zipf law of exponent ``s``."""
    w = np.arange(1, k + 1, dtype=np.float64) ** -s
    return w / w.sum()


# ---------------------------------------------------------------- story timing

_SIZE_P = _zipf_p(SIZE_CAP, SIZE_ZIPF)
_MEAN_SIZE = P_ONEOFF + (1 - P_ONEOFF) * (1 + float(np.arange(1, SIZE_CAP + 1) @ _SIZE_P))


def _multi_sizes(rng: np.random.Generator, m: int) -> np.ndarray:
    """Sizes of ``m`` stories that have more than one tweet: ``1 + Zipf`` truncated."""
    return 1 + 1 + rng.choice(SIZE_CAP, size=m, p=_SIZE_P)


def _lifetimes(rng: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
    """Mean delay (s) of a story's later tweets: bigger stories last longer."""
    life = LIFETIME_S * np.sqrt(sizes) * rng.lognormal(0.0, 0.5, len(sizes))
    return np.clip(life, *LIFETIME_CLIP)


@dataclass
class _Timeline:
    """The first ``n`` tweets of the stream: story (global number), time (s), seed flag."""

    story: np.ndarray
    time: np.ndarray
    is_seed: np.ndarray
    story_size: np.ndarray  # size of every global story (all its tweets, seen or not)


def _timeline(rng: np.random.Generator, n: int, rate: float) -> _Timeline:
    """Story births and tweet times; keeps the ``n`` earliest tweets at time >= 0."""
    birth_rate = rate / _MEAN_SIZE
    # Stories born before 0: only multi-tweet ones can reach the stream. By memorylessness
    # of the exponential delays, the number of a story's tweets after 0 is
    # Binomial(size - 1, exp(birth / lifetime)) and their times are 0 + Exp(lifetime).
    m_pre = rng.poisson(birth_rate * (1 - P_ONEOFF) * PREHISTORY_S)
    pre_birth = -rng.uniform(0.0, PREHISTORY_S, m_pre)
    pre_size = _multi_sizes(rng, m_pre)
    pre_life = _lifetimes(rng, pre_size)
    pre_left = rng.binomial(pre_size - 1, np.exp(pre_birth / pre_life))
    stories = [np.repeat(np.arange(m_pre), pre_left)]
    times = [rng.exponential(np.repeat(pre_life, pre_left))]
    seeds = [np.zeros(int(pre_left.sum()), dtype=bool)]
    sizes = [pre_size]
    n_stories = m_pre
    # Stories born in blocks of event time until n tweets lie before the block's end.
    block = 1.25 * n / rate + 10.0
    end = 0.0
    while True:
        m = rng.poisson(birth_rate * block)
        birth = end + rng.uniform(0.0, block, m)
        size = np.ones(m, dtype=np.int64)
        multi = rng.random(m) >= P_ONEOFF
        size[multi] = _multi_sizes(rng, int(multi.sum()))
        life = _lifetimes(rng, size)
        ids = n_stories + np.arange(m)
        later = size - 1
        stories += [ids, np.repeat(ids, later)]
        times += [birth, np.repeat(birth, later) + rng.exponential(np.repeat(life, later))]
        seeds += [np.ones(m, dtype=bool), np.zeros(int(later.sum()), dtype=bool)]
        sizes.append(size)
        n_stories += m
        end += block
        time = np.concatenate(times)
        if np.count_nonzero(time < end) >= n:
            break
    order = np.argsort(time, kind="stable")[:n]
    return _Timeline(
        story=np.concatenate(stories)[order],
        time=time[order],
        is_seed=np.concatenate(seeds)[order],
        story_size=np.concatenate(sizes),
    )


# ---------------------------------------------------------------- text rendering


class _Renderer:
    """Turns token-slot matrices into tweet strings without a Python loop per tweet.

    A piece is ``(token, style, end)`` packed in one integer; its string (e.g. ``"#Word!\\n"``)
    is built once, the first time it is used. A chunk of tweets is rendered by looking up
    all its pieces, joining them into one string and splitting on the newline that ends
    every tweet.
    """

    def __init__(self, tokens: np.ndarray) -> None:
        self.tokens = tokens
        self.table = np.empty(len(tokens) * _N_STYLE * len(_ENDS), dtype=object)
        self.filled = np.zeros(len(self.table), dtype=bool)

    def _fill(self, codes: np.ndarray) -> None:
        used = np.zeros(len(self.table), dtype=bool)
        used[codes] = True
        need = np.flatnonzero(used & ~self.filled)
        per_token = _N_STYLE * len(_ENDS)
        for code in need.tolist():
            tok, rest = divmod(code, per_token)
            style, end = divmod(rest, len(_ENDS))
            self.table[code] = _STYLE_FORMS[style](self.tokens[tok]) + _ENDS[end]
        self.filled[need] = True

    def render(self, tok: np.ndarray, style: np.ndarray, last_end: np.ndarray) -> list[str]:
        """Texts of rows of ``tok`` (-1 = empty slot); ``last_end`` picks each ending."""
        mask = tok >= 0
        codes = (tok[mask].astype(np.int64) * _N_STYLE + style[mask]) * len(_ENDS)
        codes[np.cumsum(np.count_nonzero(mask, axis=1)) - 1] += last_end  # rows are non-empty
        self._fill(codes)
        return "".join(self.table[codes].tolist()).split("\n")[:-1]


# ---------------------------------------------------------------- the stream


@dataclass
class _World:
    """Everything fixed by the seed before tweets are written."""

    vocab: np.ndarray
    lang_words: np.ndarray  # (language, rank) -> word token id
    handles: np.ndarray
    tokens: np.ndarray  # token id -> string: words, then handles, then "rt"

    @property
    def rt_token(self) -> int:
        """Token id of "rt" (rendered "RT" in retweets)."""
        return len(self.tokens) - 1

    def handle_token(self, user: np.ndarray) -> np.ndarray:
        """Token ids of users' handles (mentions)."""
        return len(self.vocab) + user

    def words(self, rng: np.random.Generator, lang: np.ndarray) -> np.ndarray:
        """One Zipf-drawn word token per entry of ``lang`` (language indices, 1-D)."""
        return self.lang_words[lang, _power_ranks(rng, VOCAB_SIZE, WORD_ZIPF, len(lang))]

    def users(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` users drawn by activity (Zipf, exponent 1)."""
        return _power_ranks(rng, len(self.handles), 1.0, size)


def _world(rng: np.random.Generator, n: int) -> _World:
    """Vocabulary, per-language word ranks and users for a stream of ``n`` tweets."""
    vocab = _vocabulary(rng, VOCAB_SIZE)
    # Other languages rank the same words in their own order, still mostly short first
    # (sorted by length plus noise) so that their frequent words stay short.
    length = np.fromiter(map(len, vocab), dtype=np.float64, count=VOCAB_SIZE)
    lang_words = np.stack(
        [np.arange(VOCAB_SIZE)]
        + [np.argsort(length + rng.uniform(0.0, 4.0, VOCAB_SIZE)) for _ in LANGS[1:]]
    )
    n_users = int(np.clip(n // 10, 1000, 200_000))
    handles = _handles(rng, vocab, n_users)
    return _World(
        vocab=vocab,
        lang_words=lang_words,
        handles=handles,
        tokens=np.concatenate([vocab, handles, np.array(["rt"], dtype=object)]),
    )


@dataclass
class _Stream:
    """Generated rows before ids/timestamps are final (the pool of zipf-periodic)."""

    user: np.ndarray
    lang: np.ndarray
    text: np.ndarray
    retweets: np.ndarray
    topic: np.ndarray
    story: np.ndarray  # stories numbered by first appearance
    time: np.ndarray  # seconds after START_US
    keys: np.ndarray


def _generate_stream(rng: np.random.Generator, n: int, rate: float, buckets: int) -> _Stream:
    """The default-mode stream of ``n`` tweets (see the module docstring)."""
    world = _world(rng, n)
    tl = _timeline(rng, n, rate)
    story, _ = pd.factorize(tl.story)
    story = story.astype(np.int64)
    n_story = int(story.max()) + 1

    # Per story: language, topic, author, seed text, hashtag word.
    s_lang = rng.choice(len(LANGS), size=n_story, p=LANG_P)
    s_topic = rng.choice(len(TOPICS), size=n_story, p=_zipf_p(len(TOPICS), 1.0))
    s_author = world.users(rng, n_story)
    s_len = rng.integers(SEED_LEN[0], SEED_LEN[1] + 1, n_story)
    seed_tok = np.full((n_story, SEED_LEN[1]), -1, dtype=np.int32)
    in_seed = np.arange(SEED_LEN[1])[None, :] < s_len[:, None]
    seed_tok[in_seed] = world.words(rng, np.repeat(s_lang, s_len))
    s_tag = seed_tok[np.arange(n_story), rng.integers(0, s_len)]

    # Per row: author for seeds, an active user otherwise; heavy-tailed retweet counts.
    user = world.users(rng, n)
    user[tl.is_seed] = s_author[story[tl.is_seed]]
    retweets = np.minimum(rng.zipf(2.1, n) - 1, 10_000_000)
    retweets[tl.is_seed] += tl.story_size[tl.story[tl.is_seed]] - 1

    renderer = _Renderer(world.tokens)
    m0, m1 = minhash_signatures(world.tokens, 2).astype(np.int64).T
    pad = np.int64(2**32)  # above every 32-bit min-value: empty slots never win
    mins = (np.append(m0, pad), np.append(m1, pad))
    texts: list[str] = []
    pairs = np.empty(n, dtype=np.int64)
    n_tok = len(world.tokens)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        tok, style, last_end = _tweet_slots(
            rng, world, story[lo:hi], tl.is_seed[lo:hi], s_lang, s_len, seed_tok, s_tag,
            s_author,
        )  # fmt: skip
        texts += renderer.render(tok, style, last_end)
        # The LSH key depends only on the two MinHash minima of the token set, and the
        # two tokens attaining them have the same minima as the whole text: key the
        # tweet by that token pair and ask lsh_bucket once per distinct pair (below).
        tp = np.where(tok >= 0, tok, n_tok)
        rows = np.arange(hi - lo)
        a = tp[rows, np.argmin(mins[0][tp], axis=1)]
        b = tp[rows, np.argmin(mins[1][tp], axis=1)]
        pairs[lo:hi] = a * n_tok + b
    codes, uniq = pd.factorize(pairs)
    pair_text = [f"{world.tokens[p // n_tok]} {world.tokens[p % n_tok]}" for p in uniq.tolist()]
    keys = lsh_bucket(np.array(pair_text, dtype=object), buckets)[codes]
    return _Stream(
        user=world.handles[user],
        lang=np.array(LANGS, dtype=object)[s_lang[story]],
        text=np.array(texts, dtype=object),
        retweets=retweets.astype(np.int64),
        topic=np.array(TOPICS, dtype=object)[s_topic[story]],
        story=story,
        time=tl.time,
        keys=keys,
    )


def _tweet_slots(
    rng: np.random.Generator,
    world: _World,
    story: np.ndarray,
    is_seed: np.ndarray,
    s_lang: np.ndarray,
    s_len: np.ndarray,
    seed_tok: np.ndarray,
    s_tag: np.ndarray,
    s_author: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token slots, styles and endings of a chunk of tweets (see "Paraphrase" above)."""
    c = len(story)
    rows = np.arange(c)
    lang = s_lang[story]
    length = s_len[story]
    tok = np.full((c, _WIDTH), -1, dtype=np.int32)
    style = np.full((c, _WIDTH), _PLAIN, dtype=np.int8)
    body = seed_tok[story]
    later = ~is_seed
    retweet = later & (rng.random(c) < P_RETWEET)
    para = later & ~retweet

    # Paraphrase: swap a neighbouring pair, then drop/replace 1-3 words.
    swap = para & (rng.random(c) < 0.4)
    j = (rng.random(c) * (length - 1)).astype(np.int64)
    sr, sj = rows[swap], j[swap]
    body[sr, sj], body[sr, sj + 1] = body[sr, sj + 1], body[sr, sj]  # fancy reads copy
    # Three distinct positions in [0, length) per paraphrase (each draw skips the ones
    # taken before it); the first `replaced` are replaced, the next ones up to `edits`
    # dropped.
    pr, n_words = rows[para], length[para]
    u = rng.random((len(pr), 3))
    p0 = (u[:, 0] * n_words).astype(np.int64)
    p1 = (u[:, 1] * (n_words - 1)).astype(np.int64)
    p1 += p1 >= p0
    p2 = (u[:, 2] * (n_words - 2)).astype(np.int64)
    p2 += p2 >= np.minimum(p0, p1)
    p2 += p2 >= np.maximum(p0, p1)
    pos = np.stack([p0, p1, p2], axis=1)
    edits = rng.integers(1, 4, len(pr))
    replaced = rng.binomial(edits, 0.5)
    k = np.arange(3)[None, :]
    repl = k < replaced[:, None]
    drop = (k >= replaced[:, None]) & (k < edits[:, None])
    prow = np.broadcast_to(pr[:, None], pos.shape)
    body[prow[repl], pos[repl]] = world.words(rng, lang[prow[repl]])
    body[prow[drop], pos[drop]] = -1
    tok[:, _W_BODY : _W_BODY + SEED_LEN[1]] = body

    n_fill = rng.choice(3, size=c, p=[0.5, 0.3, 0.2]) * para
    fill = world.lang_words[lang[:, None], rng.integers(0, FILLER_RANKS, (c, 2))]
    fill[np.arange(2)[None, :] >= n_fill[:, None]] = -1
    tok[:, _W_FILLER : _W_FILLER + 2] = fill

    mention = para & (rng.random(c) < 0.15)
    tok[mention, _W_MENTION] = world.handle_token(world.users(rng, int(mention.sum())))
    style[mention, _W_MENTION] = _MENTION
    tok[retweet, _W_RT] = world.rt_token
    style[retweet, _W_RT] = _UPPER
    tok[retweet, _W_MENTION] = world.handle_token(s_author[story[retweet]])
    style[retweet, _W_MENTION] = _MENTION_COLON

    tag = rng.random(c) < 0.3
    tok[tag, _W_TAG] = s_tag[story[tag]]
    style[tag, _W_TAG] = _HASH
    last_col = _WIDTH - 1 - np.argmax(tok[:, ::-1] >= 0, axis=1)
    body_col = np.arange(_W_BODY, _W_BODY + SEED_LEN[1])[None, :]
    comma = (rng.random(body.shape) < 0.04) & (body >= 0) & (body_col < last_col[:, None])
    style[:, _W_BODY : _W_BODY + SEED_LEN[1]][comma] = _COMMA  # never before the end mark
    first = _W_BODY + np.argmax(body >= 0, axis=1)
    cap = rng.random(c) < 0.6
    style[rows[cap], first[cap]] = _CAP
    last_end = 1 + rng.choice(len(_END_P), size=c, p=_END_P)
    return tok, style, last_end


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


def _arrivals(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """Poisson arrival times (s) at ``rate`` per second."""
    return np.cumsum(rng.exponential(1.0 / rate, n))


def _to_us(time: np.ndarray) -> np.ndarray:
    """Event timestamps (µs since the Unix epoch) of times in seconds after START_US."""
    return START_US + np.floor(time * 1e6).astype(np.int64)


def _zipf_periodic(
    rng: np.random.Generator, pool_keys: np.ndarray, rate: float
) -> tuple[np.ndarray, np.ndarray]:
    """Pool rows to emit, in order, for the zipf-periodic stream, and their times (s)."""
    n = len(pool_keys)
    time = _arrivals(rng, n, rate)
    exponent = zipf_exponent(_to_us(time))
    uniq, key_idx, key_count = np.unique(pool_keys, return_inverse=True, return_counts=True)
    rank_to_key = rng.permutation(len(uniq))
    out_key = np.empty(n, dtype=np.int64)
    for _, e in PHASES:
        sel = exponent == e
        ranks = rng.choice(len(uniq), size=int(sel.sum()), p=_zipf_p(len(uniq), e))
        out_key[sel] = rank_to_key[ranks]
    # j-th use of key k takes the pool's (j mod count_k)-th tweet of k, in pool order.
    by_key = np.argsort(key_idx, kind="stable")
    key_start = np.concatenate([[0], np.cumsum(key_count)[:-1]])
    out_order = np.argsort(out_key, kind="stable")
    out_start = np.searchsorted(out_key[out_order], out_key[out_order], "left")
    use = np.empty(n, dtype=np.int64)
    use[out_order] = np.arange(n) - out_start
    return by_key[key_start[out_key] + use % key_count[out_key]], time


def _snowflake(rng: np.random.Generator, ts: np.ndarray) -> np.ndarray:
    """Unique ids in Twitter's layout (ms since its epoch, 10-bit worker, 12-bit counter)."""
    ms = ts // 1000 - TWITTER_EPOCH_MS
    counter = np.arange(len(ts)) - np.searchsorted(ms, ms, "left")
    if len(ts) and counter.max() >= 4096:
        raise ValueError("tweets: more than 4096 tweets in one millisecond; lower the rate")
    worker = rng.integers(0, 1024, len(ts))
    return (ms << 22) | (worker << 12) | counter


def generate_tweets(
    n: int = 200_000,
    mode: str = "default",
    seed: int = 7,
    buckets: int = 4096,
    rate: float = DEFAULT_RATE,
) -> GeneratedTweets:
    """The ``tweets`` workload: ``n`` tweets and their first-story ground truth.

    ``buckets`` is the number of LSH keys (the FSD rule's ``buckets`` variable); it shapes
    the zipf-periodic order and ``keys``. ``rate`` is tweets per second of event time.
    """
    if n < 1:
        raise ValueError(f"tweets: n must be >= 1, got {n}")
    if mode not in MODES:
        raise ValueError(f"tweets: unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if buckets < 1:
        raise ValueError(f"tweets: buckets must be >= 1, got {buckets}")
    if not 0 < rate <= 1e6:
        raise ValueError(f"tweets: rate must be in (0, 1e6] tweets/s, got {rate}")
    rng = np.random.Generator(np.random.PCG64(seed))
    stream = _generate_stream(rng, n, rate, buckets)
    if mode == "zipf-periodic":
        rows, time = _zipf_periodic(rng, stream.keys, rate)
        story = pd.factorize(stream.story[rows])[0].astype(np.int64)  # first use = first story
        stream = _Stream(
            user=stream.user[rows],
            lang=stream.lang[rows],
            text=stream.text[rows],
            retweets=stream.retweets[rows],
            topic=stream.topic[rows],
            story=story,
            time=time,
            keys=stream.keys[rows],
        )
    ts = _to_us(stream.time)
    ids = _snowflake(rng, ts)
    columns = {
        "seq": np.arange(n, dtype=np.int64),
        "id": ids,
        "ts": ts,
        "user": stream.user,
        "lang": stream.lang,
        "text": stream.text,
        "retweets": stream.retweets,
        "topic": stream.topic,
    }
    # Explicit dtypes: pandas >= 3 would otherwise infer its string dtype for the str
    # columns, and the engine expects object columns of Python str (as read_events).
    frame = pd.DataFrame(
        {name: pd.Series(col, dtype=col.dtype, copy=False) for name, col in columns.items()},
        copy=False,
    )
    # Stories are numbered by first appearance: a row starts one when its number
    # exceeds every number before it.
    seen = np.maximum.accumulate(np.concatenate([[-1], stream.story[:-1]]))
    first_rows = np.flatnonzero(stream.story > seen)
    return GeneratedTweets(
        frame=frame, first_story_ids=ids[first_rows], story_of=stream.story, keys=stream.keys
    )


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

_SPEC_TYPES: dict[str, type] = {"n": int, "mode": str, "seed": int, "buckets": int, "rate": float}


def parse_spec(spec: str) -> dict[str, Any]:
    """Keyword arguments of :func:`generate_tweets` from an input spec.

    ``tweets`` → ``{}`` (all defaults); ``tweets:n=2950000,mode=zipf-periodic,seed=7`` →
    ``{"n": 2950000, "mode": "zipf-periodic", "seed": 7}``. Only keys that are given are
    returned, so a caller can tell an explicit ``buckets`` from the default. Keys: ``n``,
    ``mode``, ``seed``, ``buckets`` (ints except ``mode``) and ``rate`` (tweets per
    second of event time, a number). Anything else is a ``ValueError`` naming the problem.
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
