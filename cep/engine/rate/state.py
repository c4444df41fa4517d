"""Output rate limiting's per-key state as columns, for every clause but SNAPSHOT EVERY T.

Measured gain (the bench's rows, 1M events, 4096 keys, 100k-event batches, CPU seconds
of ``run_reference``, interleaved rounds against the per-key dicts on a shared 2-core
machine at load 3 to 6): ``OUTPUT ALL EVERY 10 sec`` 1.07-1.28x (median 1.22x: 343k to
420k events/s), ``OUTPUT LAST EVERY 5 EVENTS`` 1.10-1.33x with ``table.lexsorted``.
The per-key dicts cost, per batch, a Python step per key to read them and one per key
to write them back (with its timer), and one per pending row each way.

What a key holds (``cep.engine.rate.limit`` says why): its count of result rows
(EVERY n EVENTS), its open interval (EVERY T), the last interval whose first row left
(FIRST EVERY T) and its pending rows. Here each is one array over the keys held (the
keys in an object array, found with ``windows.key_positions``: one hash pass, no Python
step per key), and the pending rows of all keys are one table with a ``key`` column,
each key's rows in the order they were made. That column holds the key's place in the
keys held, not the key itself: a batch then finds its keys' rows, and lets go of
others', by integer indexing, where matching every pending row's key object (as many
rows as a batch makes, for ``OUTPUT ALL EVERY T``) by hash cost two hash passes a
batch. A key's next deadline (its open
interval's end) is read off the columns, so no timer index is kept.

The state leaves and enters as it always did, a dict of plain values per key
(:data:`EMPTY`'s fields; pending rows as lists ``[seq, ts, ts is null, values, at,
origin]``): parcels, changes and snapshots written before this module read the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.keyed import key_positions
from cep.engine.rate.intervals import ROW_FIELDS, Rows
from cep.engine.table import Table, code_order, object_array, take

EMPTY = {"count": 0, "bucket": None, "first_bucket": None, "pending": [], "latest": None}
PENDING_DTYPES = {"key": np.int64, "seq": np.int64, "ts": np.int64, "ts__null": bool,
                  "values": object, "at": np.int64, "origin": np.int64}


def _pending(rows: dict[str, list | np.ndarray]) -> Table:
    """A pending table of these columns (``PENDING_DTYPES``' order and types)."""
    return {name: (object_array(list(rows[name])) if dtype is object
                   else np.asarray(rows[name], dtype=dtype))
            for name, dtype in PENDING_DTYPES.items()}


@dataclass
class Found:
    """The state of a batch's keys (one entry per key, in the batch's key order) and
    the rows they hold pending (``key``: the index among the batch's keys)."""

    count: np.ndarray
    open: np.ndarray
    bucket: np.ndarray
    has_first: np.ndarray
    first_bucket: np.ndarray
    held: Rows


class RateState:
    """Every key's output state of one rate-limited rule, as columns."""

    def __init__(self, period: int | None, events: int | None) -> None:
        self.period = period
        self.events = events
        self.keys = object_array([])
        self.count = np.empty(0, np.int64)
        self.open = np.empty(0, bool)
        self.bucket = np.empty(0, np.int64)
        self.has_first = np.empty(0, bool)
        self.first_bucket = np.empty(0, np.int64)
        self.pending: Table = _pending({name: [] for name in PENDING_DTYPES})

    # ---- a batch's keys

    def find(self, keys: np.ndarray) -> Found:
        """The state of ``keys`` (an object array of distinct keys; those without state
        get :data:`EMPTY`'s) and their pending rows, key by key in ``keys`` order, each
        key's rows in the order they were made."""
        at = key_positions(self.keys, keys)
        known = at >= 0
        where = np.where(known, at, 0)

        def column(values: np.ndarray, blank: object) -> np.ndarray:
            if not len(values):
                return np.full(len(keys), blank, dtype=values.dtype)
            return np.where(known, values[where], blank)

        batch_index = np.full(len(self.keys), -1, dtype=np.int64)  # held key → keys'
        batch_index[at[known]] = np.flatnonzero(known)
        held_at = batch_index[self.pending["key"]]
        mine = np.flatnonzero(held_at >= 0)
        mine = mine[_stable_order(held_at[mine])]
        held = Rows(held_at[mine], *(self.pending[c][mine] for c in ROW_FIELDS))
        return Found(column(self.count, 0), column(self.open, False),
                     column(self.bucket, 0), column(self.has_first, False),
                     column(self.first_bucket, 0), held)

    def store(self, keys: np.ndarray, count: np.ndarray, open_: np.ndarray,
              bucket: np.ndarray, has_first: np.ndarray, first_bucket: np.ndarray,
              pending: Rows) -> None:
        """Replace the state of ``keys`` (as :meth:`find` was given them) by these
        columns and ``pending`` rows (``key``: index among ``keys``); a key with nothing
        open, counted or pending is let go."""
        holds = np.bincount(pending.key, minlength=len(keys)) > 0
        counting = count % self.events != 0 if self.events else np.zeros(len(keys), bool)
        keep = open_ | counting | holds
        stay = key_positions(keys, self.keys) < 0
        n_stay = int(stay.sum())
        self.keys = np.concatenate((self.keys[stay], keys[keep]))
        self.count = np.concatenate((self.count[stay], count[keep]))
        self.open = np.concatenate((self.open[stay], open_[keep]))
        self.bucket = np.concatenate((self.bucket[stay], bucket[keep]))
        self.has_first = np.concatenate((self.has_first[stay], has_first[keep]))
        self.first_bucket = np.concatenate((self.first_bucket[stay], first_bucket[keep]))
        # pending rows: the other keys' rows (their keys' places renumbered), then these
        slot = self.pending["key"]
        others = stay[slot]
        place = {"key": (np.cumsum(stay) - 1)[slot[others]]}
        added = {"key": n_stay + np.cumsum(keep)[pending.key] - 1,
                 **{c: getattr(pending, c) for c in ROW_FIELDS}}
        self.pending = {name: np.concatenate((place.get(name, values[others]), added[name]))
                        for name, values in self.pending.items()}

    def due(self, until: int) -> np.ndarray:
        """The keys whose open interval ends at or before ``until``."""
        if self.period is None:
            return object_array([])
        return self.keys[self.open & ((self.bucket + 1) * self.period <= until)]

    # ---- keys leaving and entering, as one dict of plain values per key

    def held_keys(self) -> set:
        return set(self.keys.tolist())

    def take_out(self, keys: list) -> dict[object, dict]:
        """The state of those of ``keys`` held, as per-key dicts, removed."""
        wanted = object_array(list(keys))
        at = key_positions(wanted, self.keys)
        leaving = np.flatnonzero(at >= 0)
        if not len(leaving):
            return {}
        staying = np.ones(len(self.keys), bool)
        staying[leaving] = False
        moving = ~staying[self.pending["key"]]
        out: dict[object, dict] = {}
        for i in leaving.tolist():
            out[self.keys[i]] = {
                "count": int(self.count[i]),
                "bucket": int(self.bucket[i]) if self.open[i] else None,
                "first_bucket": int(self.first_bucket[i]) if self.has_first[i] else None,
                "pending": [], "latest": None}
        columns = [self.pending[c][moving].tolist() for c in ROW_FIELDS]
        for key, *row in zip(self.keys[self.pending["key"][moving]].tolist(), *columns,
                             strict=True):
            out[key]["pending"].append(row)
        self._keep(staying, ~moving)
        return out

    def put(self, states: dict[object, dict]) -> None:
        """Adopt keys' state given as per-key dicts (replacing what they held)."""
        if not states:
            return
        keys = object_array(list(states))
        values = list(states.values())
        count = np.array([int(s["count"]) for s in values], np.int64)
        bucket = [s["bucket"] for s in values]
        first = [s["first_bucket"] for s in values]
        rows = [(j, *row) for j, s in enumerate(values) for row in s["pending"]]
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in range(7)]
        held = _pending(dict(zip(("key", *ROW_FIELDS), columns, strict=True)))
        self.store(keys, count, np.array([b is not None for b in bucket], bool),
                   np.array([0 if b is None else b for b in bucket], np.int64),
                   np.array([f is not None for f in first], bool),
                   np.array([0 if f is None else f for f in first], np.int64),
                   Rows(*(held[c] for c in ("key", *ROW_FIELDS))))

    def as_dicts(self) -> dict[object, dict]:
        """Every key's state as per-key dicts (the state is left as it is)."""
        saved = (self.keys, self.count, self.open, self.bucket, self.has_first,
                 self.first_bucket, self.pending)
        out = self.take_out(self.keys.tolist())
        (self.keys, self.count, self.open, self.bucket, self.has_first,
         self.first_bucket, self.pending) = saved
        return out

    def _keep(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Keep the keys held where ``keys`` and the pending rows where ``rows`` (rows
        of kept keys only), renumbering the rows' keys."""
        place = np.cumsum(keys) - 1
        self.keys, self.count, self.open = self.keys[keys], self.count[keys], self.open[keys]
        self.bucket, self.has_first = self.bucket[keys], self.has_first[keys]
        self.first_bucket = self.first_bucket[keys]
        self.pending = take(self.pending, rows)
        self.pending["key"] = place[self.pending["key"]]


def _stable_order(codes: np.ndarray) -> np.ndarray:
    """A stable order of non-negative int codes: none to make when they ascend already
    (pending rows stay grouped by key in the order keys were stored)."""
    if len(codes) < 2 or (codes[1:] >= codes[:-1]).all():
        return np.arange(len(codes))
    return code_order(codes)
