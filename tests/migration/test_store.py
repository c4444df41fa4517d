"""StateStore against a real embedded SecantusDB."""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import time
from pathlib import Path

import numpy as np
import pytest
from support.ports import refusing_port

from cep.servers.mongo import EmbeddedMongo
from cep.transports.mongo_client import (
    MongoUnavailableError,
    StoreError,
    close_shared_clients,
    mask_uri,
)
from migration.protocol import KeyMap
from migration.store import CHUNK_BYTES, MissingStateError, StateStore
from splitter import keymaps

# -- key maps ----------------------------------------------------------------------


def test_key_map_is_write_once(store: StateStore) -> None:
    first = KeyMap(5, {'"a"': 1, "7": 4})
    assert store.put_key_map(7, first.encode()) is True
    assert store.put_key_map(7, KeyMap(5).encode()) is False
    assert store.put_key_map(7, b"other bytes") is False
    assert KeyMap.decode(store.get_key_map(7)) == first
    assert store.get_key_map(8) is None
    with pytest.raises(TypeError, match="key_map must be bytes, not dict"):
        store.put_key_map(9, {"a": 1})  # type: ignore[arg-type]


def test_key_map_moving_100k_long_keys_round_trips_chunked(store: StateStore) -> None:
    # one override per moved key, the map in the format the Balancer writes: past a
    # document's size, so it is stored in chunks
    rng = np.random.default_rng(1)
    engines = rng.integers(0, 5, size=100_000).tolist()
    moved = KeyMap(5, {f'"{i:0160d}"': e for i, e in enumerate(engines)})
    data = moved.encode()
    assert len(data) > CHUNK_BYTES
    assert store.put_key_map(0, data)
    assert KeyMap.decode(store.get_key_map(0)) == moved


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
            store.put_key_map(t, KeyMap(5, {'"k"': t}).encode())
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
        assert [KeyMap.decode(store.get_key_map(v)).overrides['"k"'] for v in (1, 2, 3, 4)
                ] == [1, 2, 3, 4]
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


def _cpu_seconds(mongo: EmbeddedMongo) -> float:
    """CPU seconds used so far by this process and the embedded server's process."""
    assert mongo.pid is not None
    fields = Path(f"/proc/{mongo.pid}/stat").read_text().rsplit(")", 1)[1].split()
    server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return time.process_time() + server


def test_latency_1000_keys_of_10_kb(store: StateStore, mongo: EmbeddedMongo) -> None:
    states = {k: os.urandom(10 * 1024) for k in range(1000)}
    start, cpu_start = time.perf_counter(), _cpu_seconds(mongo)
    store.put_states(1, states)
    put_s = time.perf_counter() - start
    start = time.perf_counter()
    assert store.get_states(1, list(states)) == states
    get_s = time.perf_counter() - start
    cpu_s = _cpu_seconds(mongo) - cpu_start
    print(f"put_states {put_s:.3f} s, get_states {get_s:.3f} s for 1000 x 10 KB "
          f"({cpu_s:.2f} CPU s, client and server)")
    # Loose bound: catches the 50x cliffs of sub-document ids and long $in lists (1000
    # upserts: 56 s against ~1 s). Counted in CPU seconds, which a machine busy with other
    # jobs does not stretch the way it stretches wall time (4x seen at a load of 7 on 2 cores).
    assert cpu_s < 10


def _count_docs(store: StateStore) -> int:
    db = store._db()
    return sum(db[name].count_documents({}) for name in ("states", "state_chunks"))


# -- failures ----------------------------------------------------------------------

# A failing operation must end at the store's short time-out, not at pymongo's default of
# 30 s; the margin is for a machine busy with other jobs.
_WELL_BELOW_THE_DRIVER_DEFAULT_S = 15.0

_OPERATIONS = {
    "put_key_map": lambda s: s.put_key_map(1, b"m"),
    "get_key_map": lambda s: s.get_key_map(1),
    "put_states": lambda s: s.put_states(1, {1: b"x"}),
    "get_states": lambda s: s.get_states(1, [1]),
    "gc": lambda s: s.gc(5),
    "drop_run": lambda s: s.drop_run(),
}


@pytest.mark.parametrize("operation", list(_OPERATIONS))
def test_unreachable_server_fails_fast_with_masked_uri(operation: str, closed_port: int) -> None:
    uri = f"mongodb://cep:hunter2@127.0.0.1:{closed_port}/?authSource=admin"
    store = StateStore(uri, run_id="r", connect_timeout_ms=500, server_selection_timeout_ms=500)
    start = time.monotonic()
    with pytest.raises(MongoUnavailableError, match="server selection timeout 500 ms") as info:
        _OPERATIONS[operation](store)
    elapsed = time.monotonic() - start
    assert elapsed < _WELL_BELOW_THE_DRIVER_DEFAULT_S, f"{operation} took {elapsed:.2f} s"
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
        port = int(server.uri.rsplit(":", 1)[1].strip("/"))
    with refusing_port(port):  # the gone server's port stays closed: nobody else gets it
        start = time.monotonic()
        with pytest.raises(MongoUnavailableError, match="get_states"):
            store.get_states(1, [1])
        with pytest.raises(MongoUnavailableError, match="put_states"):
            store.put_states(2, {1: b"x"})
        assert time.monotonic() - start < 2 * _WELL_BELOW_THE_DRIVER_DEFAULT_S
    store.close()


def test_timeouts_in_the_uri_win_over_the_defaults(closed_port: int) -> None:
    """A deployment's settings live in its URI: the store's defaults (here a minute)
    must not silently override them (pymongo would let keywords win)."""
    uri = (f"mongodb://cep:hunter2@127.0.0.1:{closed_port}/"
           "?serverSelectionTimeoutMS=300&connectTimeoutMS=300")
    store = StateStore(uri, run_id="r", connect_timeout_ms=60_000,
                       server_selection_timeout_ms=60_000)
    start = time.monotonic()
    with pytest.raises(MongoUnavailableError, match="server selection timeout 300 ms"):
        store.get_key_map(0)
    assert time.monotonic() - start < _WELL_BELOW_THE_DRIVER_DEFAULT_S
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


def _dialled(listener: socket.socket, times: int, within: float) -> bool:
    """Whether ``times`` connections reach ``listener`` within ``within`` seconds."""
    listener.settimeout(0.1)
    deadline = time.monotonic() + within
    while times and time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            listener.accept()[0].close()
            times -= 1
    return times == 0


def _quiet(listener: socket.socket, seconds: float, within: float) -> bool:
    """Whether ``seconds`` in a row pass without a connection to ``listener`` within
    ``within`` seconds (a connection, such as a dial already under way, starts the count
    again)."""
    listener.settimeout(0.1)
    deadline = time.monotonic() + within
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        if time.monotonic() - quiet_since >= seconds:
            return True
        with contextlib.suppress(TimeoutError):
            listener.accept()[0].close()
            quiet_since = time.monotonic()
    return False


def test_closed_shared_clients_stop_calling_a_gone_servers_port() -> None:
    """A task's client to a MongoDB that went away keeps dialling its old port, where
    Spark may later put a state server that serves whoever connects first. After
    ``close_shared_clients`` (tasks call it when they end) nothing dials it."""
    # the gone server's port, held by this test throughout: a listener that hangs up
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        heartbeat_s = 0.5
        uri = f"mongodb://127.0.0.1:{port}/?heartbeatFrequencyMS={int(heartbeat_s * 1000)}"
        left = pickle.loads(pickle.dumps(StateStore(uri, run_id="gone")))  # a task's copy
        left._process_client()  # the client of the task's first use, then left behind
        assert _dialled(listener, 3, within=60.0), "the left-behind client keeps dialling"
        close_shared_clients()
        assert _quiet(listener, 10 * heartbeat_s, within=60.0), "still dialling when closed"
    with EmbeddedMongo() as again:  # a copy's next use reopens, to its own URI
        reopened = pickle.loads(pickle.dumps(StateStore(again.uri, run_id="gone")))
        assert reopened.get_key_map(1) is None
        close_shared_clients()
