"""Key maps as executors see them: read from MongoDB once per version, then cached.

Part of the Splitter (see ``splitter/__init__.py``): the maps the Balancer
writes (``balancer.py``), as the routers of moved keys (``routing.map_grouping``), the
engines' imports and exports and the Balancer itself read them.

Maps are write-once (a version never changes after it is written), so a cache keyed by
(run, version) is always right. A missing map is an error: assuming key grouping instead
would silently route a moved key to an engine that does not have its state.

Batch t needs versions t-1 to t+2 (routing, imports, exports, the Balancer), so the
cache keeps the ``KEPT`` most recently used: kept whole, it grew by one map per batch in
every process, the driver's included, for as long as the stream ran.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from migration.protocol import KeyMap

if TYPE_CHECKING:  # pymongo is imported only where keys move (a MongoDB store)
    from migration.store import StateStore

KEPT = 16  # maps per process
_CACHE: OrderedDict[tuple[str, int], KeyMap] = OrderedDict()


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
        while len(_CACHE) > KEPT:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(cache_key)
    return found


def remember(store: StateStore, version: int, written: KeyMap) -> None:
    """Cache the map this process has just written as ``version`` (the Balancer's
    ``M[t+2]``, which it reads back as ``M[t+1]`` after the next batch): a write that
    succeeded is what every reader decodes, so the round trip is saved."""
    _CACHE[(store.run_id, version)] = written
    while len(_CACHE) > KEPT:
        _CACHE.popitem(last=False)


def prime(store: StateStore, maps: dict[int, bytes]) -> None:
    """Cache maps another process read from ``store`` (an input task sends the engines
    the maps of their batch in the payloads, ``routing.map_grouping``): maps are
    write-once, so bytes read anywhere are the map; only versions not cached yet are
    decoded."""
    for version, data in maps.items():
        if (store.run_id, version) not in _CACHE:
            remember(store, version, KeyMap.decode(data))
