"""Output rate limiting's per-key state as it was kept before ``cep.engine.rate.state``:
a dict of plain values per key, read into arrays before each batch and written back
after, one Python step per key and per pending row, with a timer index for the open
intervals' ends. The oracle of the differential tests of the columnar state (the same
interface as :class:`cep.engine.rate.state.RateState`)."""

from __future__ import annotations

import numpy as np

from cep.engine.rate.intervals import ROW_FIELDS, Rows
from cep.engine.rate.state import EMPTY, Found
from cep.engine.table import object_array
from cep.engine.timers import TimerIndex


class DictRateState:
    """Every key's output state of one rate-limited rule, a dict per key."""

    def __init__(self, period: int | None, events: int | None) -> None:
        self.period = period
        self.events = events
        self.states: dict[object, dict] = {}
        self.timers = TimerIndex()

    def find(self, keys: np.ndarray) -> Found:
        states = [self.states.get(k) or {**EMPTY, "pending": []} for k in keys.tolist()]
        rows = [(j, *row) for j, state in enumerate(states) for row in state["pending"]]
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in range(7)]
        dtypes = (np.int64, np.int64, np.int64, bool, object, np.int64, np.int64)
        held = Rows(*(object_array(list(c)) if d is object else np.array(c, dtype=d)
                      for c, d in zip(columns, dtypes, strict=True)))
        bucket = [s["bucket"] for s in states]
        first = [s["first_bucket"] for s in states]
        return Found(np.array([s["count"] for s in states], np.int64),
                     np.array([b is not None for b in bucket], bool),
                     np.array([0 if b is None else b for b in bucket], np.int64),
                     np.array([f is not None for f in first], bool),
                     np.array([0 if f is None else f for f in first], np.int64), held)

    def store(self, keys: np.ndarray, count: np.ndarray, open_: np.ndarray,
              bucket: np.ndarray, has_first: np.ndarray, first_bucket: np.ndarray,
              pending: Rows) -> None:
        held: list[list] = [[] for _ in range(len(keys))]
        columns = [getattr(pending, c).tolist() for c in ROW_FIELDS]
        for j, *row in zip(pending.key.tolist(), *columns, strict=True):
            held[j].append(list(row))
        for j, key in enumerate(keys.tolist()):
            self.put({key: {"count": int(count[j]),
                            "bucket": int(bucket[j]) if open_[j] else None,
                            "first_bucket": int(first_bucket[j]) if has_first[j] else None,
                            "pending": held[j], "latest": None}})

    def due(self, until: int) -> np.ndarray:
        return object_array(self.timers.due(until))

    def held_keys(self) -> set:
        return set(self.states)

    def take_out(self, keys: list) -> dict[object, dict]:
        for key in keys:
            self.timers.set(key, None)
        return {k: self.states.pop(k) for k in keys if k in self.states}

    def put(self, states: dict[object, dict]) -> None:
        for key, state in states.items():
            counting = self.events is not None and state["count"] % self.events
            if state["bucket"] is None and not state["pending"] and not counting:
                self.states.pop(key, None)
                self.timers.set(key, None)
            else:
                self.states[key] = state
                self.timers.set(key, None if state["bucket"] is None
                                else (state["bucket"] + 1) * self.period)

    def as_dicts(self) -> dict[object, dict]:
        return dict(self.states)
