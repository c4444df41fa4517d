"""Events upserted into MongoDB (the embedded SecantusDB server) by deterministic ids."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest
from pymongo import MongoClient

from cep.servers.mongo import EmbeddedMongo
from cep.transports.mongo_client import MongoUnavailableError
from cep.transports.mongo_write import MongoEventWriter, event_id, parse_mongo_target

Name = Callable[[str], str]


def _events(rule: str, n: int, keys: list) -> list[dict]:
    """n events of a rule spread over keys; ``seq`` counts each key's events."""
    return [{"rule": rule, "key": keys[i % len(keys)], "seq": i // len(keys),
             "ts": f"2026-01-01T00:00:0{i % 10}Z", "total": i * 1.5} for i in range(n)]


def test_ids_are_deterministic_and_typed() -> None:
    event = {"rule": "r", "key": 5, "seq": 7}
    assert event_id(event) == "r/000000000007/i:5"
    assert event_id({**event, "key": "5"}) == "r/000000000007/s:5"
    assert event_id({**event, "key": "a/b"}) == "r/000000000007/s:a/b"
    assert event_id({**event, "key": None}) == "r/000000000007/n:"
    with pytest.raises(TypeError, match=r"keys must be int or str, not float \(1\.5\)"):
        event_id({**event, "key": 1.5})


def test_target_uri_forms() -> None:
    assert parse_mongo_target("mongodb://u:p@h1:27017,h2/cep.alerts.fsd?tls=true") == (
        "mongodb://u:p@h1:27017,h2/?tls=true", "cep", "alerts.fsd")
    with pytest.raises(ValueError, match=r"u:\*\*\*@h") as info:
        parse_mongo_target("mongodb://u:secret@h/cep")
    assert "secret" not in str(info.value)
    with pytest.raises(ValueError, match="not a mongodb"):
        parse_mongo_target("kafka://h:1/t")


def test_a_replayed_batch_writes_nothing_twice(mongo: EmbeddedMongo, fresh_name: Name) -> None:
    collection = fresh_name("alerts")
    batch = _events("fsd", 300, [0, 1, 2, 3]) + _events("agg", 90, ["k0", "k1", 0])
    # (rule, key, seq) must be unique for the test to be meaningful
    assert len({event_id(e) for e in batch}) == len(batch)
    writer = MongoEventWriter.from_uri(f"{mongo.uri}cep_test.{collection}")
    assert writer.write(batch[:200], batch_id=0) == 200
    assert writer.write(batch, batch_id=0) == len(batch) - 200  # replay plus the rest
    assert writer.write(batch, batch_id=0) == 0
    # a copy shipped to another process (pickled) behaves the same
    clone = pickle.loads(pickle.dumps(writer))
    assert clone.write(batch[::7]) == 0
    clone.close()
    # a replayed event whose content differs is replaced: the last write is stored
    batch[5] = {**batch[5], "total": -1.0}
    assert writer.write(batch[:10]) == 0
    writer.close()
    with MongoClient(mongo.uri) as client:
        docs = list(client.cep_test[collection].find())
    assert len(docs) == len(batch)
    by_id = {d.pop("_id"): d for d in docs}
    assert by_id == {event_id(e): e for e in batch}


def test_an_unreachable_server_is_one_masked_line(closed_port: int) -> None:
    uri = f"mongodb://bob:pa55word@127.0.0.1:{closed_port}/"
    writer = MongoEventWriter.from_uri(f"{uri}db.c?authSource=admin",
                                       server_selection_timeout_ms=500)
    with pytest.raises(MongoUnavailableError) as info:
        writer.write(_events("r", 3, [1]), batch_id=9)
    message = str(info.value)
    assert "bob:***@127.0.0.1" in message and "pa55word" not in message
    assert "(batch 9)" in message and "\n" not in message
