"""A seed's world kept on disk, so that a new process loads it instead of building it.

Why: every Python worker that draws tweets builds the world of its stream once
(:func:`cep.io.tweets.world.world`: the vocabulary, up to 200,000 handles and the
MinHash values of every token). Measured on this machine, a fresh process's first
range of ``tweets:n=3480000`` took 1.5-1.8 s on a full core, 1.38 s of it the world,
against 0.05 s for its next ranges; on an emulated 0.4-core node, or a node that joins a
running job, each new worker pays about 2.5 times that in its first batch. Measured with
this cache (`farm-bench`, 8 interleaved rounds of a whole process drawing its first range
of ``tweets:n=3480000``, medians): 1.25 s of wall and 1.45 s of CPU against 1.88 and
2.08 s without it, peak memory 329 MiB against 437.

The file is ``<cache>/tweets-world-<seed>-<users>-<digest>.npz``, the digest taken
over the source files that build a world, so a change to them makes a new file instead
of reading a stale one. Only plain arrays are stored (a text array as its UTF-8 bytes
and offsets, checked by Arrow when read) and read with ``allow_pickle=False``; a file
that is not this user's own, is writable by others, does not load or does not have the
expected shapes is ignored and the world is built again. A write goes to a temporary
name and is renamed into place, so workers that build the same world at once never read
half a file. A file read is marked used (its time set to now); a store removes the files
of other sources and the temporary files left by a killed writer once a day has passed
since their last use, so two cep versions that run at once keep their own files while
the cache still does not grow with each version.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from cep.user_cache import cache_dir, is_private

Arrays = dict[str, np.ndarray]
_UTF8, _OFFSETS = ".utf8", ".offsets"  # a text array's two stored arrays


def cached_arrays(family: str, name: str, sources: list[Path], build: Callable[[], Arrays],
                  valid: Callable[[Arrays], bool]) -> Arrays:
    """The arrays ``build`` makes, read from the cache when a file made from the same
    ``sources`` is there and ``valid``; else built, stored and returned. Object arrays
    of ``str`` come back as object arrays of ``str``. Storing removes the ``family``'s
    files made from other sources (an older cep's) and its abandoned temporary files,
    once unused for :data:`STALE_S`, so the cache does not grow with each version."""
    path = _path(f"{family}{name}", sources)
    found = _load(path)
    if found is not None and valid(found):
        with contextlib.suppress(OSError):
            os.utime(path)  # used: not stale to another version's store
        return found
    arrays = build()
    with contextlib.suppress(OSError):  # no cache (read-only home, full disk): build only
        _store(path, arrays)
        _prune(path, family)
    return arrays


STALE_S = 86_400.0  # a cache file unused this long, of other sources, goes


def _prune(kept: Path, family: str) -> None:
    """Remove the ``family``'s files whose digest is not ``kept``'s, and its temporary
    files, unused for :data:`STALE_S`."""
    digest = kept.stem.rsplit("-", 1)[1]
    stale_before = time.time() - STALE_S
    others = [old for old in kept.parent.glob(f"{family}*.npz")
              if old.stem.rsplit("-", 1)[1] != digest]
    for old in [*others, *kept.parent.glob(f"{family}*.tmp")]:
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < stale_before:
                old.unlink()


def _path(name: str, sources: list[Path]) -> Path:
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    return cache_dir() / f"{name}-{digest.hexdigest()[:16]}.npz"


def _load(path: Path) -> Arrays | None:
    try:
        if not (path.is_file() and is_private(path) and is_private(path.parent)):
            return None
        with np.load(path, allow_pickle=False) as stored:
            plain = {key: stored[key] for key in stored.files}
        return _texts_back(plain)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, pa.ArrowException):
        return None


def _texts_back(plain: Arrays) -> Arrays:
    """The arrays as stored, texts made object arrays of ``str`` again."""
    arrays = {}
    for key, value in plain.items():
        if key.endswith(_UTF8):
            name = key.removesuffix(_UTF8)
            offsets = plain[name + _OFFSETS]
            texts = pa.LargeStringArray.from_buffers(
                len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(value))
            texts.validate(full=True)  # UTF-8 and offsets checked before use
            arrays[name] = texts.to_numpy(zero_copy_only=False).astype(object)
        elif not key.endswith(_OFFSETS):
            arrays[key] = value
    return arrays


def _plain(arrays: Arrays) -> Arrays:
    """Texts (object arrays of ``str``) as their UTF-8 bytes and offsets: a tenth of
    NumPy's fixed-width Unicode for these words and handles, and no pickle."""
    plain = {}
    for key, value in arrays.items():
        if value.dtype == object:
            texts = pa.array(value, type=pa.large_string())
            _, offsets, data = texts.buffers()
            plain[key + _OFFSETS] = np.frombuffer(offsets, np.int64)[:len(texts) + 1].copy()
            plain[key + _UTF8] = (np.frombuffer(data, np.uint8).copy() if data is not None
                                  else np.zeros(0, np.uint8))
        else:
            plain[key] = value
    return plain


def _store(path: Path, arrays: Arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    plain = _plain(arrays)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **plain)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
