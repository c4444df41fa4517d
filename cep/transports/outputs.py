"""``--output kafka://…/TOPIC`` and ``--output mongodb://…/DB.COLLECTION``: where a
micro-batch's complex events go, exactly once, from the driver.

The sink hands each batch's events as JSON lines in reference order (``seq``, then the
rule's place in the rule file): one batch at a time, so memory is bounded by a batch.

* Kafka: one transaction per batch (``kafka_write.TransactionalBatchWriter``; the batch
  id is the marker, the run id of the checkpoint names the transactional producer), each
  event one record whose value is its JSON line and whose key is its ``key`` as JSON text
  (``2134``, ``"alice"``; no key for a keyless rule). A replayed batch writes nothing.
* MongoDB: the events upserted with ``_id`` from (rule, seq, key)
  (``mongo_write.MongoEventWriter``); a replay replaces documents with themselves.

Lines are parsed with :mod:`json`, one per event: outputs are few next to inputs, and
MongoDB needs the documents anyway.
"""

from __future__ import annotations

import json
from typing import Protocol

from cep.transports.address import parse_kafka_uri
from cep.transports.embedded_kafka import resolve
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter
from cep.transports.mongo_write import MongoEventWriter


class Publisher(Protocol):
    def publish(self, batch: int, text: bytes) -> int: ...

    def close(self) -> None: ...


def is_uri_output(path: str | None) -> bool:
    """An output that is a service, not a file or directory."""
    return path is not None and path.startswith(("kafka://", "mongodb://", "mongodb+srv://"))


class KafkaPublisher:
    """A batch's events into a topic, in one transaction keyed by the batch id."""

    def __init__(self, uri: str, run_id: str) -> None:
        parsed = parse_kafka_uri(uri)
        if len(parsed.topics) != 1:
            raise ValueError(f"--output kafka:// names one topic, got {len(parsed.topics)}")
        address = resolve(parsed.address)
        self.topic = parsed.topics[0]
        ensure_topic(address, self.topic, None)
        self.writer = TransactionalBatchWriter(address, self.topic, run_id)

    def publish(self, batch: int, text: bytes) -> int:
        if not text:
            return 0
        lines = text.splitlines()
        keys = [json.loads(line)["key"] for line in lines]
        records = [(None if k is None else json.dumps(k).encode("utf-8"), line)
                   for k, line in zip(keys, lines, strict=True)]
        return self.writer.write(batch, records)

    def close(self) -> None:
        self.writer.close()


class MongoPublisher:
    """A batch's events upserted into a collection by deterministic ``_id``."""

    def __init__(self, uri: str, timeout_ms: int = 30_000) -> None:
        self.writer = MongoEventWriter.from_uri(
            uri, connect_timeout_ms=timeout_ms, server_selection_timeout_ms=timeout_ms)

    def publish(self, batch: int, text: bytes) -> int:
        records = [json.loads(line) for line in text.splitlines()]
        return self.writer.write(records, batch)

    def close(self) -> None:
        self.writer.close()


def publisher(uri: str, run_id: str, timeout_ms: int = 30_000) -> Publisher:
    """The publisher for an ``--output`` URI (see :func:`is_uri_output`)."""
    if uri.startswith("kafka://"):
        return KafkaPublisher(uri, run_id)
    return MongoPublisher(uri, timeout_ms)
