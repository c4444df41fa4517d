"""The built-in ``tweets`` workload (cep.io.tweets): shape, truth, realism, calibration."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cep.engine.text import lsh_bucket, similarity
from cep.io import tweets
from cep.io.tweets import GeneratedTweets, generate_tweets, parse_spec, write_ground_truth

COLUMNS = ["seq", "id", "ts", "user", "lang", "text", "retweets", "topic"]
N = 30_000
# One full 15-minute zipf-periodic cycle and a bit: 60k tweets at 60 tweets/s = 1000 s.
ZIPF_N, ZIPF_RATE = 60_000, 60.0


@pytest.fixture(scope="module")
def default() -> GeneratedTweets:
    return generate_tweets(N, seed=7)


@pytest.fixture(scope="module")
def zipf() -> GeneratedTweets:
    return generate_tweets(ZIPF_N, mode="zipf-periodic", seed=7, rate=ZIPF_RATE)


@pytest.fixture(scope="module", params=["default", "zipf"])
def gen(request: pytest.FixtureRequest) -> GeneratedTweets:
    return request.getfixturevalue(request.param)


# ---------------------------------------------------------------- determinism


def test_same_seed_same_stream_other_seed_other_stream(default: GeneratedTweets) -> None:
    again = generate_tweets(N, seed=7)
    pd.testing.assert_frame_equal(default.frame, again.frame)
    np.testing.assert_array_equal(default.first_story_ids, again.first_story_ids)
    np.testing.assert_array_equal(default.story_of, again.story_of)
    np.testing.assert_array_equal(default.keys, again.keys)
    other = generate_tweets(N, seed=8)
    assert (other.frame.text != default.frame.text).mean() > 0.99


def test_same_stream_in_another_process() -> None:
    """No salted hash() or global random state: a fresh interpreter agrees."""
    code = (
        "import hashlib\n"
        "from cep.io.tweets import generate_tweets\n"
        "g = generate_tweets(3000, mode='zipf-periodic', seed=5)\n"
        "print(hashlib.sha256(g.frame.to_csv(index=False).encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    here = generate_tweets(3000, mode="zipf-periodic", seed=5)
    assert out.stdout.strip() == hashlib.sha256(here.frame.to_csv(index=False).encode()).hexdigest()


# ---------------------------------------------------------------- schema


def test_schema_and_types(gen: GeneratedTweets) -> None:
    f = gen.frame
    assert list(f.columns) == COLUMNS
    for col in ("seq", "id", "ts", "retweets"):
        assert f[col].dtype == np.int64, col
    for col in ("user", "lang", "text", "topic"):
        assert f[col].dtype == object, col
        assert all(type(v) is str for v in f[col].to_numpy()[::97]), col
    np.testing.assert_array_equal(f.seq.to_numpy(), np.arange(len(f)))
    assert f.id.is_unique
    ms = f.id.to_numpy() >> 22  # snowflake ids: their millisecond part follows ts
    np.testing.assert_array_equal(ms, f.ts.to_numpy() // 1000 - tweets.TWITTER_EPOCH_MS)
    assert f.ts.is_monotonic_increasing
    assert f.ts.iloc[0] >= tweets.START_US
    assert set(f.lang) == set(tweets.LANGS)
    assert (f.lang == "en").mean() > 0.6
    assert set(f.topic) <= set(tweets.TOPICS)
    assert f.retweets.min() >= 0
    assert f.retweets.max() > 100 * max(1.0, f.retweets.median())  # heavy tail
    assert f.text.str.len().min() > 0


def test_event_time_rate(default: GeneratedTweets, zipf: GeneratedTweets) -> None:
    for gen, rate in ((default, tweets.DEFAULT_RATE), (zipf, ZIPF_RATE)):
        ts = gen.frame.ts.to_numpy()
        span_s = (ts[-1] - tweets.START_US) / 1e6
        assert 0.75 < len(ts) / span_s / rate < 1.25


def test_keys_are_the_lsh_bucket_udf(gen: GeneratedTweets) -> None:
    texts = gen.frame.text.to_numpy()
    np.testing.assert_array_equal(gen.keys, lsh_bucket(texts, 4096))


def test_keys_follow_buckets() -> None:
    gen = generate_tweets(5_000, seed=3, buckets=64)
    np.testing.assert_array_equal(gen.keys, lsh_bucket(gen.frame.text.to_numpy(), 64))


# ---------------------------------------------------------------- ground truth


def test_ground_truth_is_consistent(gen: GeneratedTweets) -> None:
    story, ids = gen.story_of, gen.frame.id.to_numpy()
    assert story.dtype == np.int64 and len(story) == len(ids)
    labels, first_rows = np.unique(story, return_index=True)
    np.testing.assert_array_equal(labels, np.arange(len(labels)))  # numbered 0..S-1
    assert np.all(np.diff(first_rows) > 0)  # ... by first appearance
    np.testing.assert_array_equal(gen.first_story_ids, ids[first_rows])


def test_story_sizes_are_heavy_tailed(default: GeneratedTweets) -> None:
    sizes = np.bincount(default.story_of)
    one_off_tweets = np.count_nonzero(sizes == 1) / N
    assert 0.1 < one_off_tweets < 0.5  # many tweets are one-offs
    assert np.median(sizes) <= 2  # most stories get a few tweets
    assert sizes.max() > 50  # some spread a lot


def test_paraphrases_are_similar_unrelated_are_not(default: GeneratedTweets) -> None:
    rng = np.random.default_rng(0)
    story, texts = default.story_of, default.frame.text.to_numpy()
    order = np.argsort(story, kind="stable")
    sizes = np.bincount(story)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    picked = rng.choice(np.flatnonzero(sizes >= 2), 1000)
    i = order[start[picked] + rng.integers(0, sizes[picked])]
    j = order[start[picked] + rng.integers(0, sizes[picked])]
    keep = i != j
    within = similarity(texts[i[keep]], texts[j[keep]])
    a, b = rng.integers(0, N, (2, 2000))
    keep = story[a] != story[b]
    across = similarity(texts[a[keep]], texts[b[keep]])
    print(f"similarity: within story mean {within.mean():.3f}, across {across.mean():.3f}")
    assert within.mean() > 0.4
    assert np.mean(within > 0.5) > 0.8
    assert across.mean() < 0.1
    assert np.mean(across < 0.15) > 0.95


def test_write_ground_truth(default: GeneratedTweets, tmp_path: Path) -> None:
    path = tmp_path / "truth.jsonl"
    write_ground_truth(default, path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in rows] == default.first_story_ids.tolist()
    assert [r["story"] for r in rows] == list(range(len(rows)))


# ---------------------------------------------------------------- zipf-periodic


def test_zipf_exponent_schedule() -> None:
    minute = 60_000_000
    at = tweets.START_US + np.array([0, 5 * minute - 1, 5 * minute, 15 * minute - 1, 15 * minute])
    np.testing.assert_array_equal(tweets.zipf_exponent(at), [0.2, 0.2, 1.5, 1.5, 0.2])


def test_zipf_periodic_emits_pool_tweets(zipf: GeneratedTweets) -> None:
    """The pool is the default stream of the same seed; keys are re-drawn from it."""
    pool = generate_tweets(ZIPF_N, seed=7, rate=ZIPF_RATE)
    assert set(zipf.frame.text) <= set(pool.frame.text)
    assert zipf.frame.text.duplicated().any()  # skewed keys ran out and cycled


def test_zipf_periodic_kg_rstd_swings(zipf: GeneratedTweets) -> None:
    """KG over 5 engines: balanced at exponent 0.2 (~3% in the paper), skewed at 1.5 (~77%)."""
    exponent, rstd = tweets.kg_window_rstd(zipf.keys, zipf.frame.ts.to_numpy(), 5, 3_000)
    low, high = rstd[exponent == 0.2], rstd[exponent == 1.5]
    print(
        f"KG RSTD per 3k-tweet window: exponent 0.2 median {np.median(low):.1f}% "
        f"({len(low)} windows, max {low.max():.1f}%), exponent 1.5 median "
        f"{np.median(high):.1f}% ({len(high)} windows, min {high.min():.1f}%)"
    )
    assert len(low) >= 6 and len(high) >= 10  # both phases covered
    assert np.median(low) < 8.0
    assert np.median(high) > 40.0


# ---------------------------------------------------------------- specs and arguments


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("tweets", {}),
        (
            "tweets:n=2950000,mode=zipf-periodic,seed=7",
            {"n": 2_950_000, "mode": "zipf-periodic", "seed": 7},
        ),
        (" tweets : n = 10 , buckets=64 ", {"n": 10, "buckets": 64}),
        ("tweets:rate=2.5e3", {"rate": 2500.0}),
    ],
)
def test_parse_spec(spec: str, expected: dict[str, object]) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tweets:size=3", "unknown key 'size'"),
        ("tweets:n=ten", "n must be int"),
        ("tweets:n=1.5", "n must be int"),
        ("tweets:mode=shuffled", "unknown mode 'shuffled'"),
        ("tweets:n=1,n=2", "given twice"),
        ("tweets:n", "expected key=value"),
        ("tweets:", "nothing after ':'"),
        ("tweet:n=1", "not a tweets spec"),
    ],
)
def test_parse_spec_rejects(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_spec(spec)


def test_spec_feeds_generate() -> None:
    gen = generate_tweets(**parse_spec("tweets:n=500,seed=3"))
    assert len(gen.frame) == 500


@pytest.mark.parametrize(
    "kwargs",
    [{"n": 0}, {"mode": "random"}, {"buckets": 0}, {"rate": 0.0}, {"rate": 2e6}],
)
def test_generate_rejects_bad_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="tweets:"):
        generate_tweets(**{"n": 100, **kwargs})  # type: ignore[arg-type]
