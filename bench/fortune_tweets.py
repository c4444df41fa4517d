"""Real text for FSD: the fortune cookies of Debian's ``fortunes`` packages replayed as a
stream of tweets in Zipf order (a few texts said again and again, most seldom), so that
the LSH keys are skewed the way real text skews them, not the way the ``tweets``
generator's model does.

    python bench/fortune_tweets.py FORTUNES_DIR OUT.jsonl [--n 240000] [--zipf 1.0]

``FORTUNES_DIR``: the ``usr/share/games/fortunes`` directory of the ``fortunes`` and
``fortunes-min`` packages (``apt-get download fortunes fortunes-min`` and ``dpkg -x``).
Each line is ``{"id", "ts", "user", "text"}`` as the generator writes them; the n-th
replayed text is ``seed``-drawn from Zipf(``zipf``) over the cookies in a seeded order.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
from pathlib import Path

import numpy as np

RATE = 200.0  # tweets per second of event time, as the paper's runs


def cookies(folder: Path) -> list[str]:
    """Every cookie of every fortune file (not the ``.dat`` indexes nor ``.u8`` links),
    whitespace collapsed, in file name order."""
    out: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.suffix in (".dat", ".u8") or path.is_symlink() or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        out += [" ".join(c.split()) for c in re.split(r"^%$", text, flags=re.M)]
    return [c for c in out if c]


def replay(texts: list[str], n: int, exponent: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    weights = 1.0 / np.arange(1, len(texts) + 1) ** exponent
    picks = order[rng.choice(len(texts), size=n, p=weights / weights.sum())]
    users = rng.integers(0, max(1, n // 10), size=n)
    start = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
    return [{"id": i, "ts": (start + datetime.timedelta(seconds=i / RATE)).isoformat(
                 timespec="milliseconds").replace("+00:00", "Z"),
             "user": f"u{int(u)}", "text": texts[int(p)]}
            for i, (p, u) in enumerate(zip(picks.tolist(), users.tolist(), strict=True))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=240_000)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    texts = cookies(args.folder)
    with open(args.out, "w", encoding="utf-8") as fh:
        for row in replay(texts, args.n, args.zipf, args.seed):
            fh.write(json.dumps(row) + "\n")
    print(f"{len(texts):,} cookies, {args.n:,} tweets -> {args.out}")


if __name__ == "__main__":
    main()
