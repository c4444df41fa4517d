"""A batch's dead letters at a glance: how many of each kind, and the latest reasons.

Built from the dead-letter JSON lines (``deadletter.DeadLetter``'s format) as the driver
passes them on, without parsing every line: a bad input can reject a whole batch, and a
live view needs only the counts and a few examples. A kind is counted by its exact
``"kind": "<kind>"`` text, which cannot occur inside another field (quotes in a reason
or a record are escaped there); only the last few lines are parsed.
"""

from __future__ import annotations

import json
from collections import deque

from cep.io.deadletter import KINDS

LATEST_REASONS = 5
RECORD_CHARS = 200  # of a rejected record's raw text, shown next to its reason
_MARKERS = {kind: f'"kind": "{kind}"'.encode() for kind in KINDS}


class DeadLetterSummary:
    """Feed it the dead-letter chunks of one batch (``observe``), then ``metrics()``."""

    def __init__(self) -> None:
        self.kinds: dict[str, int] = {}
        self._tail: deque[bytes] = deque(maxlen=LATEST_REASONS)

    def observe(self, chunk: bytes) -> bytes:
        """Count one chunk of JSON lines; returns it, to pass it on unchanged."""
        for kind, marker in _MARKERS.items():
            n = chunk.count(marker)
            if n:
                self.kinds[kind] = self.kinds.get(kind, 0) + n
        self._tail.extend(chunk.rstrip(b"\n").split(b"\n")[-LATEST_REASONS:])
        return chunk

    def metrics(self) -> dict:
        """``dead_letter_kinds`` and ``dead_letter_latest`` (oldest first), or nothing
        for a batch without dead letters."""
        latest = []
        for line in self._tail:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            latest.append({"kind": entry.get("kind"), "reason": entry.get("reason"),
                           "source": entry.get("source"), "offset": entry.get("offset"),
                           "record": str(entry.get("record", ""))[:RECORD_CHARS]})
        if not self.kinds and not latest:
            return {}
        return {"dead_letter_kinds": self.kinds, "dead_letter_latest": latest}
