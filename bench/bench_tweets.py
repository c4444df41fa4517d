"""Generation speed and key-load calibration of the built-in ``tweets`` workload.

Prints the figures and writes them to ``bench/results/tweets.json``. For each mode
(``default``, ``zipf-periodic``) at the DLB paper's scale (2.95M tweets, 4,096 LSH keys):

* generation time (wall, one run: the whole ``generate_tweets`` call, text rendering and
  the LSH key of every tweet included) and µs per tweet;
* the stream's shape: event-time span and rate, first stories, one-off tweets, the
  largest story, keys that occur, the largest key's share;
* the calibration the paper reports for key grouping over 5 engines: the RSTD
  (100·std/mean) of the engines' loads in windows of 10,000 tweets that lie inside one
  zipf-periodic phase, summarised per exponent (paper: ~3% at 0.2, ~77% at 1.5). The
  default order is summarised under the same phase clock for comparison.

Run: ``python bench/bench_tweets.py [--n 2950000] [--seed 7]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from cep.io import tweets


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


def measure(n: int, mode: str, seed: int, buckets: int, engines: int, window: int) -> dict:
    """Generate one stream and describe it (see the module docstring)."""
    start = time.perf_counter()
    gen = tweets.generate_tweets(n, mode=mode, seed=seed, buckets=buckets)
    seconds = time.perf_counter() - start
    ts = gen.frame.ts.to_numpy()
    span = (ts[-1] - tweets.START_US) / 1e6
    sizes = np.bincount(gen.story_of)
    key_load = np.bincount(gen.keys, minlength=buckets)
    exponent, rstd = tweets.kg_window_rstd(gen.keys, ts, engines, window)
    return {
        "seconds": seconds,
        "us_per_tweet": 1e6 * seconds / n,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_950_000, help="tweets per stream")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--buckets", type=int, default=4096, help="LSH keys")
    parser.add_argument("--engines", type=int, default=5)
    parser.add_argument("--window", type=int, default=10_000, help="tweets per RSTD window")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "tweets.json"))
    args = parser.parse_args()
    results: dict[str, object] = {
        "tweets": args.n,
        "seed": args.seed,
        "buckets": args.buckets,
        "engines": args.engines,
        "window": args.window,
        "rate": tweets.DEFAULT_RATE,
    }
    for mode in tweets.MODES:
        figures = measure(args.n, mode, args.seed, args.buckets, args.engines, args.window)
        results[mode] = figures
        print(
            f"{mode}: {figures['seconds']:.1f} s ({figures['us_per_tweet']:.2f} µs/tweet), "
            f"{figures['event_time_span_s']:.0f} s of event time, "
            f"{figures['first_stories']} first stories "
            f"({100 * figures['first_story_fraction']:.1f}%), "
            f"{figures['keys_occurring']} keys, largest key "
            f"{100 * figures['largest_key_share']:.2f}%"
        )
        for e, s in figures["kg_rstd_by_exponent"].items():
            print(
                f"  KG RSTD, exponent {e} phases: median {s['median']:.1f}% "
                f"(p10 {s['p10']:.1f}%, p90 {s['p90']:.1f}%, range {s['min']:.1f}-"
                f"{s['max']:.1f}%, {s['windows']} windows)"
            )
    results["machine"] = f"{platform.machine()} {platform.python_implementation()} " + (
        platform.python_version()
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
