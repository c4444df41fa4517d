"""The tweets generator's world read back from the user's cache is the world built.

Oracle: :func:`cep.io.tweets.world.build_world`, which never touches the cache; every
array and its type must be equal, and a cache file that is damaged, foreign or of
another shape must be ignored rather than trusted.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from cep.io.tweets import world as world_module
from cep.io.tweets.world import World, build_world, world

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
    world(SEED, USERS)
    edited = cache / "edited.py"
    edited.write_text("# a changed builder\n")
    monkeypatch.setattr(world_module, "_BUILT_FROM", [*world_module._BUILT_FROM, edited])
    (before,) = cache.glob(f"tweets-world-{SEED}-{USERS}-*.npz")
    world.cache_clear()
    world(SEED, USERS)
    (after,) = cache.glob(f"tweets-world-{SEED}-{USERS}-*.npz")  # the older one removed
    assert after != before


def test_no_cache_directory_still_gives_the_world(tmp_path, monkeypatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # the cache's parent is a file: nothing can be stored
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    world.cache_clear()
    try:
        assert_same(world(SEED, USERS), build_world(SEED, USERS))
    finally:
        world.cache_clear()
