"""Kafka clients kept across calls (``cep.transports.kafka_clients``), on real brokers.

The oracle throughout: the offsets the test itself committed (the read_committed end
of a partition is the offset after its last transaction's marker, which the test
counts), and what a client made per call (``kafka_clients.kept(False)``, the code
before the pool) answers; a kept client must answer exactly that, whatever it answered
before, and must be rebuilt, not reused, once it failed.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from cep.servers.kafka import EmbeddedKafka
from cep.transports import kafka_clients
from cep.transports.address import KafkaUnavailableError
from cep.transports.kafka_read import partition_ends, read_partition_range, topic_partitions
from cep.transports.kafka_send import ensure_topic

Name = Callable[[str], str]


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    """Every test starts and ends with no kept client (the pool is process-wide)."""
    kafka_clients.close_all()
    yield
    kafka_clients.close_all()


def _commit(bootstrap: str, topic: str, partition: int, n: int, outcome: str = "commit",
            tag: str = "") -> int:
    """One transaction of ``n`` records on ``partition``, committed or aborted; the
    offsets it took (its records and its marker)."""
    producer = Producer({"bootstrap.servers": bootstrap,
                         "transactional.id": f"t-{topic}-{partition}-{tag}"})
    producer.init_transactions(10)
    producer.begin_transaction()
    for j in range(n):
        producer.produce(topic, f"{outcome}-{j}".encode(), partition=partition)
    producer.flush(10)
    if outcome == "commit":
        producer.commit_transaction(10)
    else:
        producer.abort_transaction(10)
    return n + 1


def test_a_kept_admin_client_answers_what_a_fresh_one_answers(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """The planner's question, asked again as three partitions grow by committed and
    aborted transactions: the kept admin client gives the ends the test counted, the
    same as a client per call, and one client serves every call."""
    topic = fresh_name("kept")
    ensure_topic(kafka.bootstrap, topic, 3)
    counted = {0: 0, 1: 0, 2: 0}
    made = kafka_clients.made()
    for step in range(6):
        partition = step % 3
        outcome = "abort" if step == 4 else "commit"
        counted[partition] += _commit(kafka.bootstrap, topic, partition, 50 + step, outcome,
                                      str(step))
        kept_ends = partition_ends(kafka.bootstrap, topic)
        with kafka_clients.kept(False):
            fresh_ends = partition_ends(kafka.bootstrap, topic)
        assert kept_ends == fresh_ends == {p: (0, n) for p, n in counted.items()}
        assert topic_partitions(kafka.bootstrap, topic) == [0, 1, 2]
    assert kafka_clients.made() - made == 6  # one per fresh call; ensure_topic made the kept one
    end = counted[1]  # the reads still give the committed records (step 1 and 4)
    assert len(read_partition_range(kafka.bootstrap, topic, 1, 0, end)) == 51


def test_threads_asking_at_once_get_clients_of_their_own(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """Four threads ask for the ends at once, five times each: every answer is the
    counted one (no two calls share a client), and a call after them takes a kept
    client (at most IDLE_PER_KEY wait)."""
    topic = fresh_name("threads")
    ensure_topic(kafka.bootstrap, topic, 2)
    counted = {0: _commit(kafka.bootstrap, topic, 0, 300), 1: _commit(kafka.bootstrap, topic,
                                                                      1, 200)}
    answers: list[dict[int, tuple[int, int]]] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            for _ in range(5):
                answers.append(partition_ends(kafka.bootstrap, topic))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(answers) == 20 and all(a == {p: (0, n) for p, n in counted.items()}
                                      for a in answers)
    made = kafka_clients.made()
    partition_ends(kafka.bootstrap, topic)
    assert kafka_clients.made() == made


def test_a_client_that_failed_is_rebuilt_after_a_broker_restart(
        tmp_path: Path, fresh_name: Name) -> None:
    """A kept admin client outlives its broker: a call while it is down fails (one
    line, the broker named) and drops the client; once a broker is back on the same
    port and data, the next call makes a new client and gives the same ends."""
    topic = fresh_name("restart")
    data = tmp_path / "kafka"
    with EmbeddedKafka(data_dir=data) as first:
        port, bootstrap = first.port, first.bootstrap
        ensure_topic(bootstrap, topic, 1)
        end = _commit(bootstrap, topic, 0, 120)
        assert partition_ends(bootstrap, topic) == {0: (0, end)}
        first.stop()
        made = kafka_clients.made()
        with pytest.raises(KafkaUnavailableError):
            partition_ends(bootstrap, topic, timeout_s=3)
        assert kafka_clients.made() == made  # the kept one was lent, and failed
    with EmbeddedKafka(data_dir=data, port=port) as second:
        assert second.bootstrap == bootstrap
        made = kafka_clients.made()
        assert partition_ends(bootstrap, topic) == {0: (0, end)}
        assert kafka_clients.made() - made == 1  # rebuilt
        partition_ends(bootstrap, topic)
        assert kafka_clients.made() - made == 1  # and kept


def _child_ask(bootstrap: str, topic: str, out: multiprocessing.Queue) -> None:
    made = kafka_clients.made()
    ends = partition_ends(bootstrap, topic)
    out.put((ends, kafka_clients.made() - made))


def test_a_forked_child_makes_its_own_clients(kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """A process forked after the parent kept a client (as Spark's worker daemon forks
    workers) never uses the parent's: it makes one and gets the counted ends; the
    parent's kept client still works afterwards."""
    topic = fresh_name("fork")
    ensure_topic(kafka.bootstrap, topic, 1)
    end = _commit(kafka.bootstrap, topic, 0, 80)
    assert partition_ends(kafka.bootstrap, topic) == {0: (0, end)}
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_child_ask, args=(kafka.bootstrap, topic, out))
    child.start()
    ends, made = out.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert ends == {0: (0, end)} and made == 1
    made = kafka_clients.made()
    assert partition_ends(kafka.bootstrap, topic) == {0: (0, end)}
    assert kafka_clients.made() == made
