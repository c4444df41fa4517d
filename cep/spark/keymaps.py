"""Key maps as executors see them: read from MongoDB once per version, then cached.

Maps are write-once (a version never changes after it is written), so a cache keyed by
(run, version) is always right. A missing map is an error: assuming key grouping instead
would silently route a moved key to an engine that does not have its state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from migration.protocol import KeyMap

if TYPE_CHECKING:  # pymongo is imported only where keys move (a MongoDB store)
    from migration.store import StateStore

_CACHE: dict[tuple[str, int], KeyMap] = {}


class MissingKeyMapError(RuntimeError):
    """A batch needs a key map version the Balancer has not written."""


def key_map(store: StateStore, version: int) -> KeyMap:
    """Map ``version`` of this run (cached per process)."""
    cache_key = (store.run_id, version)
    found = _CACHE.get(cache_key)
    if found is None:
        data = store.get_key_map(version)
        if data is None:
            raise MissingKeyMapError(f"key map version {version} of run {store.run_id} "
                                     "is missing")
        found = _CACHE[cache_key] = KeyMap.decode(data)
    return found
