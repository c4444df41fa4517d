"""MongoDB store for key maps and moved keys' state (DESIGN §2, migration protocol).

Collections (in ``database``, shared by several runs, every id prefixed by the run):

``key_maps``        one head per map version, ``_id = "<run>/<version:012d>"``
``states``          one head per (key, batch), ``_id = "<run>/<batch:012d>/<i|s>:<key>"``
``key_map_chunks``, ``state_chunks``   parts of blobs larger than :data:`CHUNK_BYTES`,
                    ``_id = "<head _id>#<content hash>/<part>"``

Why string ids of that shape: SecantusDB scans the whole collection for a query on a
sub-document ``_id`` (measured: 1000 upserts 56 s vs 0.3 s), and putting run and batch
first makes "everything of this run before batch b" an ``_id`` range, so gc and
``drop_run`` need no secondary index. The type tag keeps the int key 5 and the str key
``"5"`` apart; heads also carry ``key`` as is and ``kt`` (its type) for people reading
the collection.

A blob of up to :data:`CHUNK_BYTES` sits in its head's ``data``; a larger one is cut
into chunk documents (MongoDB refuses documents over 16 MiB) written *before* the head,
and the head names their content hash. The head is therefore the commit point: a
reader never sees a head whose chunks are missing, and a replay that writes different
bytes (state blobs are not always byte-identical: set order) switches every part at once.

State blobs are opaque here. They are written by ``Engine.export_keys`` in the data-only
format of :mod:`cep.engine.codec`, and ``Engine.import_keys`` refuses anything else (a
pickle planted by whoever can write to this database is never loaded, let alone run).

Errors: every operation maps pymongo's exceptions to :class:`StoreError` subclasses
with one line naming the operation and the URI with its password masked. An
unreachable server raises :class:`MongoUnavailableError` after the server-selection
timeout, never hangs and never shows a pymongo traceback.

Writes use ``w: "majority"`` and ``j: true`` unless the URI sets ``w`` or ``journal``:
a handoff document lost after its batch committed could never be rewritten (the batch
is not replayed), so the run would be stuck for good, whether the loss comes from a
replica-set fail-over (hence majority) or from a server killed before its journal
reached the disk (hence j; measured on SecantusDB without it: SIGKILL right after an
acknowledged upsert lost it in 5 of 10 trials, with it in none, at ~3 ms per batch).
Likewise the constructor's time-outs
are defaults that an option spelled in the URI overrides (pymongo itself would let the
keyword win), so the URI is the one place where a deployment's settings live.
Credentials and TLS come only from the URI; the password is never logged or put in a
message.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import unquote

import numpy as np
from pymongo import MongoClient, ReplaceOne
from pymongo.collection import Collection
from pymongo.errors import ConnectionFailure, DuplicateKeyError, PyMongoError

from cep.closing import Closing

Key = int | str

#: Largest blob kept inline in one document; larger ones are split into chunks of
#: this size. MongoDB's limit is 16 MiB per document, the rest is headroom for ids.
CHUNK_BYTES = 15 * 1024 * 1024

# SecantusDB evaluates ``$in`` in time quadratic in the list length (1000 ids: 1.9 s;
# 40 queries of 25 ids: 0.15 s). Real MongoDB does not care either way.
_IN_BATCH = 25

# Batch numbers and map versions are zero-padded so string order is numeric order.
_NUM_WIDTH = 12
_MAX_NUM = 10**_NUM_WIDTH
_RUN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")
_INT64 = (-(2**63), 2**63 - 1)
# URI options whose values are secrets (compared lower-case).
_SECRET_OPTIONS = ("password", "authmechanismproperties", "secret", "token")


class StoreError(RuntimeError):
    """A store operation failed; the message is one line and holds no password."""


class MongoUnavailableError(StoreError):
    """MongoDB could not be reached within the configured timeouts."""


class MissingStateError(StoreError):
    """State documents that the protocol requires are absent: the task must fail."""

    def __init__(self, batch: int, keys: list[Key]) -> None:
        shown = ", ".join(repr(k) for k in keys[:20])
        more = f" … ({len(keys)} in all)" if len(keys) > 20 else ""
        super().__init__(f"missing state for batch {batch}: keys {shown}{more}")
        self.batch = batch
        self.keys = keys


def _userinfo_span(uri: str) -> tuple[int, int] | None:
    """(start, end) of ``user:password`` in a mongodb URI, or None without one.

    The last ``@`` before the query string ends the user info, so a password with a
    raw ``@`` or ``/`` (invalid, but people write it) is still found whole.
    """
    scheme_end = uri.find("://")
    if scheme_end < 0:
        return None
    start = scheme_end + 3
    query = uri.find("?", start)
    at = uri.rfind("@", start, query if query >= 0 else len(uri))
    return (start, at) if at >= 0 else None


def mask_uri(uri: str) -> str:
    """The URI with its password (and secret-valued options) replaced by ``***``.

    >>> mask_uri("mongodb://user:s3cret@db1:27017,db2/cep?authSource=admin")
    'mongodb://user:***@db1:27017,db2/cep?authSource=admin'
    """
    span = _userinfo_span(uri)
    if span is not None:
        start, end = span
        user, sep, _password = uri[start:end].partition(":")
        if sep:
            uri = f"{uri[:start]}{user}:***{uri[end:]}"
    base, sep, query = uri.partition("?")
    if not sep:
        return uri
    options = []
    for option in query.split("&"):
        name, eq, _value = option.partition("=")
        secret = bool(eq) and any(word in name.lower() for word in _SECRET_OPTIONS)
        options.append(f"{name}=***" if secret else option)
    return f"{base}?{'&'.join(options)}"


def _secrets(uri: str) -> list[str]:
    """The password as written and percent-decoded, to scrub from driver messages."""
    span = _userinfo_span(uri)
    if span is None:
        return []
    _user, sep, password = uri[span[0] : span[1]].partition(":")
    return [p for p in {password, unquote(password)} if sep and p]


def open_client(uri: str, defaults: Mapping[str, Any]) -> MongoClient:
    """A client with ``defaults`` for the options the URI does not spell (the URI wins,
    where pymongo would let the keyword win), so a deployment's settings live in it.

    The URI's options are read from its raw query: pymongo's parse_uri resolves
    mongodb+srv names over DNS, which the client is about to do anyway.
    """
    query = uri.partition("?")[2]
    in_uri = {opt.partition("=")[0].lower() for opt in query.split("&")}
    return MongoClient(uri, **{k: v for k, v in defaults.items() if k.lower() not in in_uri})


def selection_timeout_ms(client: MongoClient | None, default_ms: int) -> int:
    """The server-selection time-out a client uses (``default_ms`` before it exists)."""
    if client is None:
        return default_ms
    return round(client.options.server_selection_timeout * 1000)


def driver_reason(uri: str, exc: BaseException) -> str:
    """The driver's message, first part only (it appends the whole topology), with the
    URI's password scrubbed."""
    text = str(exc).split(", Timeout:")[0].split(" (configured timeouts")[0]
    for secret in _secrets(uri):
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    return f"{type(exc).__name__}: {text[:300]}"


@contextmanager
def mongo_errors(uri: str, operation: str, selection_timeout_ms: Callable[[], int]
                 ) -> Iterator[None]:
    """Turn any pymongo failure inside into a one-line :class:`StoreError` naming the
    operation and the masked URI; ``selection_timeout_ms()`` gives the time-out in
    force when it fails (asked then: the client may be created inside)."""
    try:
        yield
    except ConnectionFailure as exc:
        raise MongoUnavailableError(
            f"MongoDB unreachable at {mask_uri(uri)} during {operation} "
            f"(server selection timeout {selection_timeout_ms()} ms): "
            f"{driver_reason(uri, exc)}"
        ) from None
    except PyMongoError as exc:
        raise StoreError(
            f"MongoDB {operation} failed at {mask_uri(uri)}: {driver_reason(uri, exc)}"
        ) from None


def encode_key_map(key_map: np.ndarray) -> bytes:
    """Serialise a key map (engine per dense key id) compactly: ``np.save`` + zlib.

    One million keys as int32 is 4 MB raw and well under 1 MB compressed, since the
    map is mostly the same few engine ids. ``allow_pickle=False`` keeps it data only.
    """
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(key_map), allow_pickle=False)
    return zlib.compress(buf.getvalue(), 6)


def decode_key_map(data: bytes) -> np.ndarray:
    """Inverse of :func:`encode_key_map`."""
    return np.load(io.BytesIO(zlib.decompress(data)), allow_pickle=False)


def _key_part(key: Key) -> tuple[Key, str]:
    """(key normalised to int or str, type tag). numpy integers count as int."""
    if isinstance(key, bool):
        raise TypeError(f"state keys must be int or str, not bool ({key!r})")
    if isinstance(key, int | np.integer):
        value = int(key)
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"int key {value} does not fit in 64 bits")
        return value, "i"
    if isinstance(key, str):
        return key, "s"
    raise TypeError(f"state keys must be int or str, not {type(key).__name__} ({key!r})")


def _number(name: str, value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < _MAX_NUM:
        raise ValueError(f"{name} must be in [0, {_MAX_NUM}), got {value}")
    return f"{int(value):0{_NUM_WIDTH}d}"


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# (process, URI, options) -> the one client every shipped copy in that process uses
_SHARED_CLIENTS: dict[tuple[int, str, tuple[tuple[str, Any], ...]], MongoClient] = {}
_SHARED_LOCK = threading.Lock()


def close_shared_clients() -> None:
    """Close the clients this process's shipped copies share; their next use opens anew.

    Executor tasks call it when they end. A Python worker outlives its task and its run,
    and the MongoDB a run used (an embedded server) may be gone: a client left behind
    keeps connecting to that server's old 127.0.0.1 port, and when Spark later gives
    the same port to a stateful task's state server, which serves the first connection
    it accepts, the client's hello reached the state server before the engine's worker
    did; the server's thread died on a malformed request and the task waited for ever."""
    with _SHARED_LOCK:
        mine = [key for key in _SHARED_CLIENTS if key[0] == os.getpid()]
        clients = [_SHARED_CLIENTS.pop(key) for key in mine]
    for client in clients:
        client.close()


class ProcessLocalClient:
    """A MongoDB client that each process opens for itself on first use.

    Picklable: Spark ships these objects to executors, and a ``MongoClient`` must not
    cross a fork or a pickle, so the client is dropped on pickling and reopened (with
    cep's write concern and the time-outs, the URI's own options winning) in the
    process that next needs it. Every task unpickles its own copy, so the copies in a
    process share one client: one each would leave a client, with its monitor threads
    and connections, behind for every task (a Python worker runs many), all waking to
    poll the server and competing for the worker's GIL. Shared by the state store and
    the event writer."""

    APPNAME = "cep"

    def __init__(self, uri: str, *, connect_timeout_ms: int, server_selection_timeout_ms: int,
                 socket_timeout_ms: int) -> None:
        self.uri = uri
        self.connect_timeout_ms = connect_timeout_ms
        self.server_selection_timeout_ms = server_selection_timeout_ms
        self.socket_timeout_ms = socket_timeout_ms
        self._client: MongoClient | None = None
        self._client_pid = 0
        self._lock = threading.Lock()
        self._shipped = False  # a copy that came through pickle: shares its process's client

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_client=None, _client_pid=0, _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._shipped = True

    def _options(self) -> dict[str, Any]:
        return {"connectTimeoutMS": self.connect_timeout_ms,
                "serverSelectionTimeoutMS": self.server_selection_timeout_ms,
                "socketTimeoutMS": self.socket_timeout_ms,
                "appname": self.APPNAME, "w": "majority", "journal": True}

    def _process_client(self) -> MongoClient:
        with self._lock:
            if self._shipped:  # looked up each time: tasks close the shared ones as they end
                self._client = self._shared_client()
            elif self._client is None or self._client_pid != os.getpid():
                self._client = open_client(self.uri, self._options())
                self._client_pid = os.getpid()
            return self._client

    def _shared_client(self) -> MongoClient:
        options = self._options()
        key = (os.getpid(), self.uri, tuple(sorted(options.items())))
        with _SHARED_LOCK:
            client = _SHARED_CLIENTS.get(key)
            if client is None:
                client = _SHARED_CLIENTS[key] = open_client(self.uri, options)
            return client

    def close(self) -> None:
        """Close this process's client (a later use opens a new one); a shipped copy
        only lets go of the client its process's other copies still use."""
        with self._lock:
            if self._client is not None and not self._shipped:
                self._client.close()
            self._client = None


class StateStore(ProcessLocalClient, Closing):
    """Key maps and key-state documents of one run, over pymongo.

    Picklable: Spark ships it to executors, where each process opens its own client
    on first use (see :class:`ProcessLocalClient`).
    """

    APPNAME = "cep-migration"

    def __init__(
        self,
        uri: str,
        database: str = "cep",
        *,
        run_id: str,
        connect_timeout_ms: int = 5000,
        server_selection_timeout_ms: int = 5000,
        socket_timeout_ms: int = 120_000,
    ) -> None:
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"run_id must match {_RUN_ID.pattern}, got {run_id!r}")
        super().__init__(uri, connect_timeout_ms=connect_timeout_ms,
                         server_selection_timeout_ms=server_selection_timeout_ms,
                         socket_timeout_ms=socket_timeout_ms)
        self.database = database
        self.run_id = run_id

    # -- connection and error mapping ---------------------------------------------

    def _db(self) -> Any:
        return self._process_client()[self.database]

    def _coll(self, name: str) -> Collection:
        return self._db()[name]

    def _op(self, operation: str) -> AbstractContextManager[None]:
        """Turn any pymongo failure inside into a one-line :class:`StoreError`."""
        return mongo_errors(self.uri, operation, self._selection_timeout_ms)

    def _selection_timeout_ms(self) -> int:
        """The time-out in force (the URI may have overridden the constructor's)."""
        return selection_timeout_ms(self._client, self.server_selection_timeout_ms)

    # -- blobs: inline or chunked ---------------------------------------------------

    @staticmethod
    def _blob_ops(
        head_id: str, fields: dict[str, Any], data: bytes
    ) -> tuple[list[ReplaceOne], dict[str, Any]]:
        """Chunk upserts (to run first) and the head document for one blob."""
        head: dict[str, Any] = {"_id": head_id, **fields, "size": len(data)}
        if len(data) <= CHUNK_BYTES:
            head["data"] = data
            return [], head
        digest = hashlib.blake2b(data, digest_size=8).hexdigest()
        parts = range(0, len(data), CHUNK_BYTES)
        head.update(hash=digest, parts=len(parts))
        chunks = []
        for i, offset in enumerate(parts):
            chunk_id = f"{head_id}#{digest}/{i}"
            doc = {"data": data[offset : offset + CHUNK_BYTES]}
            chunks.append(ReplaceOne({"_id": chunk_id}, doc, upsert=True))
        return chunks, head

    @staticmethod
    def _assemble(heads: Iterable[dict[str, Any]], chunks: Collection) -> dict[str, bytes]:
        """Head id -> blob, fetching the chunks of chunked heads."""
        blobs: dict[str, bytes] = {}
        chunked: dict[str, list[str]] = {}  # head id -> its chunk ids in order
        sizes: dict[str, int] = {}
        for head in heads:
            if "data" in head:
                blobs[head["_id"]] = head["data"]
            else:
                prefix = f"{head['_id']}#{head['hash']}/"
                chunked[head["_id"]] = [f"{prefix}{i}" for i in range(head["parts"])]
                sizes[head["_id"]] = head["size"]
        parts: dict[str, bytes] = {}
        all_ids = [chunk_id for ids in chunked.values() for chunk_id in ids]
        for batch_ids in _batches(all_ids, _IN_BATCH):
            found = chunks.find({"_id": {"$in": batch_ids}})
            parts.update((doc["_id"], doc["data"]) for doc in found)
        for head_id, chunk_ids in chunked.items():
            absent = [c for c in chunk_ids if c not in parts]
            if absent:
                raise StoreError(f"chunk {absent[0]} of {head_id} is missing (store corrupted)")
            blob = b"".join(parts[c] for c in chunk_ids)
            if len(blob) != sizes[head_id]:
                raise StoreError(
                    f"{head_id}: {len(blob)} bytes assembled, {sizes[head_id]} expected"
                )
            blobs[head_id] = blob
        return blobs

    def _delete_range(self, collection: str, low: str, high: str) -> int:
        return self._coll(collection).delete_many({"_id": {"$gte": low, "$lt": high}}).deleted_count

    # -- key maps --------------------------------------------------------------------

    def _map_id(self, version: int) -> str:
        return f"{self.run_id}/{_number('version', version)}"

    def put_key_map(self, version: int, key_map: bytes | np.ndarray) -> bool:
        """Write map ``version`` once. False (and nothing changed) if it exists.

        ``key_map`` is either bytes from :func:`encode_key_map` (or any bytes the
        caller chooses) or an array that is encoded here. A replayed batch calls this
        again; the first complete write wins, because the maps must never change
        once a batch may have read them.
        """
        if isinstance(key_map, np.ndarray):
            data = encode_key_map(key_map)
        elif isinstance(key_map, bytes | bytearray | memoryview):
            data = bytes(key_map)
        else:
            raise TypeError(f"key_map must be bytes or a numpy array, not {type(key_map).__name__}")
        head_id = self._map_id(version)
        with self._op(f"put_key_map(version={version})"):
            heads = self._coll("key_maps")
            if heads.find_one({"_id": head_id}, {"_id": 1}) is not None:
                return False
            fields = {"run": self.run_id, "version": int(version)}
            chunk_ops, head = self._blob_ops(head_id, fields, data)
            if chunk_ops:
                self._coll("key_map_chunks").bulk_write(chunk_ops, ordered=True)
            try:
                heads.insert_one(head)
            except DuplicateKeyError:
                return False
        return True

    def get_key_map(self, version: int) -> bytes | None:
        """The bytes stored for map ``version``, or None if it was never written."""
        head_id = self._map_id(version)
        with self._op(f"get_key_map(version={version})"):
            head = self._coll("key_maps").find_one({"_id": head_id})
            if head is None:
                return None
            return self._assemble([head], self._coll("key_map_chunks"))[head_id]

    # -- key states ------------------------------------------------------------------

    def _state_prefix(self, batch: int) -> str:
        return f"{self.run_id}/{_number('batch', batch)}/"

    def put_states(self, batch: int, states: Mapping[Key, bytes]) -> None:
        """Upsert the state of each key for ``batch`` (a replay rewrites the same ids).

        An empty ``bytes`` is a valid state and must still be written: the importer
        fails on a missing document, and an exporting engine may own a key it never
        saw an event for.
        """
        if not states:
            return
        prefix = self._state_prefix(batch)
        chunk_ops: list[ReplaceOne] = []
        head_ops: list[ReplaceOne] = []
        for raw_key, data in states.items():
            key, tag = _key_part(raw_key)
            fields = {"run": self.run_id, "batch": int(batch), "key": key, "kt": tag}
            chunks, head = self._blob_ops(f"{prefix}{tag}:{key}", fields, bytes(data))
            chunk_ops += chunks
            head_ops.append(ReplaceOne({"_id": head["_id"]}, head, upsert=True))
        with self._op(f"put_states(batch={batch}, {len(states)} keys)"):
            if chunk_ops:
                self._coll("state_chunks").bulk_write(chunk_ops, ordered=True)
            self._coll("states").bulk_write(head_ops, ordered=False)

    def get_states(self, batch: int, keys: Iterable[Key]) -> dict[Key, bytes]:
        """The state of every key in ``keys`` for ``batch``.

        Raises :class:`MissingStateError` naming the keys without a document: an
        engine must never run a key with half its state.
        """
        prefix = self._state_prefix(batch)
        ids: dict[str, Key] = {}
        for raw_key in keys:
            key, tag = _key_part(raw_key)
            ids[f"{prefix}{tag}:{key}"] = key
        if not ids:
            return {}
        with self._op(f"get_states(batch={batch}, {len(ids)} keys)"):
            heads = self._coll("states")
            found = [
                doc
                for batch_ids in _batches(list(ids), _IN_BATCH)
                for doc in heads.find({"_id": {"$in": batch_ids}})
            ]
            missing = set(ids) - {doc["_id"] for doc in found}
            if missing:
                raise MissingStateError(batch, [ids[i] for i in ids if i in missing])
            blobs = self._assemble(found, self._coll("state_chunks"))
        return {ids[head_id]: blob for head_id, blob in blobs.items()}

    # -- housekeeping ----------------------------------------------------------------

    def gc(self, before_batch: int, keep_key_maps: int = 2) -> int:
        """Delete state documents of batches ``< before_batch`` and key maps of
        versions ``< before_batch - keep_key_maps``; returns how many documents went.

        Safe horizon: while batch ``t`` may still be replayed it reads documents of
        ``t - 1`` and maps ``t - 1 … t + 1``, so from batch ``t``'s ``foreachBatch``
        call ``gc(t - 1)``. The extra maps kept are for reports on past moves.
        """
        low = f"{self.run_id}/"
        state_high = self._state_prefix(before_batch)
        map_high = f"{self.run_id}/{_number('version', max(0, before_batch - keep_key_maps))}"
        with self._op(f"gc(before_batch={before_batch})"):
            return (
                self._delete_range("states", low, state_high)
                + self._delete_range("state_chunks", low, state_high)
                + self._delete_range("key_maps", low, map_high)
                + self._delete_range("key_map_chunks", low, map_high)
            )

    def drop_run(self) -> int:
        """Delete every document of this run; returns how many."""
        # "0" is the character after "/": the range is exactly the ids "<run>/…".
        low, high = f"{self.run_id}/", f"{self.run_id}0"
        with self._op("drop_run"):
            return sum(
                self._delete_range(name, low, high)
                for name in ("states", "state_chunks", "key_maps", "key_map_chunks")
            )
