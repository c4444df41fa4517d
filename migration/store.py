"""MongoDB store for key maps and moved keys' state (docs/architecture.md#handoff-protocol).

Collections (in ``database``, shared by several runs, every id prefixed by the run):

``key_maps``        one head per map version, ``_id = "<run>/<version:012d>"``
``states``          one head per (name, batch), ``_id = "<run>/<batch:012d>/<i|s>:<name>"``:
                    the engines name each parcel (the keys one engine hands another,
                    ``migration.protocol.parcel_name``)
``key_map_chunks``, ``state_chunks``   parts of blobs larger than :data:`CHUNK_BYTES`,
                    ``_id = "<head _id>#<content hash>/<part>"``

Why string ids of that shape: SecantusDB scans the whole collection for a query on a
sub-document ``_id`` (measured: 1000 upserts 56 s vs 0.3 s), and putting run and batch
first makes "everything of this run before batch b" an ``_id`` range, so gc and
``drop_run`` need no secondary index. The type tag keeps the int name 5 and the str name
``"5"`` apart; heads also carry the name as ``key`` and ``kt`` (its type) for people
reading the collection.

A blob of up to :data:`CHUNK_BYTES` sits in its head's ``data``; a larger one is cut
into chunk documents (MongoDB refuses documents over 16 MiB) written *before* the head,
and the head names their content hash. The head is therefore the commit point: a
reader never sees a head whose chunks are missing, and a replay that writes different
bytes (state blobs are not always byte-identical: set order) switches every part at once.

State blobs are opaque here. They are written by ``Engine.export_keys`` in the data-only
format of :mod:`cep.engine.codec`, and ``Engine.open_parcel`` refuses anything else (a
pickle planted by whoever can write to this database is never loaded, let alone run).

The client, its errors and its settings are :mod:`cep.transports.mongo_client`'s: every
operation fails with one line (:class:`~cep.transports.mongo_client.StoreError`, or
:class:`~cep.transports.mongo_client.MongoUnavailableError` after the server-selection
time-out) naming the masked URI, and writes use ``w: "majority"`` and ``j: true`` unless
the URI says otherwise: a handoff document lost after its batch committed could never be
rewritten (the batch is not replayed), so the run would be stuck for good.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from pymongo import ReplaceOne
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from cep.closing import Closing
from cep.transports.mongo_client import (
    ProcessLocalClient,
    StoreError,
    key_part,
    mongo_errors,
    number_part,
    selection_timeout_ms,
)

Key = int | str

#: Largest blob kept inline in one document; larger ones are split into chunks of
#: this size. MongoDB's limit is 16 MiB per document, the rest is headroom for ids.
CHUNK_BYTES = 15 * 1024 * 1024

# SecantusDB evaluates ``$in`` in time quadratic in the list length (1000 ids: 1.9 s;
# 40 queries of 25 ids: 0.15 s). Real MongoDB does not care either way.
_IN_BATCH = 25

_RUN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


class MissingStateError(StoreError):
    """State documents that the protocol requires are absent: the task must fail."""

    def __init__(self, batch: int, keys: list[Key]) -> None:
        shown = ", ".join(repr(k) for k in keys[:20])
        more = f" … ({len(keys)} in all)" if len(keys) > 20 else ""
        super().__init__(f"missing state for batch {batch}: keys {shown}{more}")
        self.batch = batch
        self.keys = keys


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


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
        return f"{self.run_id}/{number_part('version', version)}"

    def put_key_map(self, version: int, key_map: bytes) -> bool:
        """Write map ``version`` once. False (and nothing changed) if it exists.

        ``key_map`` is opaque bytes (the Balancer writes
        :meth:`migration.protocol.KeyMap.encode`). A replayed batch calls this again;
        the first complete write wins, because the maps must never change once a batch
        may have read them.
        """
        if not isinstance(key_map, bytes | bytearray | memoryview):
            raise TypeError(f"key_map must be bytes, not {type(key_map).__name__}")
        data = bytes(key_map)
        head_id = self._map_id(version)
        with self._op(f"put_key_map(version={version})"):
            heads = self._coll("key_maps")
            fields = {"run": self.run_id, "version": int(version)}
            chunk_ops, head = self._blob_ops(head_id, fields, data)
            # an inline map is one insert (a duplicate id: it exists); chunks are only
            # written for a map that does not exist yet
            if chunk_ops and heads.find_one({"_id": head_id}, {"_id": 1}) is not None:
                return False
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
        return f"{self.run_id}/{number_part('batch', batch)}/"

    def put_states(self, batch: int, states: Mapping[Key, bytes]) -> None:
        """Upsert each named state blob for ``batch`` (a replay rewrites the same ids).
        An empty ``bytes`` is a valid blob and is written too.
        """
        if not states:
            return
        prefix = self._state_prefix(batch)
        chunk_ops: list[ReplaceOne] = []
        head_ops: list[ReplaceOne] = []
        for raw_key, data in states.items():
            key, tag = key_part(raw_key)
            fields = {"run": self.run_id, "batch": int(batch), "key": key, "kt": tag}
            chunks, head = self._blob_ops(f"{prefix}{tag}:{key}", fields, bytes(data))
            chunk_ops += chunks
            head_ops.append(ReplaceOne({"_id": head["_id"]}, head, upsert=True))
        with self._op(f"put_states(batch={batch}, {len(states)} keys)"):
            if chunk_ops:
                self._coll("state_chunks").bulk_write(chunk_ops, ordered=True)
            self._coll("states").bulk_write(head_ops, ordered=False)

    def get_states(self, batch: int, keys: Iterable[Key]) -> dict[Key, bytes]:
        """The state blob of every name in ``keys`` for ``batch``.

        Raises :class:`MissingStateError` naming the ones without a document: an
        engine must never run a key with half its state.
        """
        prefix = self._state_prefix(batch)
        ids: dict[str, Key] = {}
        for raw_key in keys:
            key, tag = key_part(raw_key)
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
        map_high = f"{self.run_id}/{number_part('version', max(0, before_batch - keep_key_maps))}"
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
