"""Complex events into a MongoDB collection, idempotently: ``--output mongodb://…/DB.COLL``.

Each event is stored under a deterministic ``_id`` made of its rule, key and sequence
number, which identify an event in a run (``seq`` counts a rule's events per key). A
replayed batch therefore meets its own documents and adds none: exactly once without
transactions, on any MongoDB and on the embedded SecantusDB server.

How: one unordered ``insert_many`` per batch; the documents refused as duplicate ids
(code 11000: a replay) are then replaced by ``ReplaceOne(upsert=True)`` in one unordered
``bulk_write``, so the stored event is the latest written, as with a plain upsert.
Inserting first is for speed: SecantusDB upserts a *new* document ~40x slower than it
inserts one with ``j: true`` (measured, 5 000 events: upsert 284/s, insert 12 128/s;
replacing existing ones 2 352/s), and real MongoDB also inserts faster than it upserts.

``_id`` is the string ``"<rule>/<seq, 12 digits>/<i|s>:<key>"``: a string because
SecantusDB scans the whole collection to find a sub-document ``_id`` (see
``migration.store``); the type tag keeps the int key 5 and the str key "5" apart (an
event without a key gets ``n:``); the key comes last so a key holding ``/`` stays
unambiguous. The document is the event's record (``rule``, ``key``, ``seq``, ``ts``,
then the rule's columns) plus ``_id``.

Connection, credentials, TLS and time-outs come from the URI exactly as for the state
store (``cep.transports.mongo_client.open_client``: the URI's options win over our
defaults), and failures are one-line :class:`cep.transports.mongo_client.StoreError`
naming the masked URI.
Writes default to ``w: "majority", j: true``: an event acknowledged and then lost
would not be rewritten, because its batch is not replayed once committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pymongo import ReplaceOne
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError

from cep.closing import Closing
from cep.transports.mongo_client import (
    ProcessLocalClient,
    key_part,
    mask_uri,
    mongo_errors,
    number_part,
    selection_timeout_ms,
)

_DUPLICATE_KEY = 11000


def parse_mongo_target(uri: str) -> tuple[str, str, str]:
    """``mongodb://HOST/DB.COLLECTION?OPTIONS`` -> (client URI without the path,
    database, collection). The collection may contain dots (``DB.a.b``)."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme not in ("mongodb", "mongodb+srv"):
        raise ValueError(f"not a mongodb:// URI: {mask_uri(uri)}")
    base, _, query = rest.partition("?")
    hosts, slash, path = base.partition("/")
    database, dot, collection = path.partition(".")
    if not slash or not database or not dot or not collection:
        raise ValueError(f"MongoDB output needs mongodb://HOST/DB.COLLECTION: {mask_uri(uri)}")
    client_uri = f"{scheme}://{hosts}/" + (f"?{query}" if query else "")
    return client_uri, database, collection


def event_id(record: Mapping[str, Any]) -> str:
    """The deterministic ``_id`` of an event record (see the module notes)."""
    key = record["key"]
    if key is None:
        key_text = "n:"
    else:
        value, tag = key_part(key)
        key_text = f"{tag}:{value}"
    return f"{record['rule']}/{number_part('seq', record['seq'])}/{key_text}"


class MongoEventWriter(ProcessLocalClient, Closing):
    """Upserts batches of event records into one collection.

    Picklable (Spark may ship it): each process opens its own client on first use.
    """

    APPNAME = "cep-output"

    def __init__(
        self,
        uri: str,
        database: str,
        collection: str,
        *,
        connect_timeout_ms: int = 5000,
        server_selection_timeout_ms: int = 5000,
        socket_timeout_ms: int = 120_000,
    ) -> None:
        super().__init__(uri, connect_timeout_ms=connect_timeout_ms,
                         server_selection_timeout_ms=server_selection_timeout_ms,
                         socket_timeout_ms=socket_timeout_ms)
        self.database = database
        self.collection = collection

    @classmethod
    def from_uri(cls, uri: str, **timeouts: int) -> MongoEventWriter:
        """From an ``--output mongodb://…/DB.COLLECTION`` URI."""
        client_uri, database, collection = parse_mongo_target(uri)
        return cls(client_uri, database, collection, **timeouts)

    def _coll(self) -> Collection:
        return self._process_client()[self.database][self.collection]

    def _timeout_ms(self) -> int:
        return selection_timeout_ms(self._client, self.server_selection_timeout_ms)

    def write(self, records: Sequence[Mapping[str, Any]], batch_id: int | None = None) -> int:
        """Upsert the events; the number of documents that were new (a replay: 0)."""
        if not records:
            return 0
        docs = [{"_id": event_id(r), **r} for r in records]
        where = f"{self.database}.{self.collection}"
        what = f"writing {len(docs)} events to {where}" + (
            f" (batch {batch_id})" if batch_id is not None else "")
        with mongo_errors(self.uri, what, self._timeout_ms):
            collection = self._coll()
            try:
                collection.insert_many(docs, ordered=False)
            except BulkWriteError as exc:
                failed = exc.details.get("writeErrors", [])
                if any(e.get("code") != _DUPLICATE_KEY for e in failed):
                    raise
                replays = [docs[e["index"]] for e in failed]
                collection.bulk_write(
                    [ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in replays],
                    ordered=False,
                )
                return len(docs) - len(replays)
        return len(docs)
