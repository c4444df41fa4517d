"""What a ``tweets`` stream is before any row exists: its spec, its arguments, its clock.

A spec (``tweets:n=…,mode=…``) names a stream; its plan is the arguments and the event
time of every block boundary, small and JSON-serialisable so that it can travel inside
Spark partitions to the executors that draw the rows (:mod:`cep.io.tweets.generator`).
The constants every part of the generator agrees on (the modes, the stream's start, the
snowflake epoch) live here too, at the bottom of the package.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import cep.io.tweets.layout as lay
from cep.io.tweets.world import n_users

MODES = ("default", "zipf-periodic")
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in µs since the Unix epoch
TWITTER_EPOCH_MS = 1_288_834_974_657  # snowflake ids count milliseconds from here
DEFAULT_RATE = 1000.0  # tweets per second of event time
_PLAN_TIMES = 0x54494D45  # purpose of the generator of the blocks' durations


def _check(n: int, mode: str, seed: int, buckets: int, rate: float, users: int | None
           ) -> None:
    if n < 1:
        raise ValueError(f"tweets: n must be >= 1, got {n}")
    if users is not None and users < 1:
        raise ValueError(f"tweets: users must be >= 1, got {users}")
    if mode not in MODES:
        raise ValueError(f"tweets: unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"tweets: seed must be in [0, 2**63), got {seed}")
    if buckets < 1:
        raise ValueError(f"tweets: buckets must be >= 1, got {buckets}")
    if not 0 < rate <= 1e6:
        raise ValueError(f"tweets: rate must be in (0, 1e6] tweets/s, got {rate}")


def make_plan(
    n: int = 200_000,
    mode: str = "default",
    seed: int = 7,
    buckets: int = 4096,
    rate: float = DEFAULT_RATE,
    users: int | None = None,
) -> dict[str, Any]:
    """The plan of a stream: its arguments and the event time at every block boundary.
    ``users`` (default: one per ten tweets, ``n_users``) fixes the world the tweets are
    drawn from, so that a stream cut short (a bench's warm-up) is the same stream's start.

    A block of ``BLOCK`` Poisson arrivals lasts ``Gamma(BLOCK, 1/rate)`` seconds; drawing
    those durations here (one number per block) is what lets a range know its clock
    without generating the rows before it.
    """
    _check(n, mode, seed, buckets, rate, users)
    n_blocks = -(-n // lay.BLOCK)
    rng = np.random.Generator(np.random.PCG64([seed, _PLAN_TIMES]))
    starts = np.concatenate([[0.0], np.cumsum(rng.standard_gamma(lay.BLOCK, n_blocks) / rate)])
    return {
        "n": n, "mode": mode, "seed": seed, "buckets": buckets, "rate": rate,
        "users": n_users(n) if users is None else users,
        "block": lay.BLOCK, "block_start_s": starts.tolist(),
    }  # fmt: skip


def tweets_plan(spec: str) -> dict[str, Any]:
    """The plan of the stream an input spec names (``tweets``, ``tweets:n=...,mode=...``).

    Small and JSON-serialisable (the arguments plus one float per block of
    ``BLOCK`` rows) so it can travel inside Spark partitions;
    :func:`cep.io.tweets.generator.tweets_range` turns it into rows. ``ValueError`` for a
    bad spec or bad arguments.
    """
    return make_plan(**parse_spec(spec))


_SPEC_TYPES: dict[str, type] = {"n": int, "mode": str, "seed": int, "buckets": int, "rate": float,
                                 "users": int}


def parse_spec(spec: str) -> dict[str, Any]:
    """Keyword arguments of :func:`cep.io.tweets.generator.generate_tweets` from an
    input spec.

    ``tweets`` → ``{}`` (all defaults); ``tweets:n=2950000,mode=zipf-periodic,seed=7`` →
    ``{"n": 2950000, "mode": "zipf-periodic", "seed": 7}``. Only keys that are given are
    returned, so a caller can tell an explicit ``buckets`` from the default. Keys: ``n``,
    ``mode``, ``seed``, ``buckets``, ``users`` (ints except ``mode``) and ``rate`` (tweets
    per second of event time, a number). Anything else is a ``ValueError`` naming the problem.
    """
    name, sep, params = spec.strip().partition(":")
    if name.strip() != "tweets":
        raise ValueError(f"not a tweets spec: {spec!r} (expected 'tweets[:key=value,...]')")
    out: dict[str, Any] = {}
    if not sep:
        return out
    if not params.strip():
        raise ValueError(f"tweets spec {spec!r}: nothing after ':'")
    for item in params.split(","):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key or not value:
            raise ValueError(f"tweets spec {spec!r}: expected key=value, got {item.strip()!r}")
        if key not in _SPEC_TYPES:
            raise ValueError(
                f"tweets spec {spec!r}: unknown key {key!r}; known keys: {', '.join(_SPEC_TYPES)}"
            )
        if key in out:
            raise ValueError(f"tweets spec {spec!r}: key {key!r} given twice")
        try:
            parsed = _SPEC_TYPES[key](value)
        except ValueError:
            kind = _SPEC_TYPES[key].__name__
            raise ValueError(f"tweets spec {spec!r}: {key} must be {kind}, got {value!r}") from None
        out[key] = parsed
    if "mode" in out and out["mode"] not in MODES:
        raise ValueError(
            f"tweets spec {spec!r}: unknown mode {out['mode']!r}; expected one of "
            f"{', '.join(MODES)}"
        )
    return out
