"""An engine's key states of its last batch, left on the executor's host for its next.

Spark gives an engine's next batch to any idle Python worker. About every other batch it
is not the worker that ran the last one (the pool hands out the worker idle longest), and
that worker's memory (``engine_batch._WARM``) is then of no use: every key the batch touches
is read back from Spark's state store. For FSD that is about 0.7 ms per key, against
0.06 ms to decode the same bytes, and it was 28 of the 30 task seconds of restoring in a
2.95M-tweet run. So each batch also leaves the states of the keys it has just written
in one file per engine, which any worker on the same host can read for the engine's
next batch: one :mod:`cep.engine.codec` blob of the keys' states and of their layouts in
the state store (``key_layout.pack``), so that batch too writes only what changed.

The state store stays the truth. A file only holds the keys its batch wrote, and only
the very next batch of the same query start and engine reads it; a key not in it is
read from the state store as before. The files are data only (the codec never runs
code), in a directory that must belong to this user and be closed to others; a
directory that is not, or a file that does not decode, is ignored, never trusted. A
batch keeps its file and the one before (a retried task reads that one again) and
deletes older ones, so the host holds at most two batches per engine.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

_NAME = re.compile(r"^(\d+)-(\d+)\.state$")  # engine label - batch
SHARED_MEMORY = "/dev/shm"
STALE_S = 3600.0  # a start's directory no batch wrote to for this long is a dead run's


def warm_root() -> Path:
    """This user's directory of engine files on this host: in shared memory where the
    host has it (the files are rewritten every batch and never need to reach a disk),
    else in the temporary directory."""
    base = SHARED_MEMORY if os.access(SHARED_MEMORY, os.W_OK | os.X_OK) else tempfile.gettempdir()
    return Path(base) / f"cep-warm-{os.getuid()}"


def _private(path: Path) -> bool:
    """A real directory of this user that no one else may write to or read."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o077)


class WarmFiles:
    """The files of one query start's engine (``label``) on this host."""

    def __init__(self, start: str, label: int, root: Path | None = None) -> None:
        self.root = root or warm_root()
        self.directory = self.root / start
        self.label = label

    def read(self, batch: int) -> bytes | None:
        """The blob the engine left in ``batch``; None when there is no trusted file."""
        path = self._path(batch)
        if not (_private(self.root) and _private(self.directory) and path.is_file()):
            return None
        try:
            return path.read_bytes()
        except OSError:
            return None

    def write(self, batch: int, blob: bytes) -> None:
        """Leave ``batch``'s blob (atomically: a reader sees all of it or nothing) and
        delete the files of batches before ``batch - 1``. A file that cannot be written
        (a full disk) is left out: the next batch reads the state store instead."""
        if not self._ready():
            return
        path = self._path(batch)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            temporary.write_bytes(blob)
            os.replace(temporary, path)
            for name in os.listdir(self.directory):
                found = _NAME.match(name)
                if found and int(found[1]) == self.label and int(found[2]) < batch - 1:
                    Path(self.directory, name).unlink(missing_ok=True)
        except OSError:  # also: the directory pruned meanwhile
            temporary.unlink(missing_ok=True)
            path.unlink(missing_ok=True)  # never an older batch's file under this name

    def _ready(self) -> bool:
        """Both directories exist and are private; a start's first write also deletes
        the files of starts no batch has written to for ``STALE_S`` (a run killed
        before it could remove its own)."""
        for directory in (self.root, self.directory):
            try:
                directory.mkdir(mode=0o700)
            except FileExistsError:
                pass
            except OSError:
                return False
            else:
                if directory == self.directory:
                    _prune(self.root, keep=directory.name)
            if not _private(directory):
                return False
        return True

    def _path(self, batch: int) -> Path:
        return self.directory / f"{self.label}-{batch}.state"


def _prune(root: Path, keep: str) -> None:
    """Delete other starts' directories untouched for ``STALE_S``. A live run that
    lost its files only reads its keys from the state store again."""
    cutoff = time.time() - STALE_S
    for entry in os.scandir(root):
        try:
            stale = entry.name != keep and entry.stat(follow_symlinks=False).st_mtime < cutoff
        except OSError:
            continue
        if stale:
            remove_start(entry.name, root)


def remove_start(start: str, root: Path | None = None) -> None:
    """Delete a query start's files on this host (the run is over)."""
    directory = (root or warm_root()) / start
    if _private(directory):
        shutil.rmtree(directory, ignore_errors=True)
