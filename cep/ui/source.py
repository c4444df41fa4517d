"""One watched run: its metrics reader and the state folded from it, shared by every
request the server answers.

Requests come from any number of pages and scrapers at once; the metrics are read again
at most every REFRESH_S seconds, on the thread of a request that finds them stale, so a
page polling each second and a Prometheus scraping each 15 s cost the run one small
read per new batch, and nothing while nobody looks.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cep.ui.points import batch_point
from cep.ui.reader import MetricsFileReader, MetricsReader, open_reader
from cep.ui.state import HISTORY_KEPT, LiveState

REFRESH_S = 0.5
HISTORY_PAGE = 2000  # most batches one history request returns


class RunSource:
    """A run directory or metrics file, read as it grows."""

    def __init__(self, path: Path, kept: int = HISTORY_KEPT) -> None:
        self.path = path
        self.reader: MetricsReader = open_reader(path)
        self.kept = kept
        self.state = LiveState(kept)
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._manifest: dict = {}  # run.json, written once at the run's start

    def refresh(self) -> LiveState:
        """The state with every batch committed so far (at most REFRESH_S old)."""
        with self._lock:
            now = time.monotonic()
            if now - self._read_at >= REFRESH_S:
                self._read_at = now
                records = self.reader.new_records()
                if isinstance(self.reader, MetricsFileReader) and self.reader.reset:
                    self.state = LiveState(self.kept)
                for record in records:
                    last = self.state.last_batch
                    if last is None or record["batch"] > last:
                        self.state.add(record)
            return self.state

    def snapshot(self, since: int | None = None, last_only: bool = False) -> dict:
        """The state for a page (``LiveState.snapshot``) and where it comes from;
        ``last_only``: only the last batch's figures (for ``/metrics``)."""
        state = self.refresh()
        with self._lock:
            if last_only and state.last_batch is not None:
                since = state.last_batch - 1
            return {"run": self.describe(), **state.snapshot(since)}

    def history(self, before: int, count: int) -> list[dict]:
        """Figures of up to ``count`` batches before batch ``before``, read from the
        metrics (the window in memory holds only the latest)."""
        count = max(0, min(count, HISTORY_PAGE))
        records = self.reader.history(before, count)
        points, previous = [], None
        for record in records:
            points.append(batch_point(record, previous))
            previous = record.get("wall_time")
        return points[-count:] if count else []

    def describe(self) -> dict:
        """Where the figures come from, and the run's manifest (its inputs masked)."""
        if not self._manifest:
            manifest = self.reader.manifest()
            if "inputs" in manifest:
                from cep.transports.mongo_client import (
                    mask_uri,  # pymongo: only for a run directory
                )

                manifest["inputs"] = {k: mask_uri(v) for k, v in manifest["inputs"].items()}
            self._manifest = manifest
        return {"path": str(self.path), "kind": self.reader.kind, "manifest": self._manifest}
