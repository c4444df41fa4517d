"""Reading a run's metrics as it writes them: only what is new, and old batches on demand.

Two places hold a run's per-batch metrics (``cep.spark.output.sink``): its run directory
(``--checkpoint DIR``: ``DIR/metrics/batch-<b>.json``, one file per batch, written
atomically) and a ``--metrics FILE`` (JSON lines, appended per batch; a replayed batch
truncates the file back and appends again). Both grow while the run goes on; a poll must
cost what the new batches cost, not what the run has written, so each reader remembers
where it stopped: the next batch number (a file per batch) or the byte offset (JSON
lines). Older batches are read again only when the page asks for them (``history``).
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from cep.ui.errors import UiError
from cep.ui.points import is_batch_record


class RunDirReader:
    """``DIR/metrics/batch-<b>.json`` of a run directory (which may not exist yet)."""

    kind = "run directory"

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.metrics_dir = run_dir / "metrics"
        self._next: int | None = None  # the first batch not read yet
        self._listed_at = -1  # the directory's mtime at the last listing

    def new_records(self) -> list[dict]:
        """Records of the batches committed since the last call, in batch order. A
        poll with nothing new costs one ``stat``; a listing happens once per change of
        the directory that the next file's name did not explain (a first look, a gap)."""
        out = []
        while True:
            if self._next is not None:
                record = self._load(self._next)
                if record is not None:
                    out.append(record)
                    self._next += 1
                    continue
            later = self._list_after(self._next)
            if not later:
                return out
            self._next = later[0]

    def _list_after(self, batch: int | None) -> list[int]:
        try:
            changed = self.metrics_dir.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        if changed == self._listed_at:
            return []
        self._listed_at = changed
        return sorted(b for b in self._batches() if batch is None or b > batch)

    def _batches(self) -> Iterator[int]:
        for name in os.listdir(self.metrics_dir):
            if name.startswith("batch-") and name.endswith(".json"):
                digits = name[len("batch-"):-len(".json")]
                if digits.isdigit():
                    yield int(digits)

    def _load(self, batch: int) -> dict | None:
        try:
            record = json.loads((self.metrics_dir / f"batch-{batch:07d}.json").read_text())
        except (FileNotFoundError, ValueError):
            return None
        return record if is_batch_record(record) else None

    def history(self, before: int, count: int) -> list[dict]:
        """Up to ``count`` records of the batches before ``before`` (and the one before
        those, for the first one's duration), oldest first."""
        out = []
        for batch in range(max(0, before - count - 1), before):
            record = self._load(batch)
            if record is not None:
                out.append(record)
        return out

    def manifest(self) -> dict:
        """The run's ``run.json`` (run id, engines, strategy, inputs), if written yet."""
        try:
            return json.loads((self.run_dir / "run.json").read_text())
        except (FileNotFoundError, ValueError):
            return {}


class MetricsFileReader:
    """A ``--metrics`` JSON-lines file, tailed from where the last read stopped."""

    kind = "metrics file"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self.reset = False  # set when the file was rewritten: start over

    def new_records(self) -> list[dict]:
        """Whole lines appended since the last call. A file shorter than what was read,
        or a line that does not parse where one should start, means a replay rewrote
        its end: then ``reset`` is set and the whole file is read again."""
        self.reset = False
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if size < self._offset:
            self._offset, self.reset = 0, True
        records = self._read(size, strict=self._offset > 0)
        if records is None:
            self._offset, self.reset = 0, True
            records = self._read(size, strict=False)
        assert records is not None
        return records

    def _read(self, size: int, strict: bool) -> list[dict] | None:
        """The records in [offset, size), up to the last whole line. ``strict``: None at
        a line that is not JSON (the end was rewritten); else such lines are skipped."""
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            text = fh.read(max(0, size - self._offset))
        whole = text[: text.rfind(b"\n") + 1]
        records = []
        for line in whole.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if strict:
                    return None
                continue
            if is_batch_record(record):
                records.append(record)
        self._offset += len(whole)
        return records

    def history(self, before: int, count: int) -> list[dict]:
        """As :meth:`RunDirReader.history`, by one pass over the file."""
        kept: deque[dict] = deque(maxlen=count + 1)
        with open(self.path, "rb") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if is_batch_record(record) and record["batch"] < before:
                    kept.append(record)
        return list(kept)

    def manifest(self) -> dict:
        return {}


MetricsReader = RunDirReader | MetricsFileReader


def open_reader(path: Path) -> MetricsReader:
    """The reader for a run directory or a metrics file; a UiError if it is neither."""
    if path.is_dir():
        return RunDirReader(path)
    if path.is_file():
        return MetricsFileReader(path)
    raise UiError(f"no run at {path}: give a run's --checkpoint directory or its "
                  "--metrics file")
