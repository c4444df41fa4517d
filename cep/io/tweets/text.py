"""Tweet texts of the ``tweets`` workload: story seeds, paraphrases, rendering, LSH keys.

Part of :mod:`cep.io.tweets` (its docstring describes the texts). Story attributes come
from :func:`cep.io.tweets.world.hash_uniform` of the story's number, so any range can
write any story's seed text; per-row variation comes from the block's own generator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cep.engine.text import SEED as LSH_SEED
from cep.engine.text import _splitmix64
from cep.io.tweets.render import CAPITALISE, KEEP, UPPER, render_bytes
from cep.io.tweets.world import FILLER_RANKS, LANG_P, LANGS, TOPICS, World, hash_uniform, zipf_p

SEED_LEN = (8, 20)  # words in a story's seed text, inclusive
TOPIC_ZIPF = 1.0  # topic popularity
P_TOPIC_WORD = 0.0  # a story's seed text carries its topic's word
P_RETWEET = 0.2

# Text layout: one token slot per column; -1 = empty.
_W_RT, _W_MENTION, _W_BODY, _W_FILLER, _W_TAG = 0, 1, 2, 2 + SEED_LEN[1], 4 + SEED_LEN[1]
_WIDTH = _W_TAG + 1
# Token styles: how a token is written, as (prefix, suffix, case of its letters). None
# changes the token under the engine's [a-z0-9]+ lower-cased tokenisation, so the text's
# tokens are exactly the slot tokens.
_STYLES = (
    ("", "", KEEP),  # _PLAIN
    ("", "", CAPITALISE),  # _CAP
    ("#", "", KEEP),  # _HASH
    ("@", "", KEEP),  # _MENTION
    ("@", ":", KEEP),  # _MENTION_COLON
    ("", ",", KEEP),  # _COMMA
    ("", "", UPPER),  # _UPPER
)
_PLAIN, _CAP, _HASH, _MENTION, _MENTION_COLON, _COMMA, _UPPER = range(len(_STYLES))
_ENDS = (" ", "", "!", "?", "...")  # what follows a token: 0 = more follow, else the end
_END_P = (0.6, 0.2, 0.1, 0.1)  # probabilities of ends 1..4 after a tweet's last token

# hash_uniform fields of a story's attributes (slot k of the seed text is _F_WORD + k).
_F_LANG, _F_TOPIC, _F_AUTHOR, _F_LEN, _F_TAG, _F_WORD = range(6)


@dataclass
class Stories:
    """Attributes of some stories (row ``i`` = the ``i``-th requested story number)."""

    lang: np.ndarray
    topic: np.ndarray
    author: np.ndarray
    length: np.ndarray
    seed_tok: np.ndarray  # (story, SEED_LEN[1]) word tokens, -1 past the length
    tag: np.ndarray  # hashtag word: one of the seed words, a hot word for trends
    trend: np.ndarray  # trending stories carry their hashtag in every tweet


def stories(w: World, seed: int, gid: np.ndarray, trend: np.ndarray) -> Stories:
    """The attributes of the stories numbered ``gid``: a function of the number alone.

    ``trend[i]`` is story ``i``'s hashtag among ``w.hot_words`` if it trends, else -1.
    """
    m = len(gid)
    lang = np.searchsorted(np.cumsum(LANG_P), hash_uniform(seed, gid, _F_LANG), "right")
    lang = np.minimum(lang, len(LANGS) - 1)
    topic_cdf = np.cumsum(zipf_p(len(TOPICS), TOPIC_ZIPF))
    topic = np.minimum(
        np.searchsorted(topic_cdf, hash_uniform(seed, gid, _F_TOPIC), "right"), len(TOPICS) - 1
    )
    author = w.users(hash_uniform(seed, gid, _F_AUTHOR))
    span = SEED_LEN[1] - SEED_LEN[0] + 1
    length = SEED_LEN[0] + (hash_uniform(seed, gid, _F_LEN) * span).astype(np.int64)
    u = np.stack([hash_uniform(seed, gid, _F_WORD + k) for k in range(SEED_LEN[1])], axis=1)
    seed_tok = w.words(u.ravel(), np.repeat(lang, SEED_LEN[1])).reshape(m, SEED_LEN[1])
    seed_tok[np.arange(SEED_LEN[1])[None, :] >= length[:, None]] = -1
    tag = seed_tok[np.arange(m), (hash_uniform(seed, gid, _F_TAG) * length).astype(np.int64)]
    is_trend = trend >= 0
    tag[is_trend] = w.hot_words[trend[is_trend]]
    return Stories(lang, topic, author, length, seed_tok.astype(np.int32), tag, is_trend)


class Renderer:
    """Turns token-slot matrices into tweet strings without a Python loop per tweet: the
    compiled :func:`~cep.io.tweets.render.render_bytes` writes a block's UTF-8 bytes and
    Arrow makes the strings. Holds the world's tokens, styles and end marks as bytes."""

    def __init__(self, tokens: np.ndarray) -> None:
        self.tokens = _packed([t.encode("ascii") for t in tokens.tolist()])
        self.prefixes = _packed([p.encode() for p, _, _ in _STYLES])
        self.suffixes = _packed([s.encode() for _, s, _ in _STYLES])
        self.case = np.array([c for _, _, c in _STYLES], dtype=np.int64)
        self.ends = _packed([e.encode() for e in _ENDS])

    def render(self, tok: np.ndarray, style: np.ndarray, last_end: np.ndarray) -> np.ndarray:
        """Texts of rows of ``tok`` (-1 = empty slot; rows are non-empty), an object array
        of ``str``; ``last_end`` picks each row's end mark."""
        prefix_bytes, prefix_offsets = self.prefixes
        suffix_bytes, suffix_offsets = self.suffixes
        style_bytes = np.concatenate([prefix_bytes, suffix_bytes])
        data, offsets = render_bytes(
            np.ascontiguousarray(tok), np.ascontiguousarray(style),
            np.asarray(last_end, dtype=np.int64), *self.tokens, style_bytes, prefix_offsets,
            suffix_offsets + len(prefix_bytes), self.case, *self.ends)
        texts = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets),
                                                 pa.py_buffer(data))
        return texts.to_numpy(zero_copy_only=False)


def _packed(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Byte strings as one uint8 array and int64 offsets (item ``i`` is
    ``data[offsets[i]:offsets[i+1]]``)."""
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in items], out=offsets[1:])
    return np.frombuffer(b"".join(items), dtype=np.uint8).copy(), offsets


def slot_keys(w: World, tok: np.ndarray, buckets: int) -> np.ndarray:
    """``lsh_bucket(text, buckets)`` of texts given by their token slots, without text.

    The bucket hashes the token set's two MinHash minima, and each minimum is the least
    of its tokens' own values: a per-row ``min`` over the slots' precomputed values.
    """
    tp = np.where(tok >= 0, tok, len(w.tokens))
    v0 = w.minima[0][tp].min(axis=1).astype(np.uint64)
    v1 = w.minima[1][tp].min(axis=1).astype(np.uint64)
    h = _splitmix64(_splitmix64(np.uint64(LSH_SEED) ^ v0) ^ v1)
    return (h % np.uint64(buckets)).astype(np.int64)


def tweet_slots(
    rng: np.random.Generator, w: World, st: Stories, story: np.ndarray, is_seed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token slots, styles and endings of a block of tweets (see tweets' "Paraphrase").

    ``story`` indexes ``st``; ``is_seed`` marks the rows that are their story's seed text.
    """
    c = len(story)
    rows = np.arange(c)
    lang = st.lang[story]
    length = st.length[story]
    tok = np.full((c, _WIDTH), -1, dtype=np.int32)
    style = np.full((c, _WIDTH), _PLAIN, dtype=np.int8)
    body = st.seed_tok[story]
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
    n_repl = int(repl.sum())
    body[prow[repl], pos[repl]] = w.words(rng.random(n_repl), lang[prow[repl]])
    body[prow[drop], pos[drop]] = -1
    tok[:, _W_BODY : _W_BODY + SEED_LEN[1]] = body

    n_fill = rng.choice(3, size=c, p=[0.5, 0.3, 0.2]) * para
    fill = w.lang_words[lang[:, None], rng.integers(0, FILLER_RANKS, (c, 2))]
    fill[np.arange(2)[None, :] >= n_fill[:, None]] = -1
    tok[:, _W_FILLER : _W_FILLER + 2] = fill

    mention = para & (rng.random(c) < 0.15)
    tok[mention, _W_MENTION] = w.handle_token(w.users(rng.random(int(mention.sum()))))
    style[mention, _W_MENTION] = _MENTION
    tok[retweet, _W_RT] = w.rt_token
    style[retweet, _W_RT] = _UPPER
    tok[retweet, _W_MENTION] = w.handle_token(st.author[story[retweet]])
    style[retweet, _W_MENTION] = _MENTION_COLON

    tag = (rng.random(c) < 0.3) | st.trend[story]
    tok[tag, _W_TAG] = st.tag[story[tag]]
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
