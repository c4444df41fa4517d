"""Each record a user function raised on is dead-lettered once per function, however
many batches evaluate it again.

A value can be computed again in a later batch for a record of an earlier one (a
window's aggregate over the rows it holds, a ``#time_batch`` bucket at its deadline),
and the Spark tasks of different batches, or of the input and the engines, do not know
what the others wrote. The reference runner keeps the first failure of each (record,
function) of its run (``udf_errors.distinct``); on Spark the driver does the same as it
appends a batch's dead letters: it drops a ``udf_error`` letter whose (source, offset,
function) an earlier batch delivered. What each batch delivered is kept in the run
directory (``ledgers/udf-seen/batch-N.json``, written before the batch's append), so a
restart remembers it, and a batch that runs again first forgets its own and later
batches' entries, as the append ledger truncates their letters.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

_KIND = b'"kind": "udf_error"'


class SeenFailures:
    """The (source, offset, function) of the ``udf_error`` letters delivered so far."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.seen: set[str] | None = None  # loaded at the first batch delivered

    def _load(self, batch: int) -> set[str]:
        seen: set[str] = set()
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("batch-*.json")):
                if int(path.stem.split("-")[1]) >= batch:  # not committed: runs again
                    path.unlink()
                else:
                    seen.update(json.loads(path.read_text(encoding="utf-8")))
        return seen

    def filter(self, batch: int, chunk: bytes) -> bytes:
        """``chunk``'s lines without the ``udf_error`` letters delivered before."""
        if _KIND not in chunk:
            return chunk
        if self.seen is None:
            self.seen = self._load(batch)
        kept, new = [], []
        for line in chunk.splitlines(keepends=True):
            if _KIND in line:
                entry = json.loads(line)
                key = json.dumps([entry["source"], entry["offset"],
                                  entry["reason"].split(" raised ", 1)[0]])
                if key in self.seen:
                    continue
                self.seen.add(key)
                new.append(key)
            kept.append(line)
        if new:
            self._write(batch, new)
        return b"".join(kept)

    def _write(self, batch: int, keys: list[str]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"batch-{batch:07d}.json"
        before = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump([*before, *keys], fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
