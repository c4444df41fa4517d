"""The built-in ``tweets`` workload (cep.io.tweets): shape, truth, realism, calibration."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cep.engine.text import lsh_bucket, similarity
from cep.io.tweets import default_order
from cep.io.tweets import layout as lay
from cep.io.tweets.calibration import kg_window_rstd
from cep.io.tweets.generator import (
    GeneratedTweets,
    generate_tweets,
    tweets_range,
    write_ground_truth,
)
from cep.io.tweets.plan import (
    DEFAULT_RATE,
    MODES,
    START_US,
    TWITTER_EPOCH_MS,
    parse_spec,
    tweets_plan,
)
from cep.io.tweets.world import LANGS, TOPICS
from cep.io.tweets.zipf_periodic import batch_exponents, zipf_exponent

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
        "from cep.io.tweets.generator import generate_tweets\n"
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
    np.testing.assert_array_equal(ms, f.ts.to_numpy() // 1000 - TWITTER_EPOCH_MS)
    assert f.ts.is_monotonic_increasing
    assert f.ts.iloc[0] >= START_US
    assert set(f.lang) == set(LANGS)
    assert (f.lang == "en").mean() > 0.5  # 72% of stories; a trend (~18% of rows) has one
    assert set(f.topic) <= set(TOPICS)
    assert f.retweets.min() >= 0
    assert f.retweets.max() > 100 * max(1.0, f.retweets.median())  # heavy tail
    assert f.text.str.len().min() > 0


def test_event_time_rate(default: GeneratedTweets, zipf: GeneratedTweets) -> None:
    for gen, rate in ((default, DEFAULT_RATE), (zipf, ZIPF_RATE)):
        ts = gen.frame.ts.to_numpy()
        span_s = (ts[-1] - START_US) / 1e6
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
    at = START_US + np.array([0, 5 * minute - 1, 5 * minute, 15 * minute - 1, 15 * minute])
    np.testing.assert_array_equal(zipf_exponent(at), [0.2, 0.2, 1.5, 1.5, 0.2])


def test_batch_exponents_read_the_plan_as_the_rows_are_generated() -> None:
    spec = "tweets:n=40000,mode=zipf-periodic,seed=3,rate=40"  # a phase every 300 s: 12k
    frame, _ = tweets_range(tweets_plan(spec), 0, 40_000)
    ts = frame["ts"].to_numpy().astype("datetime64[us]").astype(np.int64)
    exponents = zipf_exponent(ts)
    expected = []
    for lo in range(0, 40_000, 4_000):
        values, counts = np.unique(exponents[lo:lo + 4_000], return_counts=True)
        expected.append(float(values[np.argmax(counts)]))
    assert batch_exponents(spec, 4_000) == expected
    assert 0.2 in expected and 1.5 in expected


def test_zipf_periodic_reposts_its_pool(zipf: GeneratedTweets) -> None:
    """Skewed keys run out of pool tweets and cycle: the same text comes back, keyed alike."""
    text = zipf.frame.text
    assert text.duplicated().mean() > 0.2
    keys_per_text = pd.Series(zipf.keys).groupby(text.to_numpy()).nunique()
    assert keys_per_text.max() == 1


def test_zipf_periodic_kg_rstd_swings(zipf: GeneratedTweets) -> None:
    """KG over 5 engines: balanced at exponent 0.2 (~3% in the paper), skewed at 1.5 (~77%)."""
    exponent, rstd = kg_window_rstd(zipf.keys, zipf.frame.ts.to_numpy(), 5, 3_000)
    low, high = rstd[exponent == 0.2], rstd[exponent == 1.5]
    print(
        f"KG RSTD per 3k-tweet window: exponent 0.2 median {np.median(low):.1f}% "
        f"({len(low)} windows, max {low.max():.1f}%), exponent 1.5 median "
        f"{np.median(high):.1f}% ({len(high)} windows, min {high.min():.1f}%)"
    )
    assert len(low) >= 6 and len(high) >= 10  # both phases covered
    assert np.median(low) < 8.0
    assert np.median(high) > 40.0


def test_default_order_is_skewed_like_real_text(default: GeneratedTweets) -> None:
    """KG over 5 engines in 10k-tweet windows: 30-50% RSTD (real tweets: 40-44.5%), the
    trending story's hashtag key carrying most of the excess."""
    _, window_rstd = kg_window_rstd(default.keys, default.frame.ts.to_numpy(), 5, 10_000)
    print(f"default order KG RSTD per 10k window: {np.round(window_rstd, 1)}")
    assert len(window_rstd) >= 2
    assert 30.0 <= np.median(window_rstd) <= 50.0
    assert np.bincount(default.keys).max() / N > 0.1


def test_renderer_writes_each_slot_in_its_style() -> None:
    """The compiled renderer against the plain definition: non-empty slots in order,
    prefix + token (in its case) + suffix, a space between slots, the end mark last."""
    from cep.io.tweets import text as tt

    forms = {tt._PLAIN: str, tt._CAP: str.capitalize, tt._HASH: lambda t: "#" + t,
             tt._MENTION: lambda t: "@" + t, tt._MENTION_COLON: lambda t: "@" + t + ":",
             tt._COMMA: lambda t: t + ",", tt._UPPER: str.upper}
    tokens = np.array(["a", "bc", "9x", "hello", "r2d2", "zz"], dtype=object)
    rng = np.random.default_rng(6)
    tok = rng.integers(-1, len(tokens), (300, 9)).astype(np.int32)
    tok[np.arange(300), rng.integers(0, 9, 300)] = rng.integers(0, len(tokens), 300)
    style = rng.integers(0, len(forms), tok.shape).astype(np.int8)
    last_end = rng.integers(1, len(tt._ENDS), 300)
    want = [" ".join(forms[s](tokens[t]) for t, s in zip(row, st, strict=True) if t >= 0)
            + tt._ENDS[e] for row, st, e in zip(tok, style, last_end, strict=True)]
    got = tt.Renderer(tokens).render(tok, style, last_end)
    assert got.dtype == object and got.tolist() == want
    assert tt.Renderer(tokens).render(tok[:0], style[:0], last_end[:0]).tolist() == []


# ---------------------------------------------------------------- ranges


def _concat(plan: dict, cuts: list[int]) -> tuple[pd.DataFrame, np.ndarray]:
    parts = [tweets_range(plan, lo, hi) for lo, hi in itertools.pairwise(cuts)]
    frame = pd.concat([f for f, _ in parts])
    return frame, np.concatenate([flags for _, flags in parts])


def _random_cuts(rng: np.random.Generator, lo: int, hi: int, k: int) -> list[int]:
    inner = [*rng.integers(lo, hi, k).tolist(), lo + 1, lo + 10_000, lo + 10_001]
    return sorted({lo, hi, *(c for c in inner if lo <= c <= hi)})


@pytest.mark.parametrize("mode", MODES)
def test_any_cut_gives_the_same_stream(mode: str) -> None:
    """Ranges concatenate to generate_tweets, bit for bit, whatever the cut."""
    n = 34_567
    gen = generate_tweets(n, mode=mode, seed=3, rate=60.0)
    plan = tweets_plan(f"tweets:n={n},mode={mode},seed=3,rate=60")
    rng = np.random.default_rng(11)
    for _ in range(3):
        frame, flags = _concat(plan, _random_cuts(rng, 0, n, 6))
        pd.testing.assert_frame_equal(frame, gen.frame)
        np.testing.assert_array_equal(frame.id.to_numpy()[flags], gen.first_story_ids)
    some, _ = tweets_range(plan, 20_000, 20_100)
    pd.testing.assert_frame_equal(some, gen.frame.iloc[20_000:20_100])
    empty, no_flags = tweets_range(plan, 500, 500)
    assert list(empty.columns) == COLUMNS and len(empty) == 0 and len(no_flags) == 0
    pd.testing.assert_series_equal(empty.dtypes, gen.frame.dtypes)


def test_ranges_in_any_order_share_the_memo_and_stay_exact(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Consecutive ranges reuse one layout and the replay's checkpoints (what makes
    Spark's 64 Ki-row pieces cheap); ranges read backwards, again or after a fresh memo
    still give generate_tweets' rows and first-story flags bit for bit."""
    n = 95_000
    gen = generate_tweets(n, seed=4)
    plan = tweets_plan(f"tweets:n={n},seed=4")
    cuts = [0, 13_000, 31_000, 47_500, 66_000, 95_000]
    pieces = list(itertools.pairwise(cuts))
    memo = default_order._DefaultMemo()  # as in a process that has read nothing yet
    monkeypatch.setattr(default_order, "_MEMO", memo)
    rng = np.random.default_rng(8)
    for order in ([0, 1, 2, 3, 4], [4, 3, 2, 1, 0], rng.permutation(5).tolist() * 2):
        layouts = set()
        for i in order:
            lo, hi = pieces[i]
            frame, flags = tweets_range(plan, lo, hi)
            pd.testing.assert_frame_equal(frame, gen.frame.iloc[lo:hi])
            ids = frame.id.to_numpy()[flags]
            np.testing.assert_array_equal(ids, gen.first_story_ids[
                np.isin(gen.first_story_ids, gen.frame.id.to_numpy()[lo:hi])])
            layouts.add(id(memo.layouts[4]))
        assert len(layouts) == 1  # 10 blocks: within one layout's AHEAD_BLOCKS
    assert len(memo.seen[4]) >= 2


def test_a_second_pass_keeps_its_own_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that read the stream to its end and starts again at the front (a second
    run in the same Spark session) keeps the checkpoints it makes: the next range
    replays from the checkpoint the last one left, not from block 0."""
    memo = default_order._DefaultMemo()
    monkeypatch.setattr(default_order, "_MEMO", memo)
    block = lay.BLOCK
    blocks = default_order._SEEN_KEPT + 4
    plan = tweets_plan(f"tweets:n={blocks * block},seed=4")
    for b in range(blocks):  # the first pass leaves checkpoints at its last blocks
        tweets_range(plan, b * block, (b + 1) * block)
    replayed: list[int] = []
    follow = lay.StreamLayout.follow_counts

    def counting(layout, b):
        replayed.append(b)
        return follow(layout, b)

    monkeypatch.setattr(lay.StreamLayout, "follow_counts", counting)
    for b in range(4):  # the second pass
        replayed.clear()
        tweets_range(plan, b * block, (b + 1) * block)
        assert replayed == [], f"block {b} replayed blocks {replayed}"
    assert set(memo.seen[4]) >= {1, 2, 3, 4}


def test_first_story_flags_are_first_appearances(default: GeneratedTweets) -> None:
    plan = tweets_plan(f"tweets:n={N},seed=7")
    _, flags = tweets_range(plan, 0, N)
    seen = np.maximum.accumulate(np.concatenate([[-1], default.story_of[:-1]]))
    np.testing.assert_array_equal(flags, default.story_of > seen)


_CUT_CODE = """
import hashlib, itertools, sys
from cep.io.tweets.generator import tweets_range
from cep.io.tweets.plan import tweets_plan
plan = tweets_plan(sys.argv[1])
cuts = [int(c) for c in sys.argv[2].split(",")]
rows, truth = hashlib.sha256(), hashlib.sha256()
for lo, hi in itertools.pairwise(cuts):
    frame, flags = tweets_range(plan, lo, hi)
    rows.update(frame.to_csv(index=False, header=False).encode())
    truth.update(flags.tobytes())
print(rows.hexdigest(), truth.hexdigest())
"""


def _digest_in_process(spec: str, cuts: list[int], hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _CUT_CODE, spec, ",".join(map(str, cuts))],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


@pytest.mark.parametrize("mode", MODES)
def test_cuts_agree_across_processes(mode: str) -> None:
    """No salted hash(), no global state: other processes, other cuts, same rows.

    Rows 3.59M-3.63M straddle the end of the look-back of stories born before the stream.
    """
    spec = f"tweets:n=3630000,mode={mode},seed=5"
    lo, hi = 3_590_000, 3_630_000
    rng = np.random.default_rng(2)
    one = _digest_in_process(spec, [lo, hi], "1")
    assert _digest_in_process(spec, _random_cuts(rng, lo, hi, 5), "2") == one


def test_plan_is_small_json_and_ranges_do_not_depend_on_n() -> None:
    plan = tweets_plan("tweets:n=30000000,mode=zipf-periodic,seed=7")
    text = json.dumps(plan)
    assert len(text) < 2_000_000
    assert json.loads(text) == plan
    # The world is the same for n >= 2M (200,000 users), block clocks are prefix-stable:
    # a range is a function of the blocks it touches, not of n or of what precedes it.
    small = tweets_plan("tweets:n=2500000,mode=zipf-periodic,seed=7")
    far, far_flags = tweets_range(json.loads(text), 2_480_000, 2_500_000)
    near, near_flags = tweets_range(small, 2_480_000, 2_500_000)
    pd.testing.assert_frame_equal(far, near)
    np.testing.assert_array_equal(far_flags, near_flags)


def test_range_cost_does_not_grow_with_lo() -> None:
    """A 20k range at the end of a 30M stream costs about what one at its start costs."""
    plan = tweets_plan("tweets:n=30000000,seed=7")
    tweets_range(plan, 15_000_000, 15_020_000)  # world, rendered pieces: warm
    seconds = []
    for lo in (0, 29_980_000):
        start = time.perf_counter()
        frame, _ = tweets_range(plan, lo, lo + 20_000)
        seconds.append(time.perf_counter() - start)
        assert frame.seq.iloc[0] == lo and len(frame) == 20_000
    print(f"20k rows at lo=0: {seconds[0]:.2f} s, at lo=29.98M: {seconds[1]:.2f} s")
    assert seconds[1] < 3 * seconds[0] + 1.0


@pytest.mark.parametrize(("lo", "hi"), [(-1, 5), (5, 4), (0, N + 1)])
def test_range_outside_the_stream_is_refused(lo: int, hi: int) -> None:
    with pytest.raises(ValueError, match="not within"):
        tweets_range(tweets_plan(f"tweets:n={N}"), lo, hi)


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


@pytest.mark.parametrize(("spec", "message"), [
    ("tweets:n=0", r"^tweets: n must be >= 1, got 0$"),
    ("tweets:rate=0", r"^tweets: rate must be in \(0, 1e6\] tweets/s, got 0\.0$"),
    ("tweets:buckets=0", r"^tweets: buckets must be >= 1, got 0$"),
    ("tweets:seed=-1", r"^tweets: seed must be in \[0, 2\*\*63\), got -1$"),
    ("tweets:x=1", r"^tweets spec 'tweets:x=1': unknown key 'x'; known keys: n, mode, seed"),
])
def test_plan_rejects_what_generate_rejects(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tweets_plan(spec)


def test_spec_feeds_generate() -> None:
    gen = generate_tweets(**parse_spec("tweets:n=500,seed=3"))
    assert len(gen.frame) == 500


@pytest.mark.parametrize(
    "kwargs",
    [{"n": 0}, {"mode": "random"}, {"buckets": 0}, {"rate": 0.0}, {"rate": 2e6}, {"users": 0}],
)
def test_generate_rejects_bad_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="tweets:"):
        generate_tweets(**{"n": 100, **kwargs})  # type: ignore[arg-type]
