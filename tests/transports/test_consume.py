"""``cep consume``: a topic's records read back as JSON lines by the command line, as
Kafka's console consumer prints them, against a real embedded broker on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer

from cep.servers.kafka import EmbeddedKafka
from cep.transports.kafka_send import ensure_topic

ROOT = Path(__file__).parent.parent.parent
Name = Callable[[str], str]


def _consume(uri: str, *options: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cep.cli", "consume", uri, *options],
                          cwd=ROOT, capture_output=True, timeout=timeout)


def _send(bootstrap: str, topic: str, records: list[tuple[int, bytes | None]],
          transactional: str | None = None, abort: bool = False) -> None:
    config = {"bootstrap.servers": bootstrap}
    if transactional:
        config["transactional.id"] = transactional
    producer = Producer(config)
    if transactional:
        producer.init_transactions()
        producer.begin_transaction()
    for partition, value in records:
        producer.produce(topic, value=value, key=b"k", partition=partition)
    if transactional:
        (producer.abort_transaction if abort else producer.commit_transaction)()
    producer.flush()


def test_prints_every_committed_value_once_and_stops_at_the_end(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """All partitions' values, a partition's in offset order; an aborted transaction's
    records, tombstones and what a newline would break are handled; ``--max``."""
    topic = fresh_name("consume")
    ensure_topic(kafka.bootstrap, topic, 3)
    values = [json.dumps({"i": i, "p": i % 3}).encode() for i in range(30)]
    _send(kafka.bootstrap, topic, [(i % 3, v) for i, v in enumerate(values)])
    _send(kafka.bootstrap, topic, [(0, b'{"aborted": true}')], f"{topic}-a", abort=True)
    _send(kafka.bootstrap, topic, [(1, b'{"i": 30,\n"p": 1}'), (2, None)], f"{topic}-c")
    uri = f"kafka://{kafka.bootstrap}/{topic}"
    done = _consume(uri)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert sorted(r["i"] for r in rows) == list(range(31))
    for p in range(3):
        mine = [r["i"] for r in rows if r["p"] == p]
        assert mine == sorted(mine)
    assert b"31 records from" in done.stderr
    few = _consume(uri, "--max", "4")
    assert few.returncode == 0 and len(few.stdout.splitlines()) == 4
    meta = _consume(uri, "--metadata", "--max", "40")
    records = [json.loads(line) for line in meta.stdout.decode().splitlines()]
    assert len(records) == 32  # the tombstone too, with its null value
    assert {(r["topic"], r["key"]) for r in records} == {(topic, "k")}
    assert sorted(r["value"]["i"] for r in records if r["value"]) == list(range(31))
    assert {r["partition"] for r in records} == {0, 1, 2}
    latest = _consume(uri, "--from", "latest")
    assert latest.returncode == 0 and latest.stdout == b""


def test_follow_prints_records_that_arrive_later(kafka: EmbeddedKafka, fresh_name: Name
                                                 ) -> None:
    """``--from latest --follow``: only what arrives after the start, until ``--max``."""
    topic = fresh_name("follow")
    ensure_topic(kafka.bootstrap, topic, 2)
    _send(kafka.bootstrap, topic, [(0, b'{"old": 1}')])
    proc = subprocess.Popen(
        [sys.executable, "-m", "cep.cli", "consume", f"kafka://{kafka.bootstrap}/{topic}",
         "--from", "latest", "--follow", "--max", "3"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        sent = 0
        while proc.poll() is None and time.monotonic() < deadline:
            _send(kafka.bootstrap, topic, [(sent % 2, json.dumps({"new": sent}).encode())])
            sent += 1
            time.sleep(0.5)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    rows = [json.loads(line) for line in out.decode().splitlines()]
    assert len(rows) == 3 and all("new" in r for r in rows)


def test_a_missing_topic_is_one_line(kafka: EmbeddedKafka, fresh_name: Name) -> None:
    done = _consume(f"kafka://{kafka.bootstrap}/{fresh_name('none')}")
    assert done.returncode == 1
    assert done.stderr.decode().count("\n") == 1 and b"does not exist" in done.stderr


def test_end_follower_reads_every_record_once_across_idle_gaps(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """``EndFollower`` leaves a partition at its end and rejoins it when it grows. Oracle:
    the records produced, counted by the test: every one read once, each partition in
    offset order, across idle gaps, committed transactions and an aborted one; while
    nothing arrives the consumer holds no partition (it does not fetch)."""
    from confluent_kafka import Consumer, TopicPartition

    from cep.transports.kafka_read import EndFollower

    topic = fresh_name("follow")
    ensure_topic(kafka.bootstrap, topic, 2)
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": topic,
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    follower = EndFollower(consumer)
    read: list[tuple[int, int, bytes]] = []

    def read_for(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            read.extend((m.partition(), m.offset(), m.value())
                        for m in follower.consume(100, 0.01) if m.error() is None)

    sent: list[tuple[int, bytes]] = []
    try:
        for wave in range(4):
            records = [(i % 2, f"{wave}-{i}".encode()) for i in range(7)]
            if wave == 2:
                _send(kafka.bootstrap, topic, [(0, b"aborted")], f"{topic}-a", abort=True)
                _send(kafka.bootstrap, topic, records, f"{topic}-t")
            else:
                _send(kafka.bootstrap, topic, records)
            sent += records
            read_for(1.0)
            assert consumer.assignment() == []  # both partitions wait at their ends
    finally:
        consumer.close()
    assert sorted((p, v) for p, _o, v in read) == sorted(sent)
    for p in range(2):
        offsets = [o for q, o, _v in read if q == p]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
