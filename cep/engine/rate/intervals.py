"""Output rate limiting's intervals for a whole batch at once, with array operations.

``cep.engine.rate.limit`` says what each clause releases; here is how, for every key of
a batch together: the rows are sorted by (key, interval, place), and each interval
releases its rows (ALL), its last row (LAST) or its first row (FIRST) when it closes.

``EVERY T``: a key's items (its interval-opening ticks and its result rows) never go
back in event time, so each item's interval is its time's multiple of T, and the key's
open interval (from its state) is the one its first items fall in, if they are in it.
An interval closes when a later interval of the key has an item (whose time is then at
or past its end) or when the watermark reaches its end; the key's last interval stays
open otherwise. ``ALL EVERY n EVENTS``: the key's rows are counted on from its state's
count, and each n-th row releases the rows since the last release.

Rows are given as :class:`Rows` (the columns a released row carries), each with its
key's index among the batch's keys; the rows a key holds from earlier batches come
first, then the batch's, in the order they were made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cep.engine.output import TIMER
from cep.engine.table import code_order

ROW_FIELDS = ("seq", "ts", "ts__null", "values", "at", "origin")


@dataclass(frozen=True)
class Rows:
    """Result rows: their key's index (``key``) and what a released row carries."""

    key: np.ndarray
    seq: np.ndarray
    ts: np.ndarray
    ts__null: np.ndarray
    values: np.ndarray
    at: np.ndarray
    origin: np.ndarray

    def take(self, index: np.ndarray) -> Rows:
        return Rows(*(getattr(self, f)[index] for f in ("key", *ROW_FIELDS)))

    def stamped(self, seq: np.ndarray, at: np.ndarray, origin: np.ndarray) -> Rows:
        """The rows released at these places in the reference order."""
        return Rows(self.key, seq, self.ts, self.ts__null, self.values, at, origin)

    def __len__(self) -> int:
        return len(self.key)


def concat_rows(parts: list[Rows]) -> Rows:
    return Rows(*(np.concatenate([getattr(p, f) for p in parts])
                  for f in ("key", *ROW_FIELDS)))


@dataclass(frozen=True)
class Released:
    """What a batch releases, and what stays pending: ``rows`` released (see
    :func:`every_time` for their order), ``pending`` the rows still held per key
    index, and per key its open interval after the batch (``open``: has one)."""

    rows: Rows
    pending: Rows
    open: np.ndarray
    bucket: np.ndarray
    first_bucket: np.ndarray  # FIRST: the key's latest interval whose first row left
    has_first: np.ndarray


def every_time(kind: str, period: int, n_keys: int, open_: np.ndarray, bucket: np.ndarray,
               has_first: np.ndarray, first_bucket: np.ndarray, held: Rows, rows: Rows,
               tick_key: np.ndarray, tick_time: np.ndarray, end: int,
               reach: Callable[[np.ndarray], np.ndarray], key_rank: np.ndarray
               ) -> Released:
    """``OUTPUT ALL|LAST|FIRST EVERY period``: keys' state (per key index: an open
    interval ``bucket`` where ``open_``; FIRST's last interval that released a row),
    ``held`` rows pending from earlier batches, the batch's result ``rows`` and ticks,
    the watermark ``end`` and ``reach`` (deadlines → seq where the watermark reaches
    each: ``Watermark.reach``). ALL and LAST release their rows in the reference order
    (``output.sort_output``'s, which then has nothing to sort): by deadline, then by
    key as ``key_rank`` (per key index: its place in the order of keys' JSON texts)
    ranks them, then in the order they were made; FIRST its rows in key order."""
    row_time = rows.at // 2
    open_keys = np.flatnonzero(open_)
    # every item with its key and interval; held rows are in their key's open interval
    keys = np.concatenate((open_keys, held.key, rows.key, tick_key)).astype(np.int64)
    buckets = np.concatenate((bucket[open_keys], bucket[held.key], row_time // period,
                              np.asarray(tick_time, np.int64) // period)).astype(np.int64)
    order = _grouped(keys, buckets)
    k, b = keys[order], buckets[order]
    starts = np.r_[True, (k[1:] != k[:-1]) | (b[1:] != b[:-1])] if len(k) else np.empty(0, bool)
    interval = np.empty(len(k), dtype=np.int64)
    interval[order] = np.cumsum(starts) - 1
    i_key, i_bucket = k[starts], b[starts]
    last = np.r_[i_key[1:] != i_key[:-1], True] if len(i_key) else np.empty(0, bool)
    i_end = (i_bucket + 1) * period
    closes = ~last | (i_end <= end)
    # the rows: held ones first, then the batch's, each with its interval; ordered by
    # interval as indices (``by_interval``), each row set taken once, not the whole
    n_held = len(held)
    every = concat_rows([held, rows])
    row_interval = interval[len(open_keys): len(open_keys) + len(every)]
    by_interval = code_order(row_interval)  # stable; intervals are in key order
    row_interval = row_interval[by_interval]
    first_row = np.r_[True, row_interval[1:] != row_interval[:-1]] if len(every) else \
        np.empty(0, bool)
    last_row = np.r_[row_interval[1:] != row_interval[:-1], True] if len(every) else \
        np.empty(0, bool)
    shut = closes[row_interval]
    new_open = np.zeros(n_keys, dtype=bool)
    new_bucket = np.zeros(n_keys, dtype=np.int64)
    still = ~closes
    new_open[i_key[still]] = True
    new_bucket[i_key[still]] = i_bucket[still]
    has_first, first_bucket = has_first.copy(), first_bucket.copy()
    if kind == "first":
        row_key = every.key[by_interval]
        from_batch = by_interval >= n_held
        fresh = first_row & from_batch & ~(
            has_first[row_key] & (first_bucket[row_key] == i_bucket[row_interval]))
        out = every.take(by_interval[fresh])
        newest = np.r_[out.key[1:] != out.key[:-1], True] if len(out) else fresh[:0]
        has_first[out.key[newest]] = True  # each key's latest interval (they ascend)
        first_bucket[out.key[newest]] = i_bucket[row_interval[fresh]][newest]
        return Released(out, every.take(np.empty(0, np.int64)), new_open, new_bucket,
                        first_bucket, has_first)
    keep = np.ones(len(every), dtype=bool) if kind == "all" else last_row
    out_at = shut & keep
    deadline = i_end[row_interval[out_at]]
    leaving = by_interval[out_at]
    by_release = _release_order(deadline, key_rank[every.key[leaving]], period)
    leave, deadline = every.take(leaving[by_release]), deadline[by_release]
    released = leave.stamped(_reached(deadline, reach), 2 * deadline,
                             np.full(len(leave), TIMER, np.int64))
    return Released(released, every.take(by_interval[~shut & keep]), new_open, new_bucket,
                    first_bucket, has_first)


def _release_order(deadline: np.ndarray, rank: np.ndarray, period: int) -> np.ndarray:
    """The stable order of released rows by (deadline, key rank): deadlines are
    multiples of the period, so their steps from the first are small ints."""
    if not len(deadline):
        return np.empty(0, dtype=np.int64)
    return _pair_order((deadline - int(deadline.min())) // period, rank)


def _reached(deadline: np.ndarray, reach: Callable[[np.ndarray], np.ndarray]
             ) -> np.ndarray:
    """``reach`` of ascending deadlines, asked once per distinct deadline (a batch's
    released rows share a few: one binary search each, not one per row)."""
    if not len(deadline):
        return np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, deadline[1:] != deadline[:-1]])
    seqs = np.asarray(reach(deadline[starts]), np.int64)
    return np.repeat(seqs, np.diff(np.append(starts, len(deadline))))


def _grouped(keys: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """An order of the items by (key, interval)."""
    if not len(keys):
        return np.empty(0, dtype=np.int64)
    return _pair_order(keys, buckets - int(buckets.min()))


def _pair_order(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """The stable order of rows by (major, minor), both non-negative ints: one sort of
    ``major * span + minor`` where that fits an int64 (``code_order``: a radix sort
    under 2**16, such as 4,096 keys by a dozen intervals, or 10 deadlines by 4,096 key
    ranks; 150k items: about a fifth of a lexsort's two stable sorts), else a lexsort."""
    span = int(minor.max()) + 1
    if (int(major.max()) + 1) * span >= 2**62:
        return np.lexsort((minor, major))
    return code_order(major.astype(np.int64) * span + minor)


def every_n_events(n: int, count: np.ndarray, held: Rows, rows: Rows
                   ) -> tuple[Rows, Rows, np.ndarray]:
    """``OUTPUT ALL EVERY n EVENTS``: per key index its ``count`` of rows so far and
    ``held`` rows (in key order); the batch's ``rows`` in the order they were made. The
    rows released (in key order, each block at the place of its n-th row), the rows
    held on (in key order) and each key's count after the batch."""
    per_key = np.bincount(rows.key, minlength=len(count))
    base = count % n
    rows = rows.take(np.argsort(rows.key, kind="stable"))
    place = np.arange(len(rows)) - (np.cumsum(per_key) - per_key)[rows.key]
    position = base[rows.key] + place + 1  # the row's count, on from the key's state
    block = (position - 1) // n  # held rows are in their key's block 0
    every = concat_rows([held, rows])
    every_block = np.concatenate((np.zeros(len(held), np.int64), block))
    sorter = np.argsort(every.key, kind="stable")  # per key: held rows, then the batch's
    every, every_block = every.take(sorter), every_block[sorter]
    shut = every_block < ((base + per_key) // n)[every.key]  # blocks the batch completes
    leave = every.take(shut)
    ender = np.flatnonzero(position % n == 0)  # each completed block's n-th row
    span = int(block.max(initial=0)) + 1  # (key, block) pairs as one sorted int
    at = ender[np.searchsorted(rows.key[ender] * span + block[ender],
                               leave.key * span + every_block[shut])]
    released = leave.stamped(rows.seq[at], rows.at[at], rows.origin[at])
    new_count = np.where(per_key > 0, (base + per_key - 1) % n + 1, count)
    return released, every.take(~shut), new_count
