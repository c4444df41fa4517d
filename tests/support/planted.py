"""A planted pickle for the tests that show state loading never runs code.

``planted_pickle(path)`` is what an attacker with write access to the MongoDB state
collection or the checkpoint would store: unpickling it opens (creates) ``path``.
"""

from __future__ import annotations

import pickle
from pathlib import Path


class _CreatesFile:
    """Unpickling this calls ``open(path, "w")``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (open, (str(self.path), "w"))


def planted_pickle(path: Path) -> bytes:
    """A pickle that creates ``path`` when loaded, checked to be armed first: loading a
    twin of it does create the twin's file (else a test of refusal would prove nothing)."""
    twin = path.with_name(path.name + ".control")
    pickle.loads(pickle.dumps(_CreatesFile(twin))).close()
    if not twin.exists():
        raise AssertionError("the planted payload did not run: it would prove nothing")
    twin.unlink()
    return pickle.dumps(_CreatesFile(path))
