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
key, which :func:`record_keys` cuts out of the lines cep writes instead of parsing each
whole line (``json.loads`` per line took 0.65-0.97 s of the 1.1-2.1 s that publishing
200,000 events cost, measured while the machine was loaded).
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from cep.transports.address import parse_kafka_uri
from cep.transports.embedded_kafka import resolve
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter
from cep.transports.mongo_write import MongoEventWriter


class Publisher(Protocol):
    def publish(self, batch: int, text: bytes) -> int: ...

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

    def publish(self, batch: int, text: bytes) -> int:
        if not text:
            return 0
        lines = text.splitlines()
        records = list(zip(record_keys(text, lines), lines, strict=True))
        return self.writer.write(batch, records)

    def close(self) -> None:
        self.writer.close()


# The start of a line as cep writes it (``cep.engine.json_rows.event_lines_text``): the
# rule's name as a JSON string, then the key's JSON text up to the first ``,"seq":``.
_KEY_TEXT = re.compile(rb'^\{"rule":"(?:[^"\\\n]|\\.)*","key":(.*?),"seq":', re.MULTILINE)


def record_keys(text: bytes, lines: list[bytes]) -> list[bytes | None]:
    """The Kafka record key of each line of ``text`` (``lines`` its lines): the ``key``
    field as ``json.dumps`` writes it (``2134``, ``"alice"``, ``[1, "a"]``), None where
    it is null. Exactly what ``json.dumps(json.loads(line)["key"])`` gives.

    Fast path, for lines in cep's compact form: one regular-expression pass over the
    text finds each line's key text, and only the distinct ones are parsed (keys
    repeat). A cut at the first ``,"seq":`` is the whole key: that text cannot occur
    inside a JSON string (its quote would be escaped), nor end a list; inside an object
    the cut leaves the object open, which does not parse. Any line of another form
    (spaces after the separators, fields in another order) sends the whole text down
    the slow path, a parse per line."""
    texts = _KEY_TEXT.findall(text)
    if len(texts) == len(lines):
        try:
            values = {t: json.loads(t) for t in set(texts)}
        except ValueError:
            values = None
        if values is not None and not any(isinstance(v, dict) for v in values.values()):
            keys = {t: None if v is None else json.dumps(v).encode("utf-8")
                    for t, v in values.items()}
            return [keys[t] for t in texts]
    parsed = (json.loads(line)["key"] for line in lines)
    return [None if k is None else json.dumps(k).encode("utf-8") for k in parsed]


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
