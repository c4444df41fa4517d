"""Text UDFs: ``similarity`` (cosine of term counts) and ``lsh_bucket`` (MinHash LSH key).

This package is First Story Detection's text machinery, kept apart from the engine core:
the functions below, and the numba kernels they call (``token_kernel``, ``cosine_kernel``,
``minhash_kernel``). The engine imports it only when a rule calls a text function
(``cep.engine.functions.text_module``), because numba and scipy cost every process that
loads them about 0.2 s.

Both exist for First Story Detection: ``lsh_bucket`` turns a tweet into the partition key
so that near-duplicates meet in one engine, and ``similarity`` is compared against τ over
the key's window. Everything here is vectorised over numpy object arrays of ``str`` and
deterministic across processes and machines (no use of Python's randomised ``hash()``),
because keys and window state move between Spark executors.

Tokenisation
    A text's tokens are its maximal runs of ASCII letters and digits, lower-cased.
    Punctuation, emoji, ``#``/``@`` sigils and every non-ASCII character are separators
    (``"Café #1"`` → ``["caf", "1"]``; the Kelvin sign and ``İ``, which Unicode lower-cases
    to ASCII letters, are separators too). Simple, the same in every process, and cheap
    to compute on a whole batch's UTF-8 bytes at once (:func:`_tokenised`, with the
    compiled :mod:`cep.engine.text.token_kernel`); a multilingual tokeniser would be a
    deliberate change of the definition, not a tweak.

Representation: hashed term counts
    A token's 64-bit hash is the first 8 bytes of its BLAKE2b digest (little-endian). Its
    column is ``hash64 % (2**31 - 1)`` (:data:`N_FEATURES`), its 32-bit MinHash input is
    ``hash64 >> 32``. Hashing rather than an exact ``token → id`` dictionary because the
    ids must agree between engines in different processes without sharing a growing
    vocabulary, and a key's window state must stay valid after it migrates. With 2**31-1
    columns a vocabulary of 10**6 distinct tokens has ~233 colliding token pairs among
    ~5·10**11 (measured in ``tests/engine/test_text.py``); two 15-token tweets are
    affected only if one of the ≤225 cross pairs collides (p ≲ 1e-7 per pair), and then
    only by one term. ``similarity()`` uses the same hashed vectors, so the scalar path and
    the window fast path agree exactly with each other; they differ from an exact
    vocabulary only on such collisions.

Why raw counts and not L2-normalised rows
    :func:`tokenize_batch` returns *integer* term counts (stored as float64). Every dot
    product and squared norm is then an exact integer whatever the summation order
    (scipy's sparse product, a row-wise ``multiply().sum()``, a future BLAS), and the
    cosine is the single IEEE expression ``dot / sqrt(n2a * n2b)``, evaluated by
    :func:`_cosine` and by the compiled window kernel (:mod:`cep.engine.text.cosine_kernel`).
    That is what makes ``similarity()`` and :func:`max_similarity_in_segments`
    bit-identical by construction instead of by luck.

Cosine
    ``cos(a, b) = dot(ca, cb) / sqrt(|ca|² · |cb|²)`` over term-count vectors; 0.0 when
    either text has no tokens (so two empty texts → 0.0). ``"a a b"`` vs ``"a b b"`` = 0.8.

LSH bucket
    The MinHash of the token *set* with datasketch's ``affine32`` scheme, ``num_perm=16``,
    ``seed=7`` and the 32-bit token hash above (identical values to
    ``datasketch.MinHash(16, seed=7, scheme="affine32")`` with that hash as ``hashfunc``,
    pinned by a test), computed for a whole batch by a compiled loop
    (:mod:`cep.engine.text.minhash_kernel`) instead of one MinHash object per text.
    The bucket uses the first band, :data:`BAND_ROWS` = 2 min-values ``v0, v1``:
    ``h = splitmix64(splitmix64(7 ^ v0) ^ v1)`` in wrapping uint64 arithmetic, bucket =
    ``h mod n``. Two texts with Jaccard similarity ``s`` share the band with probability
    ``s**2`` (0.64 at s = 0.8, 0.25 at s = 0.5); unrelated texts share a bucket with
    probability 1/n plus the chance that their two minimum tokens agree, which frequent
    words make real (measured 0.2-0.3% at n = 4096 on Zipf-distributed words, vs 76-78%
    for near-duplicates with one of 15 words changed). One row would raise recall (0.86
    there) but makes the bucket the single minimum token, so stop words form giant keys
    (largest bucket 9.9% of the tweets vs 3.7% with two rows); three rows cuts that to
    0.7% but keeps 15-37% fewer near-duplicates (1-3 of 15 words changed). Texts without
    tokens get the bucket of the empty set (all min-values ``2**32 - 1``), the same
    constant everywhere.

Speed (``bench/bench_text.py``, 15-word tweets, one core of a 2-core machine shared with
other jobs at a load of about 5, so ±30%)
    ``lsh_bucket`` 132k texts/s with a cold token cache, 603k warm (numpy before the
    compiled kernels, same session: 115k / 381k); ``similarity`` 103k pairs/s in the join
    shape (1 text vs a 500-text window, re-tokenised on every call), 146k element-wise;
    :func:`max_similarity_in_segments` 15M pairs/s without a cap (30k new events/s at
    H = 500, tokenising included; 6M and 12k before). With FSD's cap, a tweet of a big
    story stops at its first similar tweet, which is where most of its time went.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from hashlib import blake2b

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp

from cep.engine.text.cosine_kernel import sweep_max_cosine
from cep.engine.text.minhash_kernel import minhash_minima
from cep.engine.text.token_kernel import TOKEN_BYTES, scan_tokens, squared_counts

N_FEATURES = 2**31 - 1  # column space of the hashed term vectors; fits int32 indices
NUM_PERM = 16
SEED = 7
BAND_ROWS = 2

_U64 = np.uint64


@functools.cache
def _permutations() -> tuple[np.ndarray, np.ndarray]:
    """datasketch's permutations for (num_perm=16, seed=7, affine32), from the same seeded
    RandomState datasketch uses, so the values equal a real MinHash's. Imported on first
    use: datasketch takes ~0.4 s to import and most rules never hash text."""
    from datasketch import MinHash

    a, b = MinHash(num_perm=NUM_PERM, seed=SEED, scheme="affine32").permutations
    return np.asarray(a, dtype=np.uint32), np.asarray(b, dtype=np.uint32)

# token (lower-cased UTF-8) -> 64-bit hash. A cache of a pure function (so it cannot
# change results); bounded so a long run over an open vocabulary does not grow without limit.
_HASH_CACHE: dict[bytes, int] = {}
_HASH_CACHE_MAX = 1 << 21


def _hash_tokens(flat: list[bytes]) -> np.ndarray:
    """64-bit hashes (the first 8 bytes of BLAKE2b, little-endian) of distinct lower-cased
    tokens given as UTF-8 bytes, as uint64, through the cache."""
    if len(_HASH_CACHE) > _HASH_CACHE_MAX:
        _HASH_CACHE.clear()
    cache = _HASH_CACHE
    out = np.empty(len(flat), dtype=_U64)
    for i, tok in enumerate(flat):
        value = cache.get(tok)
        if value is None:
            value = cache[tok] = int.from_bytes(blake2b(tok, digest_size=8).digest(), "little")
        out[i] = value
    return out


def _as_text_array(texts: Iterable[str] | np.ndarray) -> np.ndarray:
    """A 1-D object array of ``str`` (accepts lists, object arrays, pandas/arrow arrays)."""
    arr = np.asarray(texts, dtype=object)
    return arr.reshape(-1) if arr.ndim == 0 else arr


def _tokenised(texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens per text, uint64 hash of every token in text order) for a whole batch.

    Works on the batch's UTF-8 bytes in one Arrow buffer instead of a regex per text: the
    compiled :func:`~cep.engine.text.token_kernel.scan_tokens` finds the tokens (maximal runs
    of ASCII letters and digits inside one text; bytes of multi-byte characters never
    are such) and numbers the distinct ones, so only those are hashed.
    """
    column = pa.array(texts, type=pa.large_string())
    n = len(column)
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[column.offset:column.offset + n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else \
        np.zeros(0, dtype=np.uint8)
    lengths, ids, first, size = scan_tokens(data, offsets, TOKEN_BYTES)
    distinct = [data[a:a + k].tobytes().lower() for a, k in zip(first.tolist(), size.tolist(),
                                                                 strict=True)]
    return lengths, _hash_tokens(distinct)[ids]


# ---------------------------------------------------------------- term vectors


def tokenize_batch(texts: Iterable[str] | np.ndarray) -> sp.csr_matrix:
    """Hashed term-count vectors, one CSR row per text, shape ``(n, N_FEATURES)``.

    Values are integer counts stored as float64 (exact below 2**53), indices int32 and
    sorted. Not normalised, on purpose: see the module docstring. Do not multiply two of
    these directly (``A @ B.T`` would allocate ``N_FEATURES`` index pointers); use
    :func:`max_similarity_in_segments` or :func:`similarity`.
    """
    arr = _as_text_array(texts)
    n = len(arr)
    lengths, hashes = _tokenised(arr)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    cols = (hashes % _U64(N_FEATURES)).astype(np.int64)
    keys, counts = np.unique(rows * N_FEATURES + cols, return_counts=True)
    key_rows = keys // N_FEATURES
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key_rows, minlength=n), out=indptr[1:])
    return sp.csr_matrix(
        (
            counts.astype(np.float64),
            (keys % N_FEATURES).astype(np.int32),
            indptr.astype(np.int32),
        ),
        shape=(n, N_FEATURES),
    )


def squared_norms(m: sp.csr_matrix) -> np.ndarray:
    """``|row|²`` of every row; exact for integer counts, whatever the storage order."""
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    return np.bincount(rows, weights=m.data * m.data, minlength=m.shape[0])


def _cosine(dot: np.ndarray, n2a: np.ndarray, n2b: np.ndarray) -> np.ndarray:
    """The one cosine expression both paths use: ``dot / sqrt(n2a * n2b)``, 0 if empty."""
    den = np.sqrt(n2a * n2b)
    out = np.zeros(np.shape(dot), dtype=np.float64)
    np.divide(dot, den, out=out, where=den > 0)
    return out


def similarity(a: np.ndarray | str, b: np.ndarray | str) -> np.ndarray:
    """Element-wise cosine similarity of texts ``a[i]`` and ``b[i]`` (float64 array).

    Either argument may be a plain ``str`` (a constant), broadcast against the other.
    Distinct texts are tokenised once per call: the join ``similarity(LE.text, TW.text)``
    repeats ``LE.text`` across a whole window.
    """
    a_arr, b_arr = _as_text_array(a), _as_text_array(b)
    n = max(len(a_arr), len(b_arr))
    if len(a_arr) == 1 and n > 1:
        a_arr = np.repeat(a_arr, n)
    if len(b_arr) == 1 and n > 1:
        b_arr = np.repeat(b_arr, n)
    if len(a_arr) != len(b_arr):
        raise ValueError(f"similarity: length mismatch {len(a_arr)} vs {len(b_arr)}")
    codes, uniques = pd.factorize(np.concatenate([a_arr, b_arr]))
    m = tokenize_batch(np.asarray(uniques, dtype=object))
    n2 = squared_norms(m)
    ia, ib = codes[:n], codes[n:]
    dot = np.asarray(m[ia].multiply(m[ib]).sum(axis=1), dtype=np.float64).reshape(-1)
    return _cosine(dot, n2[ia], n2[ib])


def term_rows(texts: Iterable[str | None] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each text's term columns and squared norm, the form a window keeps per row.

    Returns ``(terms, norm2)``: ``terms[i]`` is a ``bytes`` of the text's hashed term
    columns (``uint32``, one per token occurrence, repeats kept) and ``norm2[i]`` its
    ``|count vector|²`` (NaN for a NULL text). A window stores these instead of
    re-tokenising its rows every batch; the dot product of two such rows is the same
    integer as that of their count vectors (the product is bilinear, so repeated columns
    add up), which keeps :func:`max_similarity_in_segments` bit-identical to
    :func:`similarity`.
    """
    arr = _as_text_array(texts)
    null = pd.isna(arr)
    lengths, hashes = _tokenised(np.where(null, "", arr))
    cols = (hashes % _U64(N_FEATURES)).astype(np.uint32)
    norm2 = squared_counts(cols, lengths)
    norm2[null] = np.nan
    ends = np.cumsum(lengths) * 4
    buffer = cols.tobytes()
    terms = np.empty(len(arr), dtype=object)
    terms[:] = [buffer[a:b] for a, b in zip((ends - lengths * 4).tolist(), ends.tolist(),
                                           strict=True)]
    return terms, norm2


def _flat_terms(terms: np.ndarray, wanted: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The packed term columns of ``terms`` as one uint32 array and row offsets into it.

    With a boolean ``wanted``, every row keeps its place but only wanted rows carry their
    terms (the others are empty), so a kernel can index rows by their position without
    the whole window being copied."""
    picked = terms if wanted is None else terms[wanted]
    lengths = np.fromiter(map(len, picked), dtype=np.int64, count=len(picked)) // 4
    if wanted is not None:
        placed = np.zeros(len(terms), dtype=np.int64)
        placed[wanted] = lengths
        lengths = placed
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(b"".join(picked), dtype=np.uint32), offsets


def _by_key(group: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Queries in (key, segment end descending) order, and where each key's run starts
    (with the end appended): the order the sweep kernel reads them in."""
    order = np.lexsort((-hi, group))
    g = group[order]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    return order, np.append(starts, len(g))


def _covered(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """Rows ``[0, n)`` inside at least one segment ``[lo[i], hi[i])``."""
    edges = np.zeros(n + 1, dtype=np.int64)
    np.add.at(edges, lo, 1)
    np.add.at(edges, hi, -1)
    return np.cumsum(edges[:-1]) > 0


def max_similarity_in_segments(queries: tuple[np.ndarray, np.ndarray], query_group: np.ndarray,
                               rows: tuple[np.ndarray, np.ndarray], lo: np.ndarray,
                               hi: np.ndarray, cap: float = np.inf) -> np.ndarray:
    """For each query ``i``, its maximum cosine against ``rows[lo[i]:hi[i]]``.

    ``queries`` and ``rows`` are :func:`term_rows` results; ``query_group`` the queries'
    keys as integer codes (a query's segment lies inside its own key's rows). NaN where
    the query's text is NULL or its segment holds no non-NULL row (SQL ``MAX`` over no
    values); otherwise ``≥ 0`` and bit-identical to :func:`similarity`, except that a
    value above ``cap`` only says the maximum is above ``cap`` (the caller's HAVING
    drops those; see :mod:`cep.engine.text.cosine_kernel`).

    The vectorised form of ``max(similarity(LE.text, TW.text))`` over a ``#lastevent``
    join, for all keys of a batch at once: the compiled sweep
    (:func:`cep.engine.text.cosine_kernel.sweep_max_cosine`) reads only rows some query's
    segment covers, each against the queries that see it.
    """
    q_terms, q_norm2 = queries
    r_terms, r_norm2 = rows
    valid_rows = np.concatenate(([0], np.cumsum(~np.isnan(r_norm2))))
    seen = (valid_rows[hi] - valid_rows[lo] > 0) & ~np.isnan(q_norm2)
    out = np.where(seen, 0.0, np.nan)
    if not seen.any():
        return out
    seen_index = np.flatnonzero(seen)
    order, starts = _by_key(query_group[seen], hi[seen])
    active = seen_index[order]
    q_flat, q_offsets = _flat_terms(q_terms[active])
    r_flat, r_offsets = _flat_terms(r_terms, _covered(lo[active], hi[active], len(r_terms)))
    best = out[active]
    sweep_max_cosine(q_flat, q_offsets, q_norm2[active].astype(np.float64),
                     lo[active].astype(np.int64), hi[active].astype(np.int64), starts,
                     r_flat, r_offsets, r_norm2.astype(np.float64), float(cap), best)
    out[active] = best
    return out


# ---------------------------------------------------------------- MinHash LSH


def _splitmix64(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a fixed avalanching bijection on uint64 (wraps)."""
    h = (h ^ (h >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> _U64(27))) * _U64(0x94D049BB133111EB)
    return h ^ (h >> _U64(31))


def minhash_signatures(texts: Iterable[str] | np.ndarray, num_perm: int = NUM_PERM) -> np.ndarray:
    """The first ``num_perm`` (≤ 16) MinHash values of each text's token set, uint32 (n, k).

    Equal to ``MinHash(16, seed=7, scheme="affine32")``'s ``hashvalues[:num_perm]`` for
    the text's tokens with the 32-bit token hash (the high half of the 64-bit one) as
    ``hashfunc``, computed for all texts at once.
    """
    if not 1 <= num_perm <= NUM_PERM:
        raise ValueError(f"num_perm must be in [1, {NUM_PERM}]")
    lengths, hashes = _tokenised(_as_text_array(texts))
    perm_a, perm_b = _permutations()
    return minhash_minima(hashes, lengths, perm_a[:num_perm], perm_b[:num_perm])


def lsh_bucket(texts: np.ndarray | str, n: int | np.ndarray) -> np.ndarray:
    """MinHash LSH bucket of each text in ``[0, n)``, int64 (see the module docstring).

    ``n`` is a constant (``ValueError`` if < 1) or an array aligned with ``texts``; array
    entries < 1 (e.g. the placeholder behind a NULL, which the caller masks out) are
    treated as 1 so one bad slot cannot fail a whole batch.
    """
    sig = minhash_signatures(texts, BAND_ROWS).astype(_U64)
    h = _U64(SEED)
    for k in range(BAND_ROWS):
        h = _splitmix64(h ^ sig[:, k])
    if np.ndim(n) == 0:
        if int(n) < 1:
            raise ValueError(f"lsh_bucket: n must be >= 1, got {n}")
        mod = _U64(int(n))
    else:
        mod = np.maximum(np.asarray(n, dtype=np.int64), 1).astype(_U64)
    return (h % mod).astype(np.int64)
