"""Generation speed, memory and key-load calibration of the built-in ``tweets`` workload.

Prints the figures and writes them to ``bench/results/tweets.json``:

* ``ranges``: what an executor pays for one ``tweets_range`` of 100,000 rows of a
  30M-tweet plan (the Spark source's unit of work), at ``lo = 0``, at ``lo = 3.5M`` (the
  worst case: the look-back of stories born before the stream reaches furthest there)
  and at ``lo = 29.9M``; wall time (process warm: world built, rendered pieces cached)
  and the peak of traced allocations during the call (``tracemalloc``), per mode.
* per mode (``default``, ``zipf-periodic``) at the DLB paper's scale (2.95M tweets, 4,096
  LSH keys), each in a fresh process: wall time of the whole ``generate_tweets`` call and
  µs per tweet, the process's peak resident memory, the stream's shape (event-time
  span, first stories, one-off tweets, largest story, keys that occur, largest key) and
  the RSTD (100·std/mean) of key grouping over 5 engines in windows of 10,000 tweets
  inside one zipf-periodic phase (:func:`cep.io.tweets.calibration.kg_window_rstd`), per exponent
  (paper: ~3% at 0.2, ~77% at 1.5; real text in its arrival order: 40-44.5%). The default
  order is summarised under the same phase clock: it has no swing, only its own skew.

Run: ``python bench/bench_tweets.py [--n 2950000] [--seed 7]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from common import RESULTS, write_results

from cep.io.tweets.calibration import kg_window_rstd
from cep.io.tweets.generator import generate_tweets, tweets_range
from cep.io.tweets.plan import DEFAULT_RATE, MODES, START_US, tweets_plan

RANGE_N = 30_000_000
RANGE_ROWS = 100_000
RANGE_LOS = (0, 3_500_000, 29_900_000)


def summarise(values: np.ndarray) -> dict[str, float]:
    """Count, median, 10th/90th percentiles and range of per-window RSTDs (%)."""
    return {
        "windows": len(values),
        "median": float(np.median(values)),
        "p10": float(np.percentile(values, 10)),
        "p90": float(np.percentile(values, 90)),
        "min": float(values.min()),
        "max": float(values.max()),
    }


def measure_ranges(mode: str, seed: int) -> dict[str, dict[str, float]]:
    """Time and traced peak memory of 100k-row ranges of a 30M plan (see the docstring)."""
    plan = tweets_plan(f"tweets:n={RANGE_N},mode={mode},seed={seed}")
    tweets_range(plan, 15_000_000, 15_000_000 + RANGE_ROWS)  # warm the process
    out = {}
    for lo in RANGE_LOS:
        start = time.perf_counter()
        tweets_range(plan, lo, lo + RANGE_ROWS)
        seconds = time.perf_counter() - start
        tracemalloc.start()
        tweets_range(plan, lo, lo + RANGE_ROWS)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out[str(lo)] = {
            "seconds": seconds,
            "rows_per_s": RANGE_ROWS / seconds,
            "peak_traced_mb": peak / 1e6,
        }
    return out


def measure_whole(n: int, mode: str, seed: int, buckets: int, engines: int, window: int) -> dict:
    """Generate one stream in this process and describe it (see the module docstring)."""
    start = time.perf_counter()
    gen = generate_tweets(n, mode=mode, seed=seed, buckets=buckets)
    seconds = time.perf_counter() - start
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ts = gen.frame.ts.to_numpy()
    span = (ts[-1] - START_US) / 1e6
    sizes = np.bincount(gen.story_of)
    key_load = np.bincount(gen.keys, minlength=buckets)
    exponent, rstd = kg_window_rstd(gen.keys, ts, engines, window)
    return {
        "seconds": seconds,
        "us_per_tweet": 1e6 * seconds / n,
        "peak_rss_mb": peak_rss_mb,
        "event_time_span_s": span,
        "tweets_per_event_s": n / span,
        "first_stories": len(gen.first_story_ids),
        "first_story_fraction": len(gen.first_story_ids) / n,
        "one_off_tweet_fraction": float(np.count_nonzero(sizes == 1) / n),
        "largest_story": int(sizes.max()),
        "keys_occurring": int(np.count_nonzero(key_load)),
        "largest_key_share": float(key_load.max() / n),
        "kg_rstd_by_exponent": {
            str(e): summarise(rstd[exponent == e]) for e in np.unique(exponent).tolist()
        },
    }


def in_child(task: str, **kwargs: object) -> dict:
    """Run one measurement in a fresh interpreter (its own peak memory, cold caches)."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_tweets as b; "
        f"print(json.dumps(b.{task}(**json.loads(sys.argv[2]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), json.dumps(kwargs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_950_000, help="tweets per stream")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--buckets", type=int, default=4096, help="LSH keys")
    parser.add_argument("--engines", type=int, default=5)
    parser.add_argument("--window", type=int, default=10_000, help="tweets per RSTD window")
    parser.add_argument("--out", default=str(RESULTS / "tweets.json"))
    args = parser.parse_args()
    results: dict[str, object] = {
        "tweets": args.n,
        "seed": args.seed,
        "buckets": args.buckets,
        "engines": args.engines,
        "window": args.window,
        "rate": DEFAULT_RATE,
        "ranges": {"plan_n": RANGE_N, "rows": RANGE_ROWS},
    }
    for mode in MODES:
        ranges = in_child("measure_ranges", mode=mode, seed=args.seed)
        results["ranges"][mode] = ranges  # type: ignore[index]
        for lo, r in ranges.items():
            print(
                f"{mode} range [{lo}, +{RANGE_ROWS}) of {RANGE_N}: {r['seconds']:.2f} s "
                f"({r['rows_per_s']:,.0f} rows/s), peak traced {r['peak_traced_mb']:.0f} MB"
            )
    for mode in MODES:
        figures = in_child(
            "measure_whole", n=args.n, mode=mode, seed=args.seed, buckets=args.buckets,
            engines=args.engines, window=args.window,
        )  # fmt: skip
        results[mode] = figures
        print(
            f"{mode}: {figures['seconds']:.1f} s ({figures['us_per_tweet']:.2f} µs/tweet), "
            f"peak RSS {figures['peak_rss_mb']:.0f} MB, "
            f"{figures['event_time_span_s']:.0f} s of event time, "
            f"{figures['first_stories']} first stories "
            f"({100 * figures['first_story_fraction']:.1f}%), largest story "
            f"{figures['largest_story']}, {figures['keys_occurring']} keys, largest key "
            f"{100 * figures['largest_key_share']:.2f}%"
        )
        for e, s in figures["kg_rstd_by_exponent"].items():
            print(
                f"  KG RSTD, exponent {e} phases: median {s['median']:.1f}% "
                f"(p10 {s['p10']:.1f}%, p90 {s['p90']:.1f}%, range {s['min']:.1f}-"
                f"{s['max']:.1f}%, {s['windows']} windows)"
            )
    write_results(results, args.out)


if __name__ == "__main__":
    main()
