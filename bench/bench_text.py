"""Throughput of the text UDFs on synthetic 15-word tweets (one core, numpy + scipy).

Prints the figures and writes them to ``bench/results/text.json``. What is measured:

* ``lsh_bucket``: texts/s, with a cold token-hash cache (every token new to the process)
  and warm (the steady state of a long run); target ≥ 50k texts/s.
* ``tokenize_batch``: texts/s into hashed term-count rows.
* ``similarity``: pairs/s, in the shape the generic join evaluates it (one triggering
  tweet against a 500-tweet window), and for unrelated pairs.
* ``max_similarity_in_segments``: new events/s for First Story Detection's inner loop with
  H = 500 (a full window per key kept as term rows, 20 new events per key per batch, all
  keys in one call), tokenising the new events included.

Run: ``python bench/bench_text.py [--n 200000]``.
"""

from __future__ import annotations

import argparse
import string

import numpy as np
from common import RESULTS, best_of, timed, write_results

from cep.engine import text


def synthetic_tweets(n: int, seed: int = 0, vocab: int = 50_000) -> np.ndarray:
    """Tweets of 15 Zipf-distributed words with some capitals, hashtags and punctuation."""
    rng = np.random.default_rng(seed)
    letters = np.array(list(string.ascii_lowercase))
    lengths = rng.integers(2, 10, size=vocab)
    words = np.array(["".join(rng.choice(letters, k)) for k in lengths], dtype=object)
    weights = 1.0 / np.arange(1, vocab + 1) ** 1.1
    picks = words[rng.choice(vocab, size=(n, 15), p=weights / weights.sum())]
    decor = rng.random((n, 15))
    out = np.empty(n, dtype=object)
    for i in range(n):
        toks = [
            ("#" + w if d < 0.03 else w.capitalize() if d < 0.1 else w + "," if d < 0.15 else w)
            for w, d in zip(picks[i], decor[i], strict=True)
        ]
        out[i] = " ".join(toks) + ("!" if decor[i, 0] > 0.8 else "")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="tweets for the rate tests")
    parser.add_argument("--out", default=str(RESULTS / "text.json"))
    args = parser.parse_args()
    n = args.n
    tweets = synthetic_tweets(n)
    results: dict[str, object] = {"tweets": n, "words_per_tweet": 15}

    text._HASH_CACHE.clear()
    results["lsh_bucket_texts_per_s_cold"] = n / timed(lambda: text.lsh_bucket(tweets, 4096))
    results["lsh_bucket_texts_per_s"] = n / best_of(lambda: text.lsh_bucket(tweets, 4096))
    results["tokenize_batch_texts_per_s"] = n / best_of(lambda: text.tokenize_batch(tweets))

    window = tweets[:500]
    probes = tweets[500:700]

    def join_shape() -> None:
        for t in probes:
            text.similarity(t, window)

    results["similarity_pairs_per_s_join"] = len(probes) * len(window) / best_of(join_shape)
    a, b = tweets[: n // 2], tweets[n // 2 : 2 * (n // 2)]
    results["similarity_pairs_per_s_elementwise"] = len(a) / best_of(
        lambda: text.similarity(a, b))

    keys, horizon, per_key = 200, 500, 20
    window = text.term_rows(tweets[: keys * horizon])
    fresh = tweets[keys * horizon : keys * horizon + keys * per_key]
    query_key = np.repeat(np.arange(keys), per_key)
    # each new event sees its key's full window (the newest H rows; in-batch rows aside)
    lo, hi = query_key * horizon, (query_key + 1) * horizon

    def fsd_batch() -> None:
        text.max_similarity_in_segments(text.term_rows(fresh), query_key, window, lo, hi)

    seconds = best_of(fsd_batch)
    results["window_events_per_s"] = keys * per_key / seconds
    results["window_pairs_per_s"] = keys * per_key * horizon / seconds
    for key, value in results.items():
        shown = f"{value:,.0f}" if isinstance(value, float) else value
        print(f"{key:40s} {shown}")
    write_results(results, args.out)


if __name__ == "__main__":
    main()
