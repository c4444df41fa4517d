"""The tweets generator's world read back from the user's cache is the world built.

Oracle: :func:`cep.io.tweets.world.build_world`, which never touches the cache; every
array and its type must be equal, and a cache file that is damaged, foreign or of
another shape must be ignored rather than trusted.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from cep.io.tweets import world as world_module
from cep.io.tweets.world import World, build_world, world
from cep.io.tweets.world_cache import STALE_S

SEED, USERS = 11, 1_500


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    world.cache_clear()  # the process's own copy, so that each call reads the disk
    yield tmp_path / "cep"
    world.cache_clear()


def assert_same(got: World, want: World) -> None:
    for name in ("vocab", "lang_words", "handles", "tokens", "hot_words"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
    for a, b in zip(got.minima, want.minima, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert {type(v) for v in got.tokens} == {str}


def test_the_world_stored_and_read_back_is_the_world_built(cache) -> None:
    want = build_world(SEED, USERS)
    assert_same(world(SEED, USERS), want)  # built, then stored
    files = list(cache.glob(f"tweets-world-{SEED}-{USERS}-*.npz"))
    assert len(files) == 1 and not list(cache.glob("*.tmp"))
    world.cache_clear()
    assert_same(world(SEED, USERS), want)  # read back
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("damage", ["garbage", "other shapes", "writable by others"])
def test_a_cache_file_not_to_trust_is_rebuilt_over(cache, damage: str) -> None:
    want = build_world(SEED, USERS)
    world(SEED, USERS)
    (path,) = cache.glob(f"tweets-world-{SEED}-{USERS}-*.npz")
    if damage == "garbage":
        path.write_bytes(b"PK\x03\x04 not a zip")
    elif damage == "other shapes":  # a smaller world's file under this world's name
        world.cache_clear()
        world(SEED, USERS // 2)
        (smaller,) = cache.glob(f"tweets-world-{SEED}-{USERS // 2}-*.npz")
        os.replace(smaller, path)
    else:  # another seed's world, of the same shapes, that anyone could have written
        world.cache_clear()
        world(SEED + 1, USERS)
        (other,) = cache.glob(f"tweets-world-{SEED + 1}-{USERS}-*.npz")
        os.replace(other, path)
        os.chmod(path, 0o666)
    world.cache_clear()
    assert_same(world(SEED, USERS), want)


def test_a_change_to_the_sources_names_another_file(cache, monkeypatch) -> None:
    """Another version's file goes once unused for a day, and so does a temporary file a
    killed writer left; a file another version used within the day stays (two versions
    that run at once would otherwise remove each other's), as does a write in flight."""
    world(SEED, USERS)
    (before,) = cache.glob(f"tweets-world-{SEED}-{USERS}-*.npz")
    recent = before.with_name(f"tweets-world-{SEED}-{USERS}-{'0' * 16}.npz")
    recent.write_bytes(before.read_bytes())  # another version's, used just now
    abandoned, in_flight = cache / f"{before.stem}x.tmp", cache / f"{before.stem}y.tmp"
    for path in (abandoned, in_flight):
        path.write_bytes(b"half a file")
    day_old = time.time() - STALE_S - 60
    for path in (before, abandoned):
        os.utime(path, (day_old, day_old))
    edited = cache / "edited.py"
    edited.write_text("# a changed builder\n")
    monkeypatch.setattr(world_module, "_BUILT_FROM", [*world_module._BUILT_FROM, edited])
    world.cache_clear()
    world(SEED, USERS)
    left = set(cache.glob(f"tweets-world-{SEED}-{USERS}-*"))
    assert before not in left and abandoned not in left  # unused for a day: removed
    assert {recent, in_flight} <= left and len(left) == 3  # and the new file


def test_a_file_read_is_marked_used(cache) -> None:
    world(SEED, USERS)
    (path,) = cache.glob(f"tweets-world-{SEED}-{USERS}-*.npz")
    os.utime(path, (1, 1))
    world.cache_clear()
    world(SEED, USERS)
    assert path.stat().st_mtime > time.time() - 60


def test_no_cache_directory_still_gives_the_world(tmp_path, monkeypatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # the cache's parent is a file: nothing can be stored
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    world.cache_clear()
    try:
        assert_same(world(SEED, USERS), build_world(SEED, USERS))
    finally:
        world.cache_clear()
