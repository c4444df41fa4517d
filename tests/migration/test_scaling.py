"""Scale changes as key-map changes (migration/scaling.py, migration/protocol.py): the jump
consistent hash against the paper's scalar loop, what KG moves going from N to N' engines
under each hash, and the protocol across maps of different engine counts on random
maps, checked against the rule spelled out (every key whose owner differs moves once,
from its old owner to its new one)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from migration.hashing import engine_of_hash, jump_hash, stable_hash
from migration.protocol import (
    KeyMap,
    by_owner,
    check_parcel,
    exports,
    imports,
    key_text,
    parcel_receivers,
    parcel_senders,
    rescaled,
)
from migration.scaling import Schedule, moved_share, rescale_map
from splitter.balancer import Balancer


def _jump_scalar(key: int, n: int) -> int:
    """Lamping and Veach's loop as printed in the paper, on Python ints."""
    b, j = -1, 0
    while j < n:
        b = j
        key = (key * 2862933555777941757 + 1) % (1 << 64)
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def test_jump_hash_is_the_paper_s_loop():
    hashes = stable_hash(np.arange(3000))
    for n in (1, 2, 7, 64):
        assert jump_hash(hashes, n).tolist() == [_jump_scalar(int(h), n) for h in hashes]


@pytest.mark.parametrize("n", [1, 2, 4, 9])
def test_going_from_n_to_n_plus_1_engines_moves_what_each_hash_says(n):
    """mod moves about N/(N+1) of the keys, jump about 1/(N+1), and only onto the new
    engine (no key moves between two engines that both stay)."""
    hashes = stable_hash(np.arange(60_000))
    mod_share = moved_share(n, n + 1, "mod", 60_000)
    jump_share = moved_share(n, n + 1, "jump", 60_000)
    print(f"{n}->{n + 1}: mod moves {mod_share:.3f} (N/(N+1) = {n / (n + 1):.3f}), "
          f"jump {jump_share:.3f} (1/(N+1) = {1 / (n + 1):.3f})")
    assert abs(mod_share - n / (n + 1)) < 0.01
    assert abs(jump_share - 1 / (n + 1)) < 0.01
    before, after = jump_hash(hashes, n), jump_hash(hashes, n + 1)
    assert set(after[before != after].tolist()) <= {n}
    shares = np.bincount(after, minlength=n + 1) / len(after)
    assert np.abs(shares - 1 / (n + 1)).max() < 0.01  # uniform as mod is
    assert engine_of_hash(hashes, n + 1, "mod").tolist() == (hashes % np.uint64(n + 1)).tolist()


def test_a_map_says_its_hash_and_old_maps_read_as_mod():
    m = KeyMap(4, {key_text("a"): 1}, "jump")
    assert KeyMap.decode(m.encode()) == m
    plain = KeyMap(4, {key_text("a"): 1})
    assert b"hash" not in plain.encode()  # the bytes a run always wrote
    assert KeyMap.decode(plain.encode()).hash == "mod"
    assert rescaled(plain, m) and rescaled(plain, KeyMap(5)) and not rescaled(plain, KeyMap(4))


def _random_map(rng: random.Random, keys: list, n: int, scheme: str) -> KeyMap:
    texts = [key_text(k) for k in keys]
    return KeyMap(n, {t: rng.randrange(n) for t in rng.sample(texts, len(texts) // 4)},
                  scheme)


@pytest.mark.parametrize("seed", range(40))
def test_a_scale_change_moves_every_key_whose_owner_differs_once(seed):
    """Each engine of M[t-1] holds its keys (some without state: only those it holds
    are exported); the parcels it writes by parcel_receivers, read by parcel_senders and
    checked by check_parcel, deliver exactly the held keys whose owner differs, each to
    its new owner, from its old one."""
    rng = random.Random(seed)
    scheme = rng.choice(["mod", "jump"])
    keys = [*range(60), *(f"k{i}" for i in range(40)), None]
    old = _random_map(rng, keys, rng.randint(1, 6), scheme)
    new = rescale_map(old, rng.randint(1, 7)) if rng.random() < 0.5 else _random_map(
        rng, keys, rng.randint(1, 7), scheme)
    texts = [key_text(k) for k in keys]
    owner_old = dict(zip(texts, old.owners_of(texts).tolist(), strict=True))
    owner_new = dict(zip(texts, new.owners_of(texts).tolist(), strict=True))
    held = {t for t in texts if rng.random() < 0.7}  # keys with state somewhere
    written: dict[tuple[int, int], list[str]] = {}
    for e in range(old.n_engines):
        mine = [t for t in held if owner_old[t] == e]
        leaving = exports(e, old, new, mine)
        for r, sent in parcel_receivers(e, leaving, old, new).items():
            written[(e, r)] = sent
    arrived: dict[str, tuple[int, int]] = {}
    for e in range(new.n_engines):
        for s in parcel_senders(e, old, new):
            parcel = written[(s, e)]  # a missing parcel would be a KeyError: the task fails
            check_parcel(e, s, parcel, old, new)
            for t in parcel:
                assert t not in arrived
                arrived[t] = (s, e)
    moving = {t: (owner_old[t], owner_new[t]) for t in held if owner_old[t] != owner_new[t]}
    overridden = {t for t in set(old.overrides) | set(new.overrides)
                  if owner_old[t] != owner_new[t]}
    assert {t: v for t, v in arrived.items() if t in held} == moving
    assert set(arrived) - held <= overridden  # named with an empty state, as today


def test_a_parcel_naming_a_key_that_does_not_move_there_is_refused():
    old, new = KeyMap(2), KeyMap(3)
    stays = next(t for t in map(key_text, range(100))
                 if old.owners_of([t])[0] == new.owners_of([t])[0] == 0)
    with pytest.raises(ValueError, match="other keys than the key maps send"):
        check_parcel(1, 0, [stays], old, new)


def test_without_a_scale_change_the_protocol_is_the_one_it_was():
    old = KeyMap(3, {key_text("a"): 2})
    new = KeyMap(3, {key_text("b"): 0})
    for e in range(3):
        assert exports(e, old, new, ["whatever"]) == exports(e, old, new)
        assert parcel_senders(e, old, new) == sorted(by_owner(imports(e, old, new), old))


def test_overrides_survive_a_scale_change_where_their_engine_does():
    keys = [key_text(k) for k in range(50)]
    old = KeyMap(5, {t: 4 for t in keys[:10]} | {t: 1 for t in keys[10:20]})
    new = rescale_map(old, 3)
    plain = KeyMap(3)
    assert all(e < 3 for e in new.overrides.values())
    assert set(new.overrides) == {t for t in keys[10:20] if plain.owners_of([t])[0] != 1}
    assert new.owners_of(keys[:10]).tolist() == plain.owners_of(keys[:10]).tolist()


def test_a_schedule_gives_each_map_its_count():
    s = Schedule.of(3, [(5, 6), (2, 4)])
    assert [s.engines_at(v) for v in range(8)] == [3, 3, 4, 4, 4, 6, 6, 6]
    with pytest.raises(ValueError, match="from batch 2"):
        Schedule.of(3, [(1, 4)])


class _Maps:
    _made = 0

    def __init__(self) -> None:
        self.maps: dict[int, bytes] = {}
        _Maps._made += 1  # a run of its own: splitter.keymaps caches maps by run
        self.run_id = f"scaling-test-{_Maps._made}"

    def put_key_map(self, version: int, data: bytes) -> bool:
        return self.maps.setdefault(version, data) is data

    def get_key_map(self, version: int) -> bytes | None:
        return self.maps.get(version)

    def gc(self, before_batch: int) -> int:
        return 0


@pytest.mark.parametrize("strategy", ["kg", "dlb-l", "lptf", "elb", "milp"])
def test_the_balancer_writes_the_schedule_s_counts_and_reports_the_change(strategy):
    maps = _Maps()
    balancer = Balancer(maps, strategy, 3, threshold=0.0, moves="always", hash="jump",
                        engines_at=Schedule.of(3, [(4, 5), (6, 2)]).engines_at)
    balancer.prepare()
    rng = np.random.default_rng(1)
    changes = []
    for batch in range(7):
        load = {json.dumps(f"k{int(k)}"): 1 for k in rng.zipf(1.3, 300) % 97}
        stats = [{"engine": 0, "busy_s": 0.0, "key_load": load}]
        metrics = {"rows_per_engine": [1] * 3, "busy_s_per_engine": [0.0] * 3}
        balancer(batch, stats, metrics)
        if "rescaled" in metrics:
            changes.append((metrics["rescaled"]["at_batch"], metrics["rescaled"]["to"],
                            metrics["keys_moved"]))
    counts = [KeyMap.decode(maps.maps[v]).n_engines for v in range(9)]
    assert counts == [3, 3, 3, 3, 5, 5, 2, 2, 2]
    assert [(b, n) for b, n, _ in changes] == [(4, 5), (6, 2)]
    assert all(KeyMap.decode(m).hash == "jump" for m in maps.maps.values())
    assert all(0 <= e < KeyMap.decode(maps.maps[v]).n_engines
               for v in maps.maps for e in KeyMap.decode(maps.maps[v]).overrides.values())


def test_a_balancing_strategy_places_the_loaded_keys_by_load_at_a_scale_change():
    """``balanced_owners`` (Guo and Zhou's scaling: new engines start empty, keys move
    only from engines over their share to engines under it). Oracle: the loads fed in,
    summed per engine by hand; the share is the total over the new count."""
    from migration.scaling import balanced_owners

    rng = np.random.default_rng(3)
    load = np.concatenate([rng.zipf(1.6, 300).astype(float), np.zeros(100)])
    owners = rng.integers(0, 2, 400).astype(np.int32)  # 2 engines, the last 100 cold
    out = balanced_owners(owners, load, 4)
    per = np.bincount(out, weights=load, minlength=4)
    share = load.sum() / 4
    before = np.bincount(owners, weights=load, minlength=4)
    assert per.max() < before.max() and per[2] > 0 and per[3] > 0
    assert per.max() <= max(share, load.max()) * 1.05
    moved = out != owners
    assert not moved[300:].any(), "a key without load stays where it was put"
    assert set(out[moved].tolist()) <= {2, 3} and set(owners[moved].tolist()) <= {0, 1}
    # scaling in: no key is left on a retired engine, every moved key came from one
    back = balanced_owners(out, load, 2)
    assert back[:300].max() <= 1
    assert (back[:300] != out[:300]).sum() == (out[:300] >= 2).sum()
    assert np.array_equal(back[300:], out[300:]), "a key without load stays"


def test_a_scale_change_of_an_events_balancer_places_keys_by_their_measured_work():
    """Under ``--load events`` the change places the keys by their measured seconds in the
    batch (``key_cost``), not their events. Oracle: the work fed in, summed per engine by
    hand. Engine 0's key "h" costs 3 s for 10 events; engine 1's 40 keys cost 0.025 s
    each for 30 events each. Placed by events, "h" would count for 10 of 1,210 events
    and its engine would take many of the cheap keys; placed by work, the engine that
    holds "h" takes nothing else, so its 3 s is the busiest engine's, as it must be."""
    maps = _Maps()
    balancer = Balancer(maps, "dlb-l", 2, threshold=1e9, moves="always",
                        engines_at=Schedule.of(2, [(2, 4)]).engines_at)
    balancer.prepare()
    cheap = {json.dumps(f"c{i}"): 30 for i in range(40)}
    stats = [{"engine": 0, "busy_s": 3.0, "key_load": {json.dumps("h"): 10}},
             {"engine": 1, "busy_s": 1.0, "key_load": cheap}]
    balancer(0, stats, {"rows_per_engine": [1, 1], "busy_s_per_engine": [3.0, 1.0]})
    decided = KeyMap.decode(maps.maps[2])
    assert decided.n_engines == 4
    owners = decided.owners_of([json.dumps("h"), *cheap])
    work = np.array([3.0] + [1.0 / 40] * 40)
    per = np.bincount(owners, weights=work, minlength=4)
    assert per.max() == pytest.approx(3.0)
    assert (owners[1:] != owners[0]).all(), "no cheap key joins the costly one"
    assert (per[np.arange(4) != owners[0]] > 0).all(), "the cheap keys fill the others"
