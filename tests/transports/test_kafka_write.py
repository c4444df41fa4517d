"""Exactly-once batches into Kafka: replays, kill -9 before and after the commit, zombies."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from support.children import first_line, wait_exit
from support.kafka_writer_child import records

from cep.servers.kafka import EmbeddedKafka
from cep.transports.address import KafkaTransportError
from cep.transports.kafka_read import partition_ends
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter, write_batch

CHILD = Path(__file__).parent.parent / "support" / "kafka_writer_child.py"
Name = Callable[[str], str]
# Bounds on waits for a state the test expects (a child's start and first records, a
# killed child's exit, records reaching the log): far beyond what a loaded machine
# takes, so only a real hang fails them; each wait ends as soon as its condition holds.
CHILD_START_S = 300.0
ARRIVAL_S = 120.0


def _values(seen: list[tuple[int, int, bytes | None, bytes]]) -> Counter[bytes]:
    return Counter(value for _p, _o, _k, value in seen)


def _run_child(kafka: EmbeddedKafka, topic: str, run_id: str, batch: int, n: int,
               mode: str, writer: int = 0) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, str(CHILD), kafka.bootstrap, topic, run_id, str(batch), str(n), mode,
         str(writer)],
        stdout=subprocess.PIPE, text=True, cwd=str(CHILD.parents[2]),
    )
    line = first_line(child, CHILD_START_S).strip()  # the child's state marker
    assert line == ("sent" if mode == "mid" else "committed"), line
    return child


def _kill(child: subprocess.Popen[str]) -> None:
    child.kill()  # SIGKILL
    wait_exit(child, ARRIVAL_S)
    assert child.returncode == -9


def test_a_replayed_batch_is_written_once(kafka: EmbeddedKafka, fresh_name: Name,
                                          consume: Callable[..., list]) -> None:
    topic = fresh_name("out")
    ensure_topic(kafka.bootstrap, topic, 3)
    assert write_batch(kafka.bootstrap, topic, 0, "run1", records(0, 100)) == 100
    assert write_batch(kafka.bootstrap, topic, 1, "run1", records(1, 50)) == 50
    assert write_batch(kafka.bootstrap, topic, 1, "run1", records(1, 50)) == 0  # replay
    assert write_batch(kafka.bootstrap, topic, 0, "run1", records(0, 100)) == 0  # older
    # another run writing the same topic has its own marker
    assert write_batch(kafka.bootstrap, topic, 1, "run2", records(1, 50)) == 50
    seen = _values(consume(kafka.bootstrap, topic))
    assert seen == Counter(v for _k, v in records(0, 100)) + Counter(
        v for _k, v in records(1, 50) * 2)
    with TransactionalBatchWriter(kafka.bootstrap, topic, "run1") as writer:
        assert writer.last_committed_batch() == 1
    with TransactionalBatchWriter(kafka.bootstrap, topic, "run3") as writer:
        assert writer.last_committed_batch() is None


def test_keys_keep_their_partition(kafka: EmbeddedKafka, fresh_name: Name,
                                   consume: Callable[..., list]) -> None:
    topic = fresh_name("keys")
    ensure_topic(kafka.bootstrap, topic, 3)
    write_batch(kafka.bootstrap, topic, 0, "r", records(0, 200))
    partitions: dict[bytes | None, set[int]] = {}
    order: dict[bytes | None, list[bytes]] = {}
    for partition, _offset, key, value in consume(kafka.bootstrap, topic):
        partitions.setdefault(key, set()).add(partition)
        order.setdefault(key, []).append(value)
    assert len(partitions) == 5 and all(len(p) == 1 for p in partitions.values())
    for key, values in order.items():
        assert values == [v for k, v in records(0, 200) if k == key]


def test_kill_9_mid_transaction_then_rerun_is_exactly_once(
        kafka: EmbeddedKafka, fresh_name: Name, consume: Callable[..., list]) -> None:
    topic = fresh_name("mid")
    ensure_topic(kafka.bootstrap, topic, 2)
    assert write_batch(kafka.bootstrap, topic, 0, "crash", records(0, 10)) == 10
    child = _run_child(kafka, topic, "crash", 1, 1000, "mid")
    # the half batch really reached the log before the kill
    deadline = time.monotonic() + ARRIVAL_S
    while len(consume(kafka.bootstrap, topic, "read_uncommitted")) < 10 + 500:
        assert time.monotonic() < deadline, "the child's records never reached the broker"
    _kill(child)
    assert write_batch(kafka.bootstrap, topic, 1, "crash", records(1, 1000)) == 1000
    expected = Counter(v for _k, v in records(0, 10) + records(1, 1000))
    assert _values(consume(kafka.bootstrap, topic)) == expected
    # the aborted half is still in the log, seen only by read_uncommitted consumers
    uncommitted = _values(consume(kafka.bootstrap, topic, "read_uncommitted"))
    assert uncommitted - expected == Counter(v for _k, v in records(1, 1000)[:500])
    assert write_batch(kafka.bootstrap, topic, 1, "crash", records(1, 1000)) == 0


def test_kill_9_after_the_commit_then_rerun_skips(
        kafka: EmbeddedKafka, fresh_name: Name, consume: Callable[..., list]) -> None:
    topic = fresh_name("after")
    ensure_topic(kafka.bootstrap, topic, 2)
    _kill(_run_child(kafka, topic, "crash2", 4, 300, "after"))
    assert write_batch(kafka.bootstrap, topic, 4, "crash2", records(4, 300)) == 0
    assert write_batch(kafka.bootstrap, topic, 5, "crash2", records(5, 30)) == 30
    expected = Counter(v for _k, v in records(4, 300) + records(5, 30))
    assert _values(consume(kafka.bootstrap, topic)) == expected


def test_a_fenced_zombie_cannot_commit(kafka: EmbeddedKafka, fresh_name: Name,
                                       consume: Callable[..., list]) -> None:
    topic = fresh_name("zombie")
    ensure_topic(kafka.bootstrap, topic, 1)
    zombie = TransactionalBatchWriter(kafka.bootstrap, topic, "z")
    assert zombie.begin(0)
    zombie.send(records(0, 20))
    # the zombie's records are in the log before its successor starts: it learns that it
    # is fenced only from the broker's answers to what it sends next
    deadline = time.monotonic() + ARRIVAL_S
    while len(consume(kafka.bootstrap, topic, "read_uncommitted")) < 20:
        assert time.monotonic() < deadline, "the zombie's records never reached the broker"
    with TransactionalBatchWriter(kafka.bootstrap, topic, "z") as successor:
        assert successor.write(0, records(0, 20)) == 20
        zombie.send(records(0, 5))  # only queued: send() does not wait for the broker
        with pytest.raises(KafkaTransportError,
                           match=r"^Kafka committing batch 0 of 'zombie-\w+' failed at "
                                 r"127\.0\.0\.1:\d+: .*fenced by a newer instance") as info:
            zombie.commit()
        assert "\n" not in str(info.value)
    zombie.close()
    assert _values(consume(kafka.bootstrap, topic)) == Counter(v for _k, v in records(0, 20))
    (_low, high), = partition_ends(kafka.bootstrap, topic).values()
    assert high > 20  # the zombie's aborted records and markers are in the log


def test_engines_write_their_parts_of_a_batch_independently(
        kafka: EmbeddedKafka, fresh_name: Name, consume: Callable[..., list]) -> None:
    """Each engine's task writes its part; one is killed mid-transaction while the
    others commit; the replay of the batch rewrites only the killed part."""
    topic = fresh_name("parts")
    ensure_topic(kafka.bootstrap, topic, 3)

    def part(engine: int) -> list[tuple[bytes, bytes]]:
        return [(k, b"e%d-" % engine + v) for k, v in records(7, 100)]

    child = _run_child(kafka, topic, "engines", 7, 100, "mid", writer=1)
    assert write_batch(kafka.bootstrap, topic, 7, "engines", part(0), writer_id=0) == 100
    assert write_batch(kafka.bootstrap, topic, 7, "engines", part(2), writer_id=2) == 100
    _kill(child)
    replay = [write_batch(kafka.bootstrap, topic, 7, "engines", part(e), writer_id=e)
              for e in range(3)]
    assert replay == [0, 100, 0]
    expected = Counter(v for e in range(3) for _k, v in part(e))
    assert _values(consume(kafka.bootstrap, topic)) == expected
