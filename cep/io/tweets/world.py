"""What a seed fixes before any tweet is written: vocabulary, users, topic words, MinHash.

Part of the ``tweets`` workload (see :mod:`cep.io.tweets` for the whole design). A
:class:`World` depends only on ``(seed, n_users)``, so it is built once per process and
cached: every range of a stream, in any executor, sees the same words and handles. It
also carries the random-access draws (:func:`hash_uniform`) that story attributes use,
because a range must derive the attributes of any story from its number alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cep.engine import text
from cep.engine.text import _splitmix64, minhash_kernel, minhash_signatures, token_kernel
from cep.io.tweets.world_cache import cached_arrays

VOCAB_SIZE = 8000
WORD_ZIPF = 0.8
LANGS = ("en", "es", "fr", "pt", "de")
LANG_P = (0.72, 0.10, 0.07, 0.06, 0.05)
TOPICS = (
    "politics", "sports", "music", "entertainment", "tech", "business", "science",
    "health", "weather", "gaming", "travel", "food", "fashion", "education", "crime",
    "local",
)  # fmt: skip
FILLER_RANKS = 30  # filler words are the language's 30 most frequent words
HOT_WORDS = 4  # trending hashtags cycle through this many words
_U64 = np.uint64


def zipf_p(k: int, s: float) -> np.ndarray:
    """Probabilities of ranks 1..k under a Zipf law of exponent ``s``."""
    w = np.arange(1, k + 1, dtype=np.float64) ** -s
    return w / w.sum()


def power_ranks(u: np.ndarray, k: int, s: float) -> np.ndarray:
    """Ranks in ``[0, k)`` from the power law ``x**-s`` on ``[1, k + 1)``, floored.

    A Zipf-like law sampled by inverting its CDF in closed form at the uniforms ``u``:
    ~10x faster than ``Generator.choice(p=...)`` (a binary search per draw), and usable
    with the random-access uniforms of :func:`hash_uniform`.
    """
    if s == 1.0:
        x = np.exp(u * np.log(k + 1.0))
    else:
        x = (1.0 + u * ((k + 1.0) ** (1.0 - s) - 1.0)) ** (1.0 / (1.0 - s))
    return np.minimum(x.astype(np.int64) - 1, k - 1)


def hash_uniform(seed: int, keys: np.ndarray, field: int) -> np.ndarray:
    """Uniforms in [0, 1) that depend only on ``(seed, key, field)``: random access.

    Counter-based (three rounds of the splitmix64 finaliser the LSH key uses), so a
    range can draw the attributes of story ``k`` without drawing those before it.
    """
    base = np.array([seed], dtype=_U64) * _U64(0x9E3779B97F4A7C15) + _U64(field)
    h = _splitmix64(_splitmix64(base) ^ np.asarray(keys, dtype=np.int64).astype(_U64))
    return (_splitmix64(h) >> _U64(11)).astype(np.float64) * 2.0**-53


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


@dataclass
class World:
    """Everything fixed by the seed before tweets are written."""

    vocab: np.ndarray
    lang_words: np.ndarray  # (language, rank) -> word token id
    handles: np.ndarray
    tokens: np.ndarray  # token id -> string: words, then handles, then "rt"
    minima: tuple[np.ndarray, np.ndarray]  # each token's two MinHash values (int64), padded
    hot_words: np.ndarray  # trending hashtags: words of low MinHash values (tweets' "Key skew")

    @property
    def rt_token(self) -> int:
        """Token id of "rt" (rendered "RT" in retweets)."""
        return len(self.tokens) - 1

    def handle_token(self, user: np.ndarray) -> np.ndarray:
        """Token ids of users' handles (mentions)."""
        return len(self.vocab) + user

    def words(self, u: np.ndarray, lang: np.ndarray) -> np.ndarray:
        """One Zipf-drawn word token per uniform in ``u`` and language index in ``lang``."""
        return self.lang_words[lang, power_ranks(u, VOCAB_SIZE, WORD_ZIPF)]

    def users(self, u: np.ndarray) -> np.ndarray:
        """Users drawn by activity (Zipf, exponent 1) at the uniforms ``u``."""
        return power_ranks(u, len(self.handles), 1.0)


def n_users(n: int) -> int:
    """Users of a stream of ``n`` tweets: one per ten tweets, 1,000 to 200,000."""
    return int(np.clip(n // 10, 1000, 200_000))


@functools.lru_cache(maxsize=4)
def world(seed: int, users: int) -> World:
    """The world of a seed (cached: ranges of one stream in one process share it, and
    processes share it through the user's cache, :mod:`cep.io.tweets.world_cache`)."""
    arrays = cached_arrays("tweets-world-", f"{seed}-{users}", _BUILT_FROM,
                           lambda: _arrays(build_world(seed, users)),
                           lambda found: _fits(found, users))
    return World(vocab=arrays["vocab"], lang_words=arrays["lang_words"],
                 handles=arrays["handles"], tokens=_tokens(arrays["vocab"], arrays["handles"]),
                 minima=(arrays["minima_0"], arrays["minima_1"]),
                 hot_words=arrays["hot_words"])


# what a world is built from: a change to any of these makes a new cache file
_BUILT_FROM = [Path(__file__), Path(text.__file__), Path(minhash_kernel.__file__),
               Path(token_kernel.__file__)]


def _tokens(vocab: np.ndarray, handles: np.ndarray) -> np.ndarray:
    """Token id -> string: the words, then the handles, then "rt"."""
    return np.concatenate([vocab, handles, np.array(["rt"], dtype=object)])


def _arrays(built: World) -> dict[str, np.ndarray]:
    return {"vocab": built.vocab, "lang_words": built.lang_words, "handles": built.handles,
            "minima_0": built.minima[0], "minima_1": built.minima[1],
            "hot_words": built.hot_words}


def _fits(arrays: dict[str, np.ndarray], users: int) -> bool:
    """The shapes and kinds a world of ``users`` users has (a cache file that does not
    is not used)."""
    tokens = VOCAB_SIZE + users + 1
    expected = {"vocab": ((VOCAB_SIZE,), "O"), "lang_words": ((len(LANGS), VOCAB_SIZE), "i"),
                "handles": ((users,), "O"), "minima_0": ((tokens + 1,), "i"),
                "minima_1": ((tokens + 1,), "i"), "hot_words": ((HOT_WORDS,), "i")}
    return set(arrays) == set(expected) and all(
        arrays[k].shape == shape and arrays[k].dtype.kind == kind
        for k, (shape, kind) in expected.items())


def build_world(seed: int, users: int) -> World:
    """The world of a seed, built (what :func:`world` caches)."""
    rng = np.random.Generator(np.random.PCG64([seed, 0x574F524C44]))
    vocab = _vocabulary(rng, VOCAB_SIZE)
    # Other languages rank the same words in their own order, still mostly short first
    # (sorted by length plus noise) so that their frequent words stay short.
    length = np.fromiter(map(len, vocab), dtype=np.float64, count=VOCAB_SIZE)
    lang_words = np.stack(
        [np.arange(VOCAB_SIZE)]
        + [np.argsort(length + rng.uniform(0.0, 4.0, VOCAB_SIZE)) for _ in LANGS[1:]]
    )
    handles = _handles(rng, vocab, users)
    tokens = _tokens(vocab, handles)
    m0, m1 = minhash_signatures(tokens, 2).astype(np.int64).T
    pad = np.int64(2**32)  # above every 32-bit min-value: empty slots never win
    # Hot words: the words whose two MinHash values are both lowest (fillers excluded),
    # best first; see tweets' "Key skew" for why.
    worst = np.maximum(m0[: len(vocab)], m1[: len(vocab)]).astype(np.float64)
    worst[np.unique(lang_words[:, :FILLER_RANKS])] = np.inf
    return World(
        vocab=vocab,
        lang_words=lang_words,
        handles=handles,
        tokens=tokens,
        minima=(np.append(m0, pad), np.append(m1, pad)),
        hot_words=np.argsort(worst, kind="stable")[:HOT_WORDS],
    )
