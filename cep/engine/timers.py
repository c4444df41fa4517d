"""Which keys have a timer due: a per-key deadline index for the operators whose state is
a dict per key (patterns, MATCH_RECOGNIZE, output rate limiting).

Each key has at most one entry, its next deadline (the earliest moment event time
changes its state by itself: a ``timer:interval``, a WITHIN expiry, an interval's close);
the operator recomputes it whenever it has worked on the key. Asking for the keys due by
a watermark costs the due keys, not every key held: a heap with lazy deletion (a set
entry leaves the dict and stays in the heap until it surfaces). Window operators need
none: their deadlines follow from their rows, found with array operations.
"""

from __future__ import annotations

import heapq
import itertools


class TimerIndex:
    """Per key, its next deadline (µs of event time)."""

    def __init__(self) -> None:
        self.deadline: dict[object, int] = {}
        self._heap: list[tuple[int, int, object]] = []
        self._tie = itertools.count()  # keys of mixed types never compare

    def set(self, key: object, deadline: int | None) -> None:
        """The key's next deadline from now on (None: it has none)."""
        if deadline is None:
            self.deadline.pop(key, None)
            return
        if self.deadline.get(key) == deadline:
            return
        self.deadline[key] = deadline
        heapq.heappush(self._heap, (deadline, next(self._tie), key))
        if len(self._heap) > 2 * len(self.deadline) + 64:
            self._compact()

    def due(self, until: int) -> list:
        """The keys whose next deadline is at or before ``until``, earliest first."""
        found, seen, popped = [], set(), []
        while self._heap and self._heap[0][0] <= until:
            entry = heapq.heappop(self._heap)
            deadline, _, key = entry
            if self.deadline.get(key) == deadline and key not in seen:
                seen.add(key)
                found.append(key)
                popped.append(entry)
        for entry in popped:  # asking changes nothing
            heapq.heappush(self._heap, entry)
        return found

    def _compact(self) -> None:
        self._heap = [(d, next(self._tie), k) for k, d in self.deadline.items()]
        heapq.heapify(self._heap)
