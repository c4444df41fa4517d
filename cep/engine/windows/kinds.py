"""Segments and retention of Esper's further data windows, vectorised across keys.

* ``#firstlength(n)``: a key's first n events, kept for ever; later events never enter,
  so they trigger nothing.
* ``#firsttime(T)``: the key's events whose effective time is below its first event's
  time + T (Esper starts the clock at statement start; a partitioned engine has no such
  moment, so each key's clock starts at its first event); later events trigger nothing.
  Once the watermark passes first + T the window is closed for good: only its first row
  is kept (what says when it began), the rest is freed.
* ``#time_length_batch(T, n)``: a batch starts at its first event and closes on its n-th
  event (which is in it and triggers), or when the watermark reaches T after the batch's
  first event (a timer: the batch's last event gives the row's fields, the deadline its
  time; an event at or after the deadline starts the next batch). Each batch depends on
  where the previous one closed, so batches are found one round per batch, all keys at
  once.
* ``#unique(e, ...)``: the newest event of each distinct value of the expressions. Its
  window is not a contiguous run of rows, so each trigger's window is gathered into a
  row layout of its own (rows repeated once per window that holds them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.expr import Env, evaluate
from cep.engine.table import code_order, factorize, sorted_unique
from cep.engine.windows.keyed_window import Merged
from grammar import ir


def first_window(spec: ir.WindowSpec, merged: Merged) -> np.ndarray:
    """For ``#firstlength``/``#firsttime``: which merged rows are in their key's window."""
    if spec.kind == "firstlength":
        return np.arange(len(merged.codes)) - merged.gstart < spec.size
    return merged.time < merged.time[merged.gstart] + spec.size


def first_time_kept(spec: ir.WindowSpec, merged: Merged, window: np.ndarray,
                    until: int) -> np.ndarray:
    """For ``#firsttime``: the rows to keep once the watermark is at ``until``: the
    window's rows while it is open, then only the key's first row."""
    idx = np.arange(len(merged.codes))
    closed = merged.time[merged.gstart] + spec.size <= until
    return window & (~closed | (idx == merged.gstart))


@dataclass(frozen=True)
class Batches:
    """Closed ``#time_length_batch`` batches ``[lo, hi)`` with their trigger rows and the
    deadline that closed each (-1: its n-th event did), and the rows of the batches
    still open."""

    lo: np.ndarray
    hi: np.ndarray
    trig: np.ndarray
    deadline: np.ndarray
    open_rows: np.ndarray


def time_length_batches(spec: ir.WindowSpec, merged: Merged, until: int) -> Batches:
    """Every batch that closes among the merged rows, the watermark being at ``until``
    (retained rows are the open batch of their key, so each key's first merged row
    starts a batch)."""
    n = len(merged.codes)
    open_rows = np.zeros(n, dtype=bool)
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return Batches(empty, empty, empty, empty, open_rows)
    # (key, time) as one sortable integer: key code × (n + 1) + rank of the time
    times = sorted_unique(merged.time)
    ordinal = merged.codes * (n + 1) + np.searchsorted(times, merged.time)
    start = np.flatnonzero(np.r_[True, merged.codes[1:] != merged.codes[:-1]])
    end = merged.gend[start]
    los, his, trigs, deadlines = [], [], [], []
    while len(start):
        limit = merged.time[start] + spec.size
        by_time = np.searchsorted(
            ordinal, merged.codes[start] * (n + 1) + np.searchsorted(times, limit), "left")
        by_count = start + spec.limit
        counted = (by_count <= by_time) & (by_count <= end)
        timed = ~counted & (limit <= until)
        hi = np.where(counted, by_count, by_time)
        closed = counted | timed
        los.append(start[closed])
        his.append(hi[closed])
        trigs.append((hi - 1)[closed])
        deadlines.append(np.where(counted, -1, limit)[closed])
        still_open = ~closed
        for s, e in zip(start[still_open].tolist(), end[still_open].tolist(), strict=True):
            open_rows[s:e] = True  # one slice per key, once
        start, end = hi[closed], end[closed]
        live = start < end
        start, end = start[live], end[live]
    return Batches(np.concatenate(los), np.concatenate(his), np.concatenate(trigs),
                   np.concatenate(deadlines), open_rows)


def unique_next(spec: ir.WindowSpec, merged: Merged) -> np.ndarray:
    """For ``#unique``: the index of the next merged row of the same key and unique value
    (``len`` when there is none: the row is its value's newest, the one retained)."""
    n = len(merged.codes)
    env = Env(n)
    env.bind_table("", merged.table)
    group = merged.codes.astype(np.int64)
    for expr in spec.unique_by:
        col = evaluate(expr, env)
        values = col.values
        if col.nulls is not None:  # NULL is a value of its own, as in Esper
            values = values.astype(object)
            values[col.nulls] = None
        code = factorize(values)
        if n:
            group = factorize(group * (int(code.max()) + 1) + code)
    order = code_order(group)  # by group, stably
    following = np.full(n, n, dtype=np.int64)
    same = group[order[1:]] == group[order[:-1]]
    following[order[:-1][same]] = order[1:][same]
    return following


@dataclass(frozen=True)
class Gathered:
    """Each trigger's window laid out as its own segment ``[lo, hi)`` of ``rows`` (indices
    into the merged rows, in arrival order within a segment)."""

    rows: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def gather_unique(merged: Merged, following: np.ndarray, trig: np.ndarray) -> Gathered:
    """The ``#unique`` window of every trigger: row i is in the window of each trigger t
    of its key with i ≤ t < following[i] (see `unique_next`)."""
    n = len(merged.codes)
    first = np.searchsorted(trig, np.arange(n), "left")
    stop = np.searchsorted(trig, np.minimum(following, merged.gend) - 1, "right")
    count = np.maximum(stop - first, 0)
    rows = np.repeat(np.arange(n), count)
    owner = np.repeat(first - (np.cumsum(count) - count), count) + np.arange(len(rows))
    order = code_order(owner)  # stable: rows ascend already within each owner
    sizes = np.bincount(owner, minlength=len(trig)).astype(np.int64)
    hi = np.cumsum(sizes)
    return Gathered(rows[order], hi - sizes, hi)
