"""The user's cache directory for the files cep makes (``$XDG_CACHE_HOME/cep`` or
``~/.cache/cep``), and whether a file there can be trusted.

A leaf: the JVM's files (``cep.spark.jvm.cache``) and the tweets generator's world
(``cep.io.tweets.world_cache``) both keep files here, and neither imports the other.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cep"


def is_private(path: Path) -> bool:
    """Owned by this user and writable by no one else (group and others)."""
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
