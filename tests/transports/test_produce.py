"""Loading JSON lines into a topic: keys, partitions, malformed lines, the generator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cep.io.kafka_produce import produce, produce_frame
from cep.io.tweets.generator import generate_tweets
from cep.servers.kafka import EmbeddedKafka
from cep.transports.address import KafkaTransportError
from cep.transports.kafka_read import partition_ends
from cep.transports.kafka_send import ensure_topic

Name = Callable[[str], str]


def test_keyed_lines_keep_order_per_key_and_malformed_lines_go_through(
        kafka: EmbeddedKafka, fresh_name: Name, tmp_path: Path,
        consume: Callable[..., list]) -> None:
    topic = fresh_name("jsonl")
    lines = [json.dumps({"user": f"u{i % 9}" if i % 4 else i % 5, "i": i}) for i in range(3000)]
    lines.insert(1234, "{not json")
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n\n")
    assert produce(kafka.bootstrap, topic, source, 3, "user") == len(lines)
    seen = consume(kafka.bootstrap, topic)
    assert sorted(v for *_rest, v in seen) == sorted(line.encode() for line in lines)
    keys = {k for _p, _o, k, _v in seen}
    assert b"u1" in keys and b"3" in keys and None in keys  # str, int, malformed
    per_key: dict[bytes | None, list[int]] = {}
    partitions: dict[bytes | None, set[int]] = {}
    for partition, _offset, key, value in seen:  # sorted by (partition, offset)
        partitions.setdefault(key, set()).add(partition)
        if key is not None:
            per_key.setdefault(key, []).append(json.loads(value)["i"])
    assert all(len(p) == 1 for p in partitions.values())
    assert all(order == sorted(order) for order in per_key.values())


def test_unkeyed_lines_round_robin(kafka: EmbeddedKafka, fresh_name: Name,
                                  tmp_path: Path, consume: Callable[..., list]) -> None:
    topic = fresh_name("rr")
    source = tmp_path / "in.jsonl"
    source.write_text("".join(f'{{"i": {i}}}\n' for i in range(10)))
    assert produce(kafka.bootstrap, topic, source, 3) == 10
    placed = {json.loads(v)["i"]: p for p, _o, _k, v in consume(kafka.bootstrap, topic)}
    assert placed == {i: i % 3 for i in range(10)}


def test_partition_count_mismatch_is_refused(kafka: EmbeddedKafka, fresh_name: Name) -> None:
    topic = fresh_name("count")
    assert ensure_topic(kafka.bootstrap, topic, 2) == 2
    assert ensure_topic(kafka.bootstrap, topic, None) == 2
    with pytest.raises(KafkaTransportError, match="has 2 partitions, not 4"):
        ensure_topic(kafka.bootstrap, topic, 4)


def test_generated_tweets(kafka: EmbeddedKafka, fresh_name: Name,
                          consume: Callable[..., list]) -> None:
    topic = fresh_name("tweets")
    frame = generate_tweets(500).frame
    assert produce_frame(kafka.bootstrap, topic, frame, 3, "user", ("ts",)) == 500
    assert sum(h for _l, h in partition_ends(kafka.bootstrap, topic).values()) == 500
    first = json.loads(min(consume(kafka.bootstrap, topic), key=lambda r: r[3])[3])
    assert set(first) == set(frame.columns)
    assert first["ts"].endswith("Z")
