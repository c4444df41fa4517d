"""The key maps an input task sends its batch's engines in the payloads, so an engine
asks MongoDB for no map (``routing.map_grouping.maps_for``, ``keymaps.prime``). Oracle:
the bytes the store holds for each version, which every process decodes alike (maps are
write-once), and the count of the store's reads."""

from __future__ import annotations

import uuid

import numpy as np

from migration.protocol import KeyMap, imports, key_text
from splitter import keymaps
from splitter.payload import pack_payload, unpack_payload
from splitter.routing import map_grouping


class Maps:
    """Write-once maps in memory, counting the reads (a process's view of MongoDB)."""

    def __init__(self) -> None:
        self.run_id = f"maps-{uuid.uuid4().hex}"
        self.maps: dict[int, bytes] = {}
        self.reads = 0

    def put_key_map(self, version: int, data: bytes) -> bool:
        return self.maps.setdefault(version, data) is data

    def get_key_map(self, version: int) -> bytes | None:
        self.reads += 1
        return self.maps.get(version)


def test_every_engine_gets_the_maps_of_its_batch_and_reads_none() -> None:
    store = Maps()
    for version, moved in enumerate([{}, {}, {key_text("a"): 2}, {key_text("a"): 2,
                                                                 key_text("b"): 0}]):
        store.put_key_map(version, KeyMap(3, moved).encode())
    router = map_grouping(store)
    keymaps._CACHE.clear()  # the input task: a process of its own
    owners = router(np.array(["a", "b", "c"], dtype=object), 2)
    sent = router.maps_for(2)
    assert sent == {v: store.maps[v] for v in (1, 2, 3)}
    assert owners.tolist() == KeyMap.decode(store.maps[2]).owners(
        np.array(["a", "b", "c"], dtype=object)).tolist()
    reads = store.reads
    for engine in range(3):
        payload = pack_payload(2, {}, None, {}, None, None, None, sent)
        *_, maps = unpack_payload(payload)
        keymaps._CACHE.clear()  # each engine: a process of its own
        keymaps.prime(store, maps)
        for version in (1, 2, 3):
            assert keymaps.key_map(store, version) == KeyMap.decode(store.maps[version])
        assert imports(engine, keymaps.key_map(store, 1), keymaps.key_map(store, 2)) == (
            [key_text("a")] if engine == 2 else [])
    assert store.reads == reads  # no engine asked the store


def test_batch_zero_sends_the_maps_there_are() -> None:
    store = Maps()
    for version in (0, 1):
        store.put_key_map(version, KeyMap(2).encode())
    assert sorted(map_grouping(store).maps_for(0)) == [0, 1]
