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

MongoDB's documents are the lines parsed with :mod:`json`. A Kafka record needs only its
key, which comes beside the lines: the key texts the engines wrote into their parts' order
files (``cep.spark.output.delivery.merge_parts``), never parsed out of the lines again
(``json.loads`` per line took 0.65-0.97 s of the 1.1-2.1 s that publishing 200,000 events
cost, measured while the machine was loaded; a regular-expression cut, 9.4 ms per 25,000
lines of 1,000 distinct keys on an idle machine, :func:`record_keys` 2.7 ms).
"""

from __future__ import annotations

import json
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.transports.address import parse_kafka_uri
from cep.transports.embedded_kafka import resolve
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter
from cep.transports.mongo_write import MongoEventWriter


class Publisher(Protocol):
    def publish(self, batch: int, text: bytes, key_texts: pa.Array) -> int:
        """Write one batch's lines (``key_texts[i]``: line ``i``'s key as JSON text)
        exactly once; the number written (0 for a replayed batch)."""

    def close(self) -> None: ...


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

    def publish(self, batch: int, text: bytes, key_texts: pa.Array) -> int:
        if not text:
            return 0
        lines = text.splitlines()
        if len(key_texts) != len(lines):
            raise ValueError(f"batch {batch}: {len(key_texts)} keys for {len(lines)} lines")
        return self.writer.write(batch, list(zip(record_keys(key_texts), lines,
                                                      strict=True)))

    def close(self) -> None:
        self.writer.close()


def record_keys(key_texts: pa.Array) -> list[bytes | None]:
    """The Kafka record key of each event from its key's JSON text (as the engine wrote
    it; ``key_texts[i]`` is line ``i``'s): the key as ``json.dumps`` writes it (``2134``,
    ``"alice"``, ``[1, "a"]``), None where it is null. Each distinct text is parsed
    once (keys repeat); a line's key is then a lookup by its dictionary code."""
    encoded = pc.dictionary_encode(key_texts)
    values = [json.loads(text) for text in encoded.dictionary.to_pylist()]
    keys = np.array([None if v is None else json.dumps(v).encode("utf-8") for v in values],
                    dtype=object)
    return keys[encoded.indices.to_numpy(zero_copy_only=False)].tolist()


class MongoPublisher:
    """A batch's events upserted into a collection by deterministic ``_id``."""

    def __init__(self, uri: str, timeout_ms: int = 30_000) -> None:
        self.writer = MongoEventWriter.from_uri(
            uri, connect_timeout_ms=timeout_ms, server_selection_timeout_ms=timeout_ms)

    def publish(self, batch: int, text: bytes, key_texts: pa.Array) -> int:
        records = [json.loads(line) for line in text.splitlines()]
        return self.writer.write(records, batch)

    def close(self) -> None:
        self.writer.close()


def publisher(uri: str, run_id: str, timeout_ms: int = 30_000) -> Publisher:
    """The publisher for an ``--output`` URI (see :func:`is_uri_output`)."""
    if uri.startswith("kafka://"):
        return KafkaPublisher(uri, run_id)
    return MongoPublisher(uri, timeout_ms)
