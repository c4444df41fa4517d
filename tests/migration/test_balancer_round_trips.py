"""What the Balancer asks of MongoDB per batch, on the session's embedded server: the map
it wrote is not read back, collection runs every ``GC_EVERY`` batches and never reaches
the documents a replay reads, a map is still written once, and a replayed batch keeps
the map decided first. Oracles: the bytes in the store (what every other process
decodes), and the protocol's horizon (batch t may be replayed: documents of t-1 stay)."""

from __future__ import annotations

import json

from migration.protocol import KeyMap
from migration.store import StateStore
from splitter import keymaps
from splitter.balancer import GC_EVERY, Balancer


def _skewed(batch: int) -> list[dict]:
    """Two engines' reports, one key heavy enough that DLB-L proposes moves."""
    load = {json.dumps(f"k{i}"): 1 + (40 if i == batch % 3 else 0) for i in range(12)}
    return [{"engine": 0, "key_load": load, "busy_s": 5.0}]


class Counting:
    """The store, counting the calls the Balancer makes."""

    def __init__(self, store: StateStore) -> None:
        self.store, self.gets, self.collected = store, 0, []
        self.run_id = store.run_id

    def put_key_map(self, version: int, data: bytes) -> bool:
        return self.store.put_key_map(version, data)

    def get_key_map(self, version: int) -> bytes | None:
        self.gets += 1
        return self.store.get_key_map(version)

    def gc(self, before_batch: int) -> int:
        self.collected.append(before_batch)
        return self.store.gc(before_batch)


def test_the_balancer_reads_no_map_it_wrote_and_collects_every_few_batches(
        store: StateStore) -> None:
    counting = Counting(store)
    balancer = Balancer(counting, "dlb-l", 2, threshold=1.0, moves="always")
    balancer.prepare()
    batches, moved = 2 * GC_EVERY + 1, 0
    for batch in range(batches):
        balancer(batch, _skewed(batch), {"stage_s": {}})
        decided = keymaps.key_map(counting, batch + 2)
        # the cached map is what the store holds for every other process
        assert decided == KeyMap.decode(store.get_key_map(batch + 2))
        moved += bool(decided.overrides)
    assert counting.gets == 1  # map 1, written by prepare() before the first batch
    assert counting.collected == [b - 1 for b in range(1, batches) if b % GC_EVERY == 0]
    assert moved  # the maps did move keys: they are not all key grouping's


def test_a_replayed_batch_keeps_the_map_written_first(store: StateStore) -> None:
    """A driver restarted before batch 3 committed decides batch 3 again, from other
    statistics: the map of batch 5 stays the bytes written first, and the Balancer
    reports the moves of that map."""
    first = Balancer(store, "dlb-l", 2, threshold=1.0, moves="always")
    first.prepare()
    for batch in range(4):
        first(batch, _skewed(batch), {"stage_s": {}})
    written = store.get_key_map(5)
    keymaps._CACHE.clear()  # a new driver process
    again = Balancer(store, "dlb-l", 2, threshold=1.0, moves="always")
    metrics: dict = {"stage_s": {}}
    again(3, _skewed(0), metrics)
    assert store.get_key_map(5) == written
    assert keymaps.key_map(store, 5) == KeyMap.decode(written)
    moved = KeyMap.decode(written).overrides.items() ^ KeyMap.decode(
        store.get_key_map(4)).overrides.items()
    assert metrics["keys_moved"] == len({text for text, _ in moved})
    assert not store.put_key_map(5, b"{}")  # write-once
