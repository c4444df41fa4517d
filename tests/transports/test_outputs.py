"""The per-batch publishers of ``--output kafka://`` and ``--output mongodb://``: a batch's
JSON lines become records keyed by the event key, or documents with deterministic ids,
and a replayed batch adds nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow as pa
import pytest
from pymongo import MongoClient

from cep.run_config import is_uri_output
from cep.servers.kafka import EmbeddedKafka
from cep.servers.mongo import EmbeddedMongo
from cep.transports.outputs import KafkaPublisher, MongoPublisher

EVENTS = [{"rule": "fsd", "key": 5, "seq": 0, "ts": "2026-01-01T00:00:00.000Z", "text": "été"},
          {"rule": "agg", "key": "u1", "seq": 3, "ts": None, "n": 2},
          {"rule": "all", "key": None, "seq": 7, "ts": None}]


def _text(events: list[dict]) -> bytes:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events).encode()


def _keys(events: list[dict]) -> pa.Array:
    """Each event's key as JSON text, as the engines leave it in their order files."""
    return pa.array([json.dumps(e["key"], ensure_ascii=False) for e in events], pa.string())


def test_kafka_publisher_writes_each_batch_once(kafka: EmbeddedKafka,
                                                fresh_name: Callable[[str], str],
                                                consume: Callable[..., list]) -> None:
    topic = fresh_name("events")
    uri = f"kafka://{kafka.bootstrap}/{topic}"
    assert is_uri_output(uri) and not is_uri_output("out.jsonl")
    publisher = KafkaPublisher(uri, "run-a")
    assert publisher.publish(0, _text(EVENTS[:2]), _keys(EVENTS[:2])) == 2
    assert publisher.publish(0, _text(EVENTS[:2]), _keys(EVENTS[:2])) == 0  # a replay of batch 0
    assert publisher.publish(1, b"", _keys([])) == 0
    assert publisher.publish(2, _text(EVENTS[2:]), _keys(EVENTS[2:])) == 1
    publisher.close()
    again = KafkaPublisher(uri, "run-a")  # a restarted run replays batch 2
    assert again.publish(2, _text(EVENTS[2:]), _keys(EVENTS[2:])) == 0
    again.close()
    seen = consume(kafka.bootstrap, topic)
    assert [json.loads(v) for *_rest, v in seen] == EVENTS
    assert [k for _p, _o, k, _v in seen] == [b"5", b'"u1"', None]


def test_mongo_publisher_upserts_by_id(mongo: EmbeddedMongo,
                                       fresh_name: Callable[[str], str]) -> None:
    collection = fresh_name("events")
    publisher = MongoPublisher(f"{mongo.uri.rstrip('/')}/cep.{collection}")
    assert publisher.publish(0, _text(EVENTS), _keys(EVENTS)) == 3
    assert publisher.publish(0, _text(EVENTS), _keys(EVENTS)) == 0  # a replay
    publisher.close()
    with MongoClient(mongo.uri) as client:
        docs = list(client.cep[collection].find({}, {"_id": 0}).sort("seq", 1))
    assert docs == EVENTS


def test_a_batch_whose_keys_do_not_fit_its_lines_is_refused(kafka: EmbeddedKafka,
                                                             fresh_name: Callable[[str], str]
                                                             ) -> None:
    publisher = KafkaPublisher(f"kafka://{kafka.bootstrap}/{fresh_name('events')}", "run-b")
    try:
        with pytest.raises(ValueError, match="2 keys for 3 lines"):
            publisher.publish(0, _text(EVENTS), _keys(EVENTS[:2]))
    finally:
        publisher.close()
