"""StateStore against a real embedded SecantusDB."""

from __future__ import annotations

import os
import pickle
import socket
import time

import numpy as np
import pytest

from cep.handoff.protocol import KeyMap
from cep.handoff.store import (
    CHUNK_BYTES,
    MissingStateError,
    MongoUnavailableError,
    StateStore,
    StoreError,
    close_shared_clients,
    decode_key_map,
    encode_key_map,
    mask_uri,
)
from cep.servers.mongo import EmbeddedMongo
from cep.spark.splitter import keymaps

# -- key maps ----------------------------------------------------------------------


def test_key_map_is_write_once(store: StateStore) -> None:
    first = np.array([0, 1, 2, 3, 4], dtype=np.int32)
    assert store.put_key_map(7, first) is True
    assert store.put_key_map(7, np.zeros(5, dtype=np.int32)) is False
    assert store.put_key_map(7, b"other bytes") is False
    np.testing.assert_array_equal(decode_key_map(store.get_key_map(7)), first)
    assert store.get_key_map(8) is None
    with pytest.raises(TypeError, match="dict"):
        store.put_key_map(9, {"a": 1})  # type: ignore[arg-type]


def test_key_map_of_a_million_keys_round_trips_compressed(store: StateStore) -> None:
    rng = np.random.default_rng(1)
    key_map = rng.integers(0, 5, size=1_000_000).astype(np.int8)
    data = encode_key_map(key_map)
    assert len(data) < key_map.nbytes  # 3 bits of entropy per byte: zlib wins
    assert store.put_key_map(0, data)
    got = decode_key_map(store.get_key_map(0))
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, key_map)


def test_key_map_larger_than_a_document_is_chunked_and_write_once(store: StateStore) -> None:
    big = os.urandom(CHUNK_BYTES + 1000)
    assert store.put_key_map(3, big)
    assert store.put_key_map(3, os.urandom(CHUNK_BYTES + 1000)) is False
    assert store.get_key_map(3) == big


# -- key states --------------------------------------------------------------------


def test_states_round_trip_including_20_mb_and_empty(store: StateStore) -> None:
    big = os.urandom(20 * 1024 * 1024)
    states = {1: b"one", 2: b"", "k": b"\x00" * 100, 3: big}
    store.put_states(5, states)
    assert store.get_states(5, [1, 2, "k", 3]) == states
    assert store.get_states(5, ["k"]) == {"k": states["k"]}
    assert store.get_states(5, []) == {}


def test_missing_state_names_the_missing_keys(store: StateStore) -> None:
    store.put_states(2, {1: b"a"})
    with pytest.raises(MissingStateError, match=r"batch 2: keys 7, 'x'") as info:
        store.get_states(2, [1, 7, "x"])
    assert info.value.keys == [7, "x"]
    with pytest.raises(MissingStateError):
        store.get_states(3, [1])  # same key, other batch


def test_replay_rewrites_the_same_documents(store: StateStore) -> None:
    states = {k: os.urandom(1000) for k in range(50)}
    states[99] = os.urandom(CHUNK_BYTES + 10)
    store.put_states(4, states)
    docs_before = _count_docs(store)
    store.put_states(4, states)
    assert _count_docs(store) == docs_before
    assert store.get_states(4, list(states)) == states


def test_replay_with_different_bytes_switches_chunked_state_whole(store: StateStore) -> None:
    store.put_states(4, {1: os.urandom(CHUNK_BYTES + 10)})
    second = os.urandom(CHUNK_BYTES * 2 + 10)
    store.put_states(4, {1: second})
    assert store.get_states(4, [1]) == {1: second}


def test_int_and_str_keys_are_distinct(store: StateStore) -> None:
    store.put_states(0, {5: b"int", "5": b"str", np.int64(6): b"numpy"})
    got = store.get_states(0, ["5", 5, 6])
    assert got == {5: b"int", "5": b"str", 6: b"numpy"}
    assert type(next(k for k in got if k == 5 and not isinstance(k, str))) is int
    with pytest.raises(MissingStateError):
        store.get_states(0, ["6"])
    with pytest.raises(TypeError, match="bool"):
        store.put_states(0, {True: b"x"})
    with pytest.raises(TypeError, match="float"):
        store.get_states(0, [1.5])


def test_gc_deletes_old_batches_and_maps_of_this_run_only(
    store: StateStore, mongo: EmbeddedMongo
) -> None:
    other = StateStore(mongo.uri, run_id=store.run_id + "x")
    try:
        for t in range(5):
            store.put_states(t, {1: b"s%d" % t, 2: os.urandom(CHUNK_BYTES + 1)})
            store.put_key_map(t, np.full(3, t))
            other.put_states(t, {1: b"other"})
        deleted = store.gc(before_batch=3, keep_key_maps=2)
        # Per batch two heads and the two chunks of key 2's state; then map 0.
        assert deleted == 3 * (2 + 2) + 1
        for t in range(3):
            with pytest.raises(MissingStateError):
                store.get_states(t, [1])
        assert store.get_states(3, [1])[1] == b"s3"
        assert len(store.get_states(4, [2])[2]) == CHUNK_BYTES + 1
        assert store.get_key_map(0) is None
        assert [decode_key_map(store.get_key_map(v))[0] for v in (1, 2, 3, 4)] == [1, 2, 3, 4]
        assert other.get_states(0, [1]) == {1: b"other"}
        assert other.drop_run() == 5
    finally:
        other.close()


def test_drop_run_removes_everything_of_the_run(store: StateStore) -> None:
    store.put_states(1, {1: b"x", 2: os.urandom(CHUNK_BYTES + 1)})
    store.put_key_map(1, b"m")
    assert store.drop_run() == 2 + 2 + 1  # heads, two chunks, the map
    assert store.get_key_map(1) is None


def test_store_survives_pickling(store: StateStore) -> None:
    store.put_states(1, {1: b"x"})
    copy = pickle.loads(pickle.dumps(store))
    try:
        assert copy.get_states(1, [1]) == {1: b"x"}
    finally:
        copy.close()


def test_writes_default_to_majority_and_journaled_unless_the_uri_says_otherwise(
        mongo: EmbeddedMongo) -> None:
    for uri, expected in [(mongo.uri, {"w": "majority", "j": True}),
                          (mongo.uri + "?w=1", {"w": 1, "j": True}),
                          (mongo.uri + "?journal=false", {"w": "majority", "j": False})]:
        with StateStore(uri, run_id="r") as s:
            assert s._db().write_concern.document == expected


def test_invalid_run_id_and_batch_are_rejected(mongo: EmbeddedMongo, store: StateStore) -> None:
    with pytest.raises(ValueError, match="run_id"):
        StateStore(mongo.uri, run_id="a/b")
    with pytest.raises(ValueError, match="batch"):
        store.put_states(-1, {1: b""})


def test_latency_1000_keys_of_10_kb(store: StateStore) -> None:
    states = {k: os.urandom(10 * 1024) for k in range(1000)}
    start = time.perf_counter()
    store.put_states(1, states)
    put_s = time.perf_counter() - start
    start = time.perf_counter()
    assert store.get_states(1, list(states)) == states
    get_s = time.perf_counter() - start
    print(f"put_states {put_s:.3f} s, get_states {get_s:.3f} s for 1000 x 10 KB")
    # Loose bound: catches the 50x cliffs of sub-document ids and long $in lists.
    assert put_s + get_s < 10


def _count_docs(store: StateStore) -> int:
    db = store._db()
    return sum(db[name].count_documents({}) for name in ("states", "state_chunks"))


# -- failures ----------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_OPERATIONS = {
    "put_key_map": lambda s: s.put_key_map(1, b"m"),
    "get_key_map": lambda s: s.get_key_map(1),
    "put_states": lambda s: s.put_states(1, {1: b"x"}),
    "get_states": lambda s: s.get_states(1, [1]),
    "gc": lambda s: s.gc(5),
    "drop_run": lambda s: s.drop_run(),
}


@pytest.mark.parametrize("operation", list(_OPERATIONS))
def test_unreachable_server_fails_fast_with_masked_uri(operation: str) -> None:
    uri = f"mongodb://cep:hunter2@127.0.0.1:{_closed_port()}/?authSource=admin"
    store = StateStore(uri, run_id="r", connect_timeout_ms=500, server_selection_timeout_ms=500)
    start = time.monotonic()
    with pytest.raises(MongoUnavailableError) as info:
        _OPERATIONS[operation](store)
    elapsed = time.monotonic() - start
    assert elapsed < 2.5, f"{operation} took {elapsed:.2f} s"
    message = str(info.value)
    assert "mongodb://cep:***@127.0.0.1:" in message
    assert operation in message
    assert "hunter2" not in message
    assert "\n" not in message
    assert info.value.__suppress_context__  # no pymongo traceback chained
    store.close()


def test_server_stopped_mid_use_raises_unavailable() -> None:
    with EmbeddedMongo() as server:
        store = StateStore(
            server.uri, run_id="r", connect_timeout_ms=500, server_selection_timeout_ms=500
        )
        store.put_states(1, {1: b"x"})
        assert store.get_states(1, [1]) == {1: b"x"}
    start = time.monotonic()
    with pytest.raises(MongoUnavailableError, match="get_states"):
        store.get_states(1, [1])
    with pytest.raises(MongoUnavailableError, match="put_states"):
        store.put_states(2, {1: b"x"})
    assert time.monotonic() - start < 5
    store.close()


def test_timeouts_in_the_uri_win_over_the_defaults() -> None:
    """A deployment's settings live in its URI: the store's defaults (here a minute)
    must not silently override them (pymongo would let keywords win)."""
    uri = (f"mongodb://cep:hunter2@127.0.0.1:{_closed_port()}/"
           "?serverSelectionTimeoutMS=300&connectTimeoutMS=300")
    store = StateStore(uri, run_id="r", connect_timeout_ms=60_000,
                       server_selection_timeout_ms=60_000)
    start = time.monotonic()
    with pytest.raises(MongoUnavailableError, match="server selection timeout 300 ms"):
        store.get_key_map(0)
    assert time.monotonic() - start < 2.5
    store.close()


def test_bad_uri_is_a_store_error_without_password() -> None:
    store = StateStore("mongodb://u:pw@@@", run_id="r")
    with pytest.raises(StoreError) as info:
        store.get_key_map(0)
    assert "pw" not in str(info.value).replace("mongodb://u:***", "")


@pytest.mark.parametrize(
    ("uri", "masked"),
    [
        ("mongodb://127.0.0.1:27017/", "mongodb://127.0.0.1:27017/"),
        ("mongodb://user:pass@host", "mongodb://user:***@host"),
        (
            "mongodb://user@host/?authMechanism=MONGODB-X509",
            "mongodb://user@host/?authMechanism=MONGODB-X509",
        ),
        (
            "mongodb+srv://u:p%40ss@cluster.example.net/cep?tls=true&authSource=admin",
            "mongodb+srv://u:***@cluster.example.net/cep?tls=true&authSource=admin",
        ),
        ("mongodb://u:p@ss/w@h1:1,h2:2/db", "mongodb://u:***@h1:1,h2:2/db"),
        (
            "mongodb://h/?tlsCertificateKeyFilePassword=s3&w=majority",
            "mongodb://h/?tlsCertificateKeyFilePassword=***&w=majority",
        ),
        ("not a uri", "not a uri"),
    ],
)
def test_mask_uri(uri: str, masked: str) -> None:
    assert mask_uri(uri) == masked


def test_shipped_copies_in_one_process_share_one_client(store: StateStore) -> None:
    # every Spark task unpickles its own copy: one client each would leave a client
    # (monitor threads, connections) behind per task in every Python worker
    first, second = (pickle.loads(pickle.dumps(store)) for _ in range(2))
    try:
        assert first._process_client() is second._process_client()
        assert store._process_client() is not first._process_client()
        first.close()  # lets go of the shared client without closing it for the other
        assert second.get_key_map(7) is None
    finally:
        second.close()


def test_a_process_keeps_only_the_recent_key_maps(store: StateStore) -> None:
    """Executors and the driver read one map per batch: a long stream must not keep them
    all. The versions a batch needs stay; a version read again is fetched again."""
    for version in range(3 * keymaps.KEPT):
        store.put_key_map(version, KeyMap(2, {'"k"': version % 2}).encode())
        assert keymaps.key_map(store, version).overrides == {'"k"': version % 2}
        assert keymaps.key_map(store, max(0, version - 1)).n_engines == 2  # kept
    mine = [v for (run, v) in keymaps._CACHE if run == store.run_id]
    assert len(mine) <= keymaps.KEPT and max(mine) == 3 * keymaps.KEPT - 1
    assert keymaps.key_map(store, 0).overrides == {'"k"': 0}  # evicted, read again


def _connections_within(listener: socket.socket, seconds: float) -> int:
    listener.settimeout(0.1)
    accepted, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.close()
        accepted += 1
    return accepted


def test_closed_shared_clients_stop_calling_a_gone_servers_port() -> None:
    """A task's client to a MongoDB that went away keeps dialling its old port, where
    Spark may later put a state server that serves whoever connects first. After
    ``close_shared_clients`` (tasks call it when they end) nothing dials it."""
    server = EmbeddedMongo()
    with server:
        uri = f"{server.uri}?heartbeatFrequencyMS=500"
        port = int(server.uri.rsplit(":", 1)[1].strip("/"))
        left = pickle.loads(pickle.dumps(StateStore(uri, run_id="gone")))  # a task's copy
        assert left.get_key_map(1) is None
    listener = socket.create_server(("127.0.0.1", port))  # the gone server's port
    try:
        assert _connections_within(listener, 3.0) > 0  # the left-behind client dials it
        close_shared_clients()
        _connections_within(listener, 0.3)  # a dial already under way
        assert _connections_within(listener, 3.0) == 0
    finally:
        listener.close()
    with EmbeddedMongo() as again:  # a copy's next use reopens, to its own URI
        reopened = pickle.loads(pickle.dumps(StateStore(again.uri, run_id="gone")))
        assert reopened.get_key_map(1) is None
        close_shared_clients()
