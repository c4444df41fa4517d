"""Per-key data windows, vectorised across every key an engine owns.

All keys' retained rows of one window live in one table sorted by (key, effective time,
seq, sub): the order the key's events are processed in. A batch is merged into it, each
triggering row gets its window as a segment ``[lo, hi)`` of the merged rows, and
afterwards only the rows a future event can still see are retained.

A row's *effective time* (``__time``, given by the engine: ``cep.engine.clock``) is its
event's timestamp, or the watermark when the event came late; per key it never goes
backwards. ``#time(T)`` holds the rows with effective time in ``(t − T, t]`` (Esper's
``ext_timed``), and a row leaves once the watermark reaches its time + T, whether or not
its key has another event: no later event can see it (a later event is at or past the
watermark). ``#time_batch(T)`` buckets are aligned to multiples of T since the epoch. A
``#keepall`` given a state time-to-live (``WindowSpec.ttl_us``) is retained and read
like ``#time(ttl)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cep.engine.keyed import SUB_RANGE, concat_keys, key_positions, split_by_key
from cep.engine.table import (
    KEY,
    RELEASE,
    SEQ,
    SUB,
    TIME,
    Table,
    code_order,
    concat,
    factorize,
    group_ends,
    group_starts,
    lexsorted,
    take,
)
from grammar import ir


def order_value(table: Table) -> np.ndarray:
    """(seq, sub) folded into one int64 that sorts like the pair."""
    return table[SEQ] * SUB_RANGE + table[SUB]


def processing_order(table: Table) -> tuple[np.ndarray, np.ndarray]:
    """(effective time, (seq, sub)): the order a key's rows are processed in."""
    return table[TIME], order_value(table)


def count_before(row_codes: np.ndarray, row_values: tuple[np.ndarray, ...],
                 query_codes: np.ndarray, query_values: tuple[np.ndarray, ...],
                 inclusive: bool) -> np.ndarray:
    """For each query, how many rows sort before it by (code, values...).

    Rows must be sorted by (code, values...). ``inclusive`` counts rows equal to the
    query too. One lexsort of rows and queries together; no Python loop.
    """
    n_rows = len(row_codes)
    if len(query_codes) == 0:
        return np.empty(0, dtype=np.int64)
    if len(row_values) == 1 and n_rows:
        found = _count_before_one(row_codes, row_values[0], query_codes, query_values[0],
                                  inclusive)
        if found is not None:
            return found
    codes = np.concatenate((row_codes, query_codes))
    values = [np.concatenate((r, q)) for r, q in zip(row_values, query_values, strict=True)]
    # queries sort before equal rows (exclusive) or after them (inclusive)
    flag = np.concatenate((np.full(n_rows, 0 if inclusive else 1, np.int8),
                           np.full(len(query_codes), 1 if inclusive else 0, np.int8)))
    order = np.lexsort((flag, *values[::-1], codes))
    is_row = order < n_rows
    rows_before = np.cumsum(is_row) - is_row
    out = np.empty(len(query_codes), dtype=np.int64)
    out[order[~is_row] - n_rows] = rows_before[~is_row]
    return out


def _count_before_one(row_codes: np.ndarray, row_values: np.ndarray,
                      query_codes: np.ndarray, query_values: np.ndarray,
                      inclusive: bool) -> np.ndarray | None:
    """:func:`count_before` of one value column by one binary search: (code, value) as
    one int64 ``code * span + value`` (values clipped to just outside the rows' range,
    so a query never reaches into the next key's rows), sorted like the pairs; None
    where that does not fit an int64. A ``#time`` window's 140k rows and 100k
    queries: one ``searchsorted`` instead of a three-key lexsort of both together."""
    if (row_values.dtype.kind not in "iu" or query_values.dtype.kind not in "iu"
            or row_codes.min() < 0 or query_codes.min() < 0):
        return None
    low, high = int(row_values.min()), int(row_values.max())
    span = high - low + 3  # values at low - 1 and high + 1 stand for below and above
    if ((int(max(row_codes.max(), query_codes.max())) + 1) * span >= 2**62
            or low - 1 < -2**63 or high + 1 >= 2**63):
        return None
    rows = row_codes.astype(np.int64) * span + (row_values.astype(np.int64) - (low - 1))
    clipped = np.clip(query_values.astype(np.int64), low - 1, high + 1) - (low - 1)
    queries = query_codes.astype(np.int64) * span + clipped
    return np.searchsorted(rows, queries, side="right" if inclusive else "left")


@dataclass
class Merged:
    """Retained rows plus a batch's rows of one window, sorted by (key, seq, sub)."""

    table: Table
    codes: np.ndarray
    is_new: np.ndarray
    gstart: np.ndarray
    gend: np.ndarray
    time: np.ndarray
    query_codes: np.ndarray  # codes of extra keys passed to merge (join triggers)
    release: np.ndarray  # where the batch's rows are processed (-1 for retained rows)


class KeyedWindow:
    """The retained rows of one window for all keys of an engine."""

    def __init__(self, spec: ir.WindowSpec) -> None:
        self.spec = spec
        self.rows: Table = {}
        # How far back in event time a sliding window reaches: #time's size, or the state
        # TTL that turns an unbounded #keepall into the same time-bounded window.
        self.horizon = spec.size if spec.kind == "time" else spec.ttl_us

    # ---- batch processing

    def merge(self, new_rows: Table, query_keys: np.ndarray | None = None) -> Merged:
        """Merge a batch (rows with their effective times) into the retained rows, in
        processing order."""
        n_old = len(self.rows[SEQ]) if self.rows else 0
        new_rows = dict(new_rows)
        n_new = len(new_rows[SEQ])
        # where a row is processed matters only in its batch: retained rows go without it
        release = np.concatenate((np.full(n_old, -1, np.int64),
                                  new_rows.pop(RELEASE, np.full(n_new, -1, np.int64))))
        table = concat([self.rows, new_rows]) if n_old else new_rows
        is_new = np.concatenate((np.zeros(n_old, bool), np.ones(n_new, bool)))
        keys = table[KEY]
        extra = query_keys if query_keys is not None else np.empty(0, dtype=object)
        all_codes = factorize(concat_keys(keys, extra))
        codes, query_codes = all_codes[: len(keys)], all_codes[len(keys):]
        order = _processing_order(table, codes, n_old)
        table = take(table, order)
        codes = codes[order]
        is_new = is_new[order]
        gend = group_ends(codes)
        gstart = group_starts(codes)
        return Merged(table, codes, is_new, gstart, gend, table[TIME], query_codes,
                      release[order])

    def sliding_segments(self, merged: Merged, codes: np.ndarray, hi: np.ndarray,
                         gstart: np.ndarray, clock: np.ndarray) -> np.ndarray:
        """``lo`` of each window that ends (exclusive) at ``hi`` in the merged rows.

        ``codes`` are the triggers' key codes, ``gstart`` the first merged row of their key
        and ``clock`` their key's effective time when they arrive."""
        if self.spec.kind == "length":
            return np.maximum(gstart, hi - self.spec.size)
        if self.horizon is None:  # keepall without a TTL
            return gstart
        # time: the first row of the key whose effective time is > clock − T
        first_alive = count_before(merged.codes, (merged.time,), codes,
                                   (clock - self.horizon,), inclusive=True)
        return np.minimum(np.maximum(gstart, first_alive), hi)

    def retain(self, merged: Merged, until: int, keep: np.ndarray | None = None) -> None:
        """Keep only rows a later event's window can still contain, once the watermark
        is at ``until`` (``keep``: those rows, when the operator already found them; see
        ``cep.engine.windows.kinds``)."""
        if keep is not None:
            self.rows = take(merged.table, keep)
            return
        idx = np.arange(len(merged.codes))
        kind, size = self.spec.kind, self.spec.size
        if kind == "length":
            keep = merged.gend - idx <= size
        elif self.horizon is not None:  # time, or keepall under a TTL
            keep = merged.time > until - self.horizon
        elif kind == "length_batch":
            length = merged.gend - merged.gstart
            keep = (idx - merged.gstart) >= (length // size) * size
        elif kind == "time_batch":  # the buckets the watermark has not closed
            keep = bucket_ends(merged.time, size) > until
        else:
            keep = np.ones(len(idx), dtype=bool)
        self.rows = take(merged.table, keep)

    def due_keys(self, until: int) -> list:
        """The keys whose rows change by themselves once the watermark is at ``until``:
        a row leaves a ``#time`` window, a ``#time_batch`` bucket closes, a
        ``#firsttime`` window or a ``#time_length_batch`` batch ends by time."""
        if not self.rows or not len(self.rows[SEQ]):
            return []
        time, kind, size = self.rows[TIME], self.spec.kind, self.spec.size
        if self.horizon is not None:
            hit = time <= until - self.horizon
        elif kind == "time_batch":
            hit = bucket_ends(time, size) <= until
        elif kind in ("firsttime", "time_length_batch"):
            codes = factorize(self.rows[KEY])
            first = pd.Series(time).groupby(codes).transform("min").to_numpy()
            hit = first <= until - size
            if kind == "firsttime":  # only its first row left: nothing more to do
                hit &= np.bincount(codes)[codes] > 1
        else:
            return []
        return list(dict.fromkeys(self.rows[KEY][hit].tolist()))

    # ---- per-key state

    def keys(self) -> set:
        # one hash pass before the set: a resident engine's windows hold many rows a key
        return set(pd.unique(self.rows[KEY]).tolist()) if self.rows else set()

    def export(self, keys: list) -> dict[object, Table]:
        """The retained rows of each key that has any (removed from this window)."""
        if not self.rows or not keys:
            return {}
        parts, self.rows = split_by_key(self.rows, keys)
        return parts

    def import_rows(self, parts: list[Table]) -> None:
        """Add keys' rows (from ``export`` elsewhere); sorted again at the next merge."""
        parts = [p for p in parts if p and len(p[SEQ])]
        if parts:
            self.rows = concat([self.rows, *parts]) if self.rows else concat(parts)

    def split_off(self, keys: np.ndarray) -> tuple[Table, np.ndarray]:
        """Remove the rows of ``keys`` and return them with the index in ``keys`` of
        each one's key: one mask over the rows, never a loop per key (a resident engine
        hands a batch's keys to a work engine)."""
        if not self.rows:
            return {}, np.empty(0, dtype=np.int64)
        at = key_positions(keys, self.rows[KEY])
        mine = at >= 0
        gone = take(self.rows, mine)
        self.rows = take(self.rows, ~mine)
        return gone, at[mine]


def _processing_order(table: Table, codes: np.ndarray, n_old: int) -> np.ndarray:
    """``np.lexsort((SUB, SEQ, TIME, codes))`` of a merge's rows (the retained rows,
    then the batch's), found without four sorts where the rows allow: the retained rows
    are in that order already (a merge's order, kept by ``retain``) and a key's new rows
    come after its old ones (its effective time never goes back, its seqs grow), so one
    stable sort by key code (a radix sort) of the retained rows, then the batch's in
    processing order, gives it. Checked, and sorted in full where it does not hold
    (rows imported from another engine, out-of-order events). 140k rows: 25 ms of
    lexsort against about 4 ms."""
    n = len(codes)
    new = n_old + lexsorted((table[SUB][n_old:], table[SEQ][n_old:], table[TIME][n_old:]))
    candidate = np.concatenate((np.arange(n_old), new)) if n_old else new
    candidate = candidate[code_order(codes[candidate])] if n else candidate
    return lexsorted((table[SUB], table[SEQ], table[TIME], codes), candidate)


def _from_end(codes: np.ndarray, n_keys: int) -> np.ndarray:
    """For rows sorted by key position ``codes``: how many rows of the same key follow."""
    ends = np.cumsum(np.bincount(codes, minlength=n_keys))
    return ends[codes] - 1 - np.arange(len(codes))


def window_changes(began: Table, was: np.ndarray, rows: Table, keys: np.ndarray
                   ) -> tuple[np.ndarray, Table]:
    """How a window's rows of ``keys`` went from ``began`` (each row's key at index
    ``was`` of ``keys``) to ``rows``, as what :func:`apply_window_changes` replays: per
    key, how many of its last rows in ``began`` it kept, and the rows that came after.

    Why not the rows themselves: a window keeps a key's last rows (FSD: 500) and a batch
    adds a few (FSD: about 25 per key in a 100k-tweet batch), so the change is what a
    batch costs to write. Rows only leave a key's window at its front and arrive at its
    back, ordered by (seq, sub), in every window kind but ``#unique``; a key whose rows
    changed any other way is written whole (kept 0), so this cannot change a state."""
    n_keys = len(keys)
    if not rows or not len(rows[SEQ]):
        return np.zeros(n_keys, dtype=np.int64), {}
    at = key_positions(keys, rows[KEY])
    if (at < 0).any():
        raise ValueError("window rows of a key outside the batch's keys")
    if not began or not len(began[SEQ]):
        return np.zeros(n_keys, dtype=np.int64), rows
    old_order = order_value(began)
    by_key = np.lexsort((old_order, was))
    was, old_order = was[by_key], old_order[by_key]
    order = order_value(rows)
    sorter = np.lexsort((order, at))
    at, order = at[sorter], order[sorter]
    counts = np.bincount(was, minlength=n_keys)
    last = np.full(n_keys, np.iinfo(np.int64).min, dtype=np.int64)
    ends = np.cumsum(counts)
    has = counts > 0
    last[has] = old_order[ends[has] - 1]
    old = order <= last[at]
    kept = np.bincount(at[old], minlength=n_keys)
    good = kept <= counts
    in_began = (_from_end(was, n_keys) < kept[was]) & good[was]
    in_rows = old & good[at]
    differ = old_order[in_began] != order[in_rows]
    good[was[in_began][differ]] = False
    appended = take(rows, sorter[~old | ~good[at]])
    return np.where(good, kept, 0), appended


def apply_window_changes(rows: Table, keys: np.ndarray, kept: np.ndarray,
                         appended: Table) -> Table:
    """``rows`` after :func:`window_changes`' change: of each key of ``keys`` only its
    last ``kept`` rows stay, then ``appended`` comes after them."""
    if rows and len(rows[SEQ]):
        at = key_positions(keys, rows[KEY])
        touched = np.flatnonzero(at >= 0)
        if len(touched):
            codes = at[touched]
            order = rows[SEQ][touched] * SUB_RANGE + rows[SUB][touched]
            by_key = np.lexsort((order, codes))
            touched, codes = touched[by_key], codes[by_key]
            if (np.bincount(codes, minlength=len(keys)) < kept).any():
                raise ValueError("a window change keeps rows the window does not have")
            untouched = np.ones(len(at), dtype=bool)
            untouched[touched] = False
            rows = concat([take(rows, untouched),
                           take(rows, touched[_from_end(codes, len(keys)) < kept[codes]])])
        elif kept.any():
            raise ValueError("a window change keeps rows the window does not have")
    elif kept.any():
        raise ValueError("a window change keeps rows of an empty window")
    return concat([rows, appended])


class WindowState:
    """Key-state plumbing of an operator whose whole state is its key windows:
    the data window, plus the ``prior()`` buffer when the rule reads one. A key's state is
    a list with its rows of each window, in ``state_windows`` order."""

    window: KeyedWindow

    def state_windows(self) -> list[KeyedWindow]:
        return [self.window]

    def keys(self) -> set:
        return set().union(*(w.keys() for w in self.state_windows()))

    def export(self, keys: list) -> dict[object, object]:
        parts = [w.export(keys) for w in self.state_windows()]
        present = set().union(*parts)
        return {key: [part.get(key, {}) for part in parts] for key in keys if key in present}

    def import_states(self, states: dict[object, object]) -> None:
        for i, window in enumerate(self.state_windows()):
            window.import_rows([state[i] for state in states.values()])  # type: ignore[index]

    def snapshot(self) -> object:
        return [w.rows for w in self.state_windows()]

    def restore(self, rows: object) -> None:
        for window, part in zip(self.state_windows(), rows, strict=True):  # type: ignore[call-overload]
            window.rows = part

    def export_keyed(self, keys: list) -> dict[object, object]:
        """The keys' state outside the windows: none (see ``Engine.split_off``)."""
        return {}

    def import_keyed(self, states: dict[object, object]) -> None:
        if states:
            raise ValueError("a window rule's state is all in its windows")


def bucket_ends(time: np.ndarray, size: int) -> np.ndarray:
    """For ``#time_batch(size)``: when each row's bucket closes (its end, a deadline)."""
    return (np.floor_divide(time, size) + 1) * size


def batch_runs(merged: Merged, size: int) -> np.ndarray:
    """For ``#time_batch``: the index of the first row of each row's (key, bucket) run."""
    n = len(merged.codes)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    bucket = np.floor_divide(merged.time, size)
    boundary = np.empty(n, dtype=bool)
    boundary[0] = True
    boundary[1:] = (merged.codes[1:] != merged.codes[:-1]) | (bucket[1:] != bucket[:-1])
    starts = np.flatnonzero(boundary)
    return np.repeat(starts, np.diff(np.append(starts, n)))


