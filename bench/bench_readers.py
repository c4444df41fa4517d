"""How fast cep's file readers turn a file into typed events, per format, without Spark.

N events of 6 fields (``id``, an ISO ``ts`` with milliseconds, ``user``, a 15-word
``text``, ``retweets``, ``score``) are written once as JSON lines, then as CSV and
Parquet; each file is read whole with ``cep.io.readers.ranges.read_range`` (the reader
an executor calls on each range of a segment) into a throwaway dead letter, best of
``--rounds``. The machine's load average at the start is recorded: on the shared 2-core
machine the figures move with the load. Prints lines/s per format and writes
``bench/results/readers.json``.

Was ``tests/io/test_sources.py::test_load_rate`` (100k lines) and its ``-m slow`` twin
(1M lines): a rate measured in the default test run asserted nothing.

Run: ``python bench/bench_readers.py [--n 100000] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from common import timed, write_results

from cep.io.deadletter import DeadLetter
from cep.io.readers.ranges import read_range
from grammar import ir

STREAM = ir.StreamDef("Tweet", (("id", "long"), ("ts", "timestamp"), ("user", "string"),
                                ("text", "string"), ("retweets", "int"),
                                ("score", "double")), "ts")


def write_jsonl(path: Path, n: int) -> None:
    """``n`` tweet-like events as JSON lines (the rows the old test wrote)."""
    words = [f"w{i}" for i in range(5000)]
    picks = np.random.default_rng(0).integers(0, 5000, size=(n, 15))
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            text = " ".join(words[j] for j in picks[i])
            fh.write(
                f'{{"id": {i}, "ts": "2024-05-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:'
                f'{i % 60:02d}.{i % 1000:03d}Z", "user": "u{i % 1000}", "text": "{text}", '
                f'"retweets": {i % 17}, "score": {i * 0.5}}}\n'
            )


def best_seconds(path: Path, kind: str, end: int, rounds: int, n: int) -> float:
    """The best wall time of ``rounds`` whole-file reads; every event must come back."""
    def read() -> None:
        frame = read_range(str(path), kind, 0, end, STREAM, DeadLetter(None))
        assert len(frame) == n, (kind, len(frame))

    return min(timed(read) for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, object] = {"n": args.n, "rounds": args.rounds,
                                  "load_average_at_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="cep-bench-readers-") as tmp:
        jsonl = Path(tmp) / "events.jsonl"
        write_jsonl(jsonl, args.n)
        frame = pd.read_json(jsonl, lines=True, dtype=False)
        csv, parquet = Path(tmp) / "events.csv", Path(tmp) / "events.parquet"
        frame.to_csv(csv, index=False)
        frame.to_parquet(parquet, index=False)
        files = {"json": (jsonl, jsonl.stat().st_size), "csv": (csv, csv.stat().st_size),
                 "parquet": (parquet, args.n)}
        for kind, (path, end) in files.items():
            seconds = best_seconds(path, kind, end, args.rounds, args.n)
            results[kind] = {"best_s": round(seconds, 3), "lines_per_s": round(args.n / seconds),
                             "bytes": path.stat().st_size}
            print(f"{kind:>8}: {args.n:,} events in {seconds:.2f} s: "
                  f"{args.n / seconds:,.0f} lines/s")
    write_results(results, "readers.json")


if __name__ == "__main__":
    main()
