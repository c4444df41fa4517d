"""Small event streams for tests, without files: timestamps written as offsets from a
start (``"90s"``, ``"2 min"``, a number of seconds), and keys taken in turn.

A test about time reads best in offsets ("the reading 30 seconds after the first"), and
the rules' schemas want real timestamps: :class:`EventStream` turns one into the other.
The events are plain dicts, as :class:`cep.testing.RuleHarness` and ``Rules.run`` take
them (a list of dicts or a DataFrame)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

DEFAULT_START = "2026-03-01T12:00:00Z"
Offset = str | float | int | pd.Timedelta


def duration(offset: Offset) -> pd.Timedelta:
    """An offset as a duration: a ``pd.Timedelta``, text pandas reads (``"90s"``, ``"2
    min"``, ``"1h30m"``) or a number of seconds."""
    if isinstance(offset, pd.Timedelta):
        return offset
    if isinstance(offset, int | float):
        return pd.Timedelta(seconds=offset)
    return pd.Timedelta(offset)


def instant(value: str | pd.Timestamp) -> pd.Timestamp:
    """A point in time in UTC (text without an offset is UTC, as the readers take it)."""
    stamp = pd.Timestamp(value)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


class EventStream:
    """Events of one stream whose timestamp field ``ts`` is ``start`` plus an offset.

        s = EventStream(start="2026-03-01T12:00:00Z")
        s.at("0s", sensor="s1", temp=21.5)   # {"sensor": "s1", "temp": 21.5, "ts": Timestamp(...)}
        s.time("30s")                         # Timestamp('2026-03-01 12:00:30+0000')
    """

    def __init__(self, start: str | pd.Timestamp = DEFAULT_START, ts: str = "ts") -> None:
        self.start = instant(start)
        self.ts = ts

    def time(self, offset: Offset) -> pd.Timestamp:
        """The instant ``offset`` after the start."""
        return self.start + duration(offset)

    def at(self, offset: Offset, **fields: Any) -> dict[str, Any]:
        """One event ``offset`` after the start, with ``fields``."""
        return {**fields, self.ts: self.time(offset)}

    def every(self, step: Offset, keys: Sequence[Any], *, n: int | None = None,
              key: str = "key", first: Offset = 0,
              **fields: Any | Callable[[int], Any]) -> list[dict[str, Any]]:
        """``n`` events (default one per key) ``step`` apart from ``first``, their ``key``
        field taking ``keys`` in turn; a field given as a function gets the event's
        number (0, 1, …) and returns its value."""
        count = len(keys) if n is None else n
        out = []
        for i in range(count):
            values = {k: (v(i) if callable(v) else v) for k, v in fields.items()}
            out.append(self.at(duration(first) + i * duration(step),
                               **{key: keys[i % len(keys)]}, **values))
        return out


def events_frame(events: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Events as a DataFrame (what ``Rules.run`` takes as input)."""
    return pd.DataFrame.from_records(list(events))
