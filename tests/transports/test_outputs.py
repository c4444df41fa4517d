"""The per-batch publishers of ``--output kafka://`` and ``--output mongodb://``: a batch's
JSON lines become records keyed by the event key, or documents with deterministic ids,
and a replayed batch adds nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st
from pymongo import MongoClient
from support.shares import bounded, note

from cep.run_config import is_uri_output
from cep.servers.kafka import EmbeddedKafka
from cep.servers.mongo import EmbeddedMongo
from cep.transports.outputs import KafkaPublisher, MongoPublisher, record_keys

EVENTS = [{"rule": "fsd", "key": 5, "seq": 0, "ts": "2026-01-01T00:00:00.000Z", "text": "été"},
          {"rule": "agg", "key": "u1", "seq": 3, "ts": None, "n": 2},
          {"rule": "all", "key": None, "seq": 7, "ts": None}]


def _text(events: list[dict]) -> bytes:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events).encode()


def test_kafka_publisher_writes_each_batch_once(kafka: EmbeddedKafka,
                                                fresh_name: Callable[[str], str],
                                                consume: Callable[..., list]) -> None:
    topic = fresh_name("events")
    uri = f"kafka://{kafka.bootstrap}/{topic}"
    assert is_uri_output(uri) and not is_uri_output("out.jsonl")
    publisher = KafkaPublisher(uri, "run-a")
    assert publisher.publish(0, _text(EVENTS[:2])) == 2
    assert publisher.publish(0, _text(EVENTS[:2])) == 0  # a replay of batch 0
    assert publisher.publish(1, b"") == 0
    assert publisher.publish(2, _text(EVENTS[2:])) == 1
    publisher.close()
    again = KafkaPublisher(uri, "run-a")  # a restarted run replays batch 2
    assert again.publish(2, _text(EVENTS[2:])) == 0
    again.close()
    seen = consume(kafka.bootstrap, topic)
    assert [json.loads(v) for *_rest, v in seen] == EVENTS
    assert [k for _p, _o, k, _v in seen] == [b"5", b'"u1"', None]


def test_mongo_publisher_upserts_by_id(mongo: EmbeddedMongo,
                                       fresh_name: Callable[[str], str]) -> None:
    collection = fresh_name("events")
    publisher = MongoPublisher(f"{mongo.uri.rstrip('/')}/cep.{collection}")
    assert publisher.publish(0, _text(EVENTS)) == 3
    assert publisher.publish(0, _text(EVENTS)) == 0  # a replay
    publisher.close()
    with MongoClient(mongo.uri) as client:
        docs = list(client.cep[collection].find({}, {"_id": 0}).sort("seq", 1))
    assert docs == EVENTS


KEYS = st.recursive(
    st.none() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.sampled_from(["seq", ',"seq":', '","seq":', "été", '\\"', "\n"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["seq", "a", "key"]), inner, max_size=3),
    max_leaves=6)
RULES = st.text() | st.sampled_from(["pair", 'a","key":1,"seq":', "r\\"])


@given(st.lists(st.tuples(RULES, KEYS, st.integers(0, 99)), max_size=8), st.booleans())
def _record_keys_are_the_parsed_lines_keys(events: list, compact: bool) -> None:
    """Cut out of cep's compact lines or parsed from any other form, a record's key is
    what parsing the whole line and writing its key with ``json.dumps`` gives.

    Oracle: ``json.loads`` and ``json.dumps`` of each whole line (the standard library:
    no code shared with ``record_keys``'s cut). Examples with no line compare nothing:
    their share is measured and bounded."""
    separators = (",", ":") if compact else None
    text = "".join(json.dumps({"rule": rule, "key": key, "seq": seq, "n": 1},
                              ensure_ascii=False, separators=separators) + "\n"
                   for rule, key, seq in events).encode()
    lines = text.splitlines()
    expected = [None if json.loads(line)["key"] is None
                else json.dumps(json.loads(line)["key"]).encode() for line in lines]
    note(lines)
    assert record_keys(text, lines) == expected


def test_record_keys_are_the_parsed_lines_keys() -> None:
    with bounded("record keys (no line)"):
        _record_keys_are_the_parsed_lines_keys()


def test_record_keys_of_cep_lines_take_the_fast_path(monkeypatch) -> None:
    """cep's own lines (compact, rule then key) need no parse per line: the keys come
    from the one pass, each distinct key text parsed once."""
    text = b'{"rule":"r","key":7,"seq":0,"n":1}\n{"rule":"r","key":"u","seq":1}\n' * 3
    parsed: list[bytes] = []
    loads = json.loads

    def counting(value: bytes):
        parsed.append(value)
        return loads(value)

    monkeypatch.setattr(json, "loads", counting)
    keys = record_keys(text, text.splitlines())
    assert keys == [b"7", b'"u"'] * 3
    assert sorted(parsed) == [b'"u"', b"7"]
