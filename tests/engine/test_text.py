"""Text UDFs (cep.engine.text): similarity, the window fast path, MinHash LSH buckets."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from hashlib import blake2b

import numpy as np
import pytest
import scipy.sparse as sp
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine import text
from cep.engine.text import (
    N_FEATURES,
    lsh_bucket,
    minhash_signatures,
    similarity,
    tokenize_batch,
)


def arr(*texts: str) -> np.ndarray:
    return np.array(texts, dtype=object)


def tokens(s: str) -> list[str]:
    """The definition of a text's tokens (cep.engine.text's docstring), one text at a time:
    the maximal runs of ASCII letters and digits, lower-cased."""
    return [token.lower() for token in re.findall(r"[A-Za-z0-9]+", s)]


def token_hash64(token: str) -> int:
    """The definition of a token's hash: the first 8 bytes of BLAKE2b, little-endian."""
    return int.from_bytes(blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")


def token_hashes(s: str) -> list[int]:
    """What the batch tokeniser makes of one text: its tokens' hashes, in text order."""
    lengths, hashes = text._tokenised(arr(s))
    assert lengths.tolist() == [len(hashes)]
    return hashes.tolist()


def corpus(n: int, seed: int, vocab: int = 2000, dup_rate: float = 0.5) -> np.ndarray:
    """Synthetic 15-word tweets (Zipf words), about ``dup_rate`` of them near-copies of an
    earlier one (one word changed)."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(vocab)], dtype=object)
    weights = 1.0 / np.arange(1, vocab + 1)
    fresh = words[rng.choice(vocab, size=(n, 15), p=weights / weights.sum())]
    out: list[str] = []
    for i in range(n):
        if out and rng.random() < dup_rate:
            toks = out[rng.integers(len(out))].split()
            toks[rng.integers(len(toks))] = words[rng.integers(vocab)]
        else:
            toks = list(fresh[i])
        out.append(" ".join(toks))
    return np.array(out, dtype=object)


def mutate(t: str, k: int, rng: np.random.Generator) -> str:
    toks = t.split()
    for i in rng.choice(len(toks), k, replace=False):
        toks[i] = f"x{rng.integers(10**9)}"
    return " ".join(toks)


# ---------------------------------------------------------------- similarity


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("the cat sat", "the cat sat", 1.0),
        ("the cat sat", "dogs run fast", 0.0),
        ("Hello, World!", "hello world", 1.0),  # case and punctuation do not matter
        ("a a b", "a b b", 0.8),  # (2*1 + 1*2) / (sqrt(5) * sqrt(5))
        ("a b", "a c", 0.5),
        ("", "", 0.0),  # two empty texts: 0.0, not NaN
        ("", "something", 0.0),
        ("!!! ???", "...", 0.0),  # no tokens at all
        ("x1 y2", "X1 y2 z3", 2 / math.sqrt(6)),
    ],
)
def test_similarity_hand_cases(a: str, b: str, expected: float) -> None:
    got = similarity(arr(a), arr(b))
    assert got.dtype == np.float64 and got.shape == (1,)
    assert got[0] == pytest.approx(expected, abs=1e-15)


def test_similarity_exact_values() -> None:
    assert similarity(arr("a a b"), arr("a b b"))[0] == 0.8
    assert similarity(arr("same text here"), arr("SAME text, here!"))[0] == 1.0


def test_tokens_are_lowercase_ascii_alnum_runs() -> None:
    assert token_hashes("Hello, World! it's #1 café") == [
        token_hash64(t) for t in ["hello", "world", "it", "s", "1", "caf"]]
    # characters that Unicode lower-cases to ASCII letters are still separators
    assert token_hashes("İstanbul 5\u212a") == [token_hash64(t) for t in ["stanbul", "5"]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=40), max_size=12))
def test_batch_tokeniser_equals_the_definition(texts: list[str]) -> None:
    """The byte-level batch tokeniser splits every text exactly like :func:`tokens`
    (text boundaries included: a token never runs from one text into the next)."""
    lengths, hashes = text._tokenised(np.array(texts, dtype=object))
    want = [token_hash64(t) for s in texts for t in tokens(s)]
    assert lengths.tolist() == [len(tokens(s)) for s in texts]
    assert hashes.tolist() == want


def test_similarity_vectorised_equals_scalar_and_broadcasts() -> None:
    a, b = corpus(200, seed=1), corpus(200, seed=2)
    vec = similarity(a, b)
    one_by_one = np.array([similarity(arr(x), arr(y))[0] for x, y in zip(a, b, strict=True)])
    assert np.array_equal(vec, one_by_one)
    # a constant first argument is broadcast over the window
    const = similarity(a[0], b)
    assert np.array_equal(const, similarity(np.repeat(a[:1], len(b)), b))
    assert np.array_equal(similarity(b, a[0]), const)  # and it is symmetric, bit for bit
    assert similarity(arr(), arr()).shape == (0,)


def test_similarity_matches_an_exact_vocabulary() -> None:
    """Hashing changes nothing unless two tokens collide (none in this corpus)."""
    a, b = corpus(300, seed=3, vocab=5000), corpus(300, seed=4, vocab=5000)

    def exact(x: str, y: str) -> float:
        cx, cy = Counter(tokens(x)), Counter(tokens(y))
        dot = float(sum(cx[t] * cy[t] for t in cx))
        n2x = float(sum(v * v for v in cx.values()))
        n2y = float(sum(v * v for v in cy.values()))
        return float(text._cosine(np.array([dot]), np.array([n2x]), np.array([n2y]))[0])

    got = similarity(a, b)
    want = np.array([exact(x, y) for x, y in zip(a, b, strict=True)])
    assert np.array_equal(got, want)


def test_hash_collisions_are_rare(capsys: pytest.CaptureFixture[str]) -> None:
    """Column collisions among 10**6 distinct tokens ≈ V²/(2·N_FEATURES) ≈ 233 pairs."""
    vocab = 1_000_000
    hashes = text._hash_tokens([f"tok{i}".encode() for i in range(vocab)])
    cols = hashes % np.uint64(N_FEATURES)
    _, counts = np.unique(cols, return_counts=True)
    colliding_pairs = int((counts * (counts - 1) // 2).sum())
    expected = vocab * (vocab - 1) / 2 / N_FEATURES
    with capsys.disabled():
        print(
            f"\n[text] {colliding_pairs} colliding token pairs among {vocab:,} tokens "
            f"(expected {expected:.0f}, i.e. {colliding_pairs / (vocab * (vocab - 1) / 2):.1e}"
            " of all pairs)"
        )
    assert colliding_pairs < 2 * expected
    # and the 32-bit MinHash inputs are distinct for almost all tokens too
    assert len(np.unique(hashes >> np.uint64(32))) > vocab - 1000


def test_batch_tokeniser_numbers_many_distinct_tokens() -> None:
    """200k distinct tokens (the kernel's token table grows many times), mixed case and
    repeated across texts: every token's hash is its own BLAKE2b hash."""
    words = [f"Tok{i}X" if i % 3 else f"tok{i}x" for i in range(200_000)]
    texts = np.array([" ".join(words[i:i + 50]) + ", " + words[i].upper()
                      for i in range(0, len(words), 40)], dtype=object)
    lengths, hashes = text._tokenised(texts)
    flat = [t for s in texts for t in tokens(s)]
    assert lengths.tolist() == [len(tokens(s)) for s in texts]
    assert hashes.tolist() == [token_hash64(t) for t in flat]


# ---------------------------------------------------------------- term vectors


def test_tokenize_batch_counts() -> None:
    m = tokenize_batch(arr("a a b", "", "B b b c"))
    assert isinstance(m, sp.csr_matrix) and m.shape == (3, N_FEATURES)
    assert m.indices.dtype == np.int32 and m.has_sorted_indices
    assert sorted(m[0].data.tolist()) == [1.0, 2.0]
    assert m[1].nnz == 0
    assert sorted(m[2].data.tolist()) == [1.0, 3.0]
    assert text.squared_norms(m).tolist() == [5.0, 0.0, 10.0]
    assert tokenize_batch(arr()).shape == (0, N_FEATURES)


def brute_force_max(queries: np.ndarray, rows: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray) -> np.ndarray:
    """Max of similarity() over each query's segment, pair by pair (NaN if none)."""
    out = []
    for q, a, b in zip(queries, lo, hi, strict=True):
        texts = [t for t in rows[a:b] if t is not None]
        if q is None or not texts:
            out.append(np.nan)
        else:
            out.append(similarity(np.repeat(np.array([q], dtype=object), len(texts)),
                                  np.array(texts, dtype=object)).max())
    return np.array(out)


def test_term_rows_pack_columns_and_norms() -> None:
    terms, norm2 = text.term_rows(np.array(["a a b", "", None, "B b b c"], dtype=object))
    assert [len(t) // 4 for t in terms] == [3, 0, 0, 4]
    assert norm2[[0, 1, 3]].tolist() == [5.0, 0.0, 10.0] and np.isnan(norm2[2])


def test_squared_counts_short_and_long_rows() -> None:
    """Σ count² per row, direct for short rows and sorted for long ones, equals counting
    every (row, column) pair."""
    from cep.engine.text.token_kernel import SHORT_ROW, squared_counts

    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 3 * SHORT_ROW, 2000)
    cols = rng.integers(0, 25, int(lengths.sum())).astype(np.uint32)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    pairs, counts = np.unique(rows * N_FEATURES + cols, return_counts=True)
    want = np.bincount(pairs // N_FEATURES, weights=counts.astype(float) ** 2,
                       minlength=len(lengths))
    assert np.array_equal(squared_counts(cols, lengths), want)


@pytest.mark.parametrize(("keys", "rows_per_key", "queries", "seed"),
                         [(1, 0, 5, 1), (1, 40, 30, 2), (7, 60, 50, 3), (40, 30, 400, 4)])
def test_segment_kernel_is_bit_identical_to_similarity(keys, rows_per_key, queries, seed):
    """Random segments inside each query's key, NULL texts among queries and rows:
    every value equals the pair-by-pair max of similarity() exactly."""
    rng = np.random.default_rng(seed)
    rows = corpus(keys * rows_per_key, seed=seed, vocab=60).astype(object)
    rows[rng.random(len(rows)) < 0.1] = None
    query_group = rng.integers(0, keys, queries)
    start = query_group * rows_per_key
    lo = start + rng.integers(0, rows_per_key + 1, queries)
    hi = np.minimum(lo + rng.integers(0, rows_per_key + 1, queries), start + rows_per_key)
    texts = corpus(queries, seed=seed + 100, vocab=60).astype(object)
    texts[rng.random(queries) < 0.1] = None
    fast = text.max_similarity_in_segments(text.term_rows(texts), query_group,
                                           text.term_rows(rows), lo, hi)
    assert np.array_equal(fast, brute_force_max(texts, rows, lo, hi), equal_nan=True)
    assert (fast[~np.isnan(fast)] > 0).any() or rows_per_key == 0


def test_segment_kernel_hot_key_stays_exact() -> None:
    """One key with many more queries than its segment length (the Zipf 1.5 hot key),
    in any order: every value is still exact."""
    rng = np.random.default_rng(11)
    n_rows, horizon = 1200, 40
    rows = corpus(n_rows, seed=11, vocab=80).astype(object)
    rows[rng.random(n_rows) < 0.05] = None
    hi = np.sort(rng.integers(1, n_rows + 1, 900))[rng.permutation(900)]  # any order
    lo = np.maximum(0, hi - horizon)
    texts = corpus(900, seed=12, vocab=80).astype(object)
    fast = text.max_similarity_in_segments(text.term_rows(texts), np.zeros(900, np.int64),
                                           text.term_rows(rows), lo, hi)
    assert np.array_equal(fast, brute_force_max(texts, rows, lo, hi), equal_nan=True)


@pytest.mark.parametrize("cap", [0.0, 0.2, 0.5])
def test_segment_kernel_cap_keeps_every_value_at_or_below_it(cap: float) -> None:
    """With a cap, a query whose maximum is at most the cap gets it exactly, and one whose
    maximum is above it gets some value above the cap (never more than the maximum)."""
    rng = np.random.default_rng(21)
    n_rows = 600
    rows = corpus(n_rows, seed=21, vocab=80).astype(object)
    rows[rng.random(n_rows) < 0.05] = None
    hi = rng.integers(1, n_rows + 1, 500)
    lo = np.maximum(0, hi - rng.integers(0, 60, 500))
    texts = corpus(500, seed=22, vocab=80).astype(object)
    exact = brute_force_max(texts, rows, lo, hi)
    capped = text.max_similarity_in_segments(text.term_rows(texts), np.zeros(500, np.int64),
                                             text.term_rows(rows), lo, hi, cap)
    low = ~(exact > cap)  # NaN included
    assert np.array_equal(capped[low], exact[low], equal_nan=True)
    assert np.all((capped[~low] > cap) & (capped[~low] <= exact[~low]))
    assert low.any() and (~low).any()


# ---------------------------------------------------------------- MinHash LSH


def test_minhash_equals_datasketch() -> None:
    texts = [*corpus(50, seed=5), "", "one", "Repeated repeated REPEATED words"]
    sig = minhash_signatures(np.array(texts, dtype=object), 16)
    for t, s in zip(texts, sig, strict=True):
        m = MinHash(num_perm=16, seed=7, hashfunc=lambda token: token_hash64(token) >> 32,
                    scheme="affine32")
        m.update_batch(tokens(t))
        assert np.array_equal(m.hashvalues, s), t


def test_lsh_bucket_range_and_types() -> None:
    texts = corpus(2000, seed=6)
    for n in (1, 2, 7, 4096, 2**31 - 1):
        b = lsh_bucket(texts, n)
        assert b.dtype == np.int64 and b.shape == (2000,)
        assert b.min() >= 0 and b.max() < n
    b = lsh_bucket(texts, 4096)
    assert len(np.unique(b)) > 500  # spreads over many buckets
    per_row = lsh_bucket(texts[:10], np.array([5, 0, -3, 7, 9, 11, 13, 1, 2, 3]))
    assert per_row[1] == 0 and per_row[2] == 0  # placeholder n < 1 behaves as n = 1
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        lsh_bucket(texts, 0)


def test_empty_text_has_a_fixed_bucket() -> None:
    b = lsh_bucket(arr("", "!!!", "  ", "a"), 4096)
    assert b[0] == b[1] == b[2]
    assert b[0] == GOLDEN[""]


GOLDEN = {  # pinned: a change means every stored key map / window state is invalid
    "": 3041,
    "breaking news earthquake hits the city": 1617,
    "Breaking NEWS: earthquake hits the city!!": 1617,
    "the quick brown fox jumps over the lazy dog": 3664,
}


def test_lsh_bucket_golden_values() -> None:
    texts = np.array(list(GOLDEN), dtype=object)
    assert lsh_bucket(texts, 4096).tolist() == list(GOLDEN.values())


def test_lsh_bucket_is_deterministic_across_processes() -> None:
    texts = list(corpus(200, seed=8))
    code = (
        "import json, sys, numpy as np\n"
        "from cep.engine.text import lsh_bucket\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps(lsh_bucket(np.array(texts, dtype=object), 4096).tolist()))\n"
    )
    here = lsh_bucket(np.array(texts, dtype=object), 4096).tolist()
    for seed in ("0", "12345"):  # Python's str hash randomisation must not matter
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        assert json.loads(out.stdout) == here


def test_near_duplicates_share_buckets(capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(11)
    base = corpus(3000, seed=12, vocab=20000, dup_rate=0.0)
    near = np.array([mutate(t, 1, rng) for t in base], dtype=object)
    n = 4096
    b_base, b_near = lsh_bucket(base, n), lsh_bucket(near, n)
    near_rate = float((b_base == b_near).mean())
    random_rate = float((b_base == np.roll(b_base, 1)).mean())
    with capsys.disabled():
        print(
            f"\n[text] same bucket: near-duplicates (1 of 15 words changed) {near_rate:.3f}, "
            f"unrelated pairs {random_rate:.4f}"
        )
    assert near_rate > 0.6
    assert random_rate < 0.05
    assert near_rate > 10 * random_rate
