"""Kafka clients kept across calls (``cep.transports.kafka_clients``), on real brokers.

The oracle throughout: what the reads return with a client made per call
(``kafka_clients.kept(False)``, the code before the pool) and the records the test
itself committed; a kept client must give exactly those, whatever it read before, and
must be rebuilt, not reused, once it failed.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from cep.servers.kafka import EmbeddedKafka
from cep.transports import kafka_clients
from cep.transports.address import KafkaTransportError, KafkaUnavailableError
from cep.transports.kafka_read import partition_ends, read_partition_range
from cep.transports.kafka_send import ensure_topic

Name = Callable[[str], str]


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    """Every test starts and ends with no kept client (the pool is process-wide)."""
    kafka_clients.close_all()
    yield
    kafka_clients.close_all()


def _fill(bootstrap: str, topic: str, plan: list[tuple[str, int]]) -> list[bytes]:
    """Transactions on partition 0 of a new topic, ("commit"|"abort", n) each; the
    committed values in offset order (aborted records and markers leave offset gaps)."""
    ensure_topic(bootstrap, topic, 1)
    committed: list[bytes] = []
    for i, (outcome, n) in enumerate(plan):
        # a producer per transaction: the embedded broker hides a producer's commits
        # after its abort from reads that start past it (docs/limits.md)
        producer = Producer({"bootstrap.servers": bootstrap,
                             "transactional.id": f"t-{topic}-{i}"})
        producer.init_transactions(10)
        values = [f"{outcome}-{i}-{j}".encode() for j in range(n)]
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value, partition=0)
        producer.flush(10)
        if outcome == "commit":
            producer.commit_transaction(10)
            committed += values
        else:
            producer.abort_transaction(10)
    return committed


RANGES = [(3000, 3200), (0, 50), (1200, 1300), (0, 4000), (2500, 2501), (40, 2600),
          (3900, 4000), (0, 50)]  # later, earlier, overlapping, replays: a task's history


def _reads(bootstrap: str, topic: str) -> list[tuple[list[int], list[bytes | None]]]:
    end = partition_ends(bootstrap, topic)[0][1]
    out = []
    for lo, hi in RANGES:
        records = read_partition_range(bootstrap, topic, 0, min(lo, end), min(hi, end))
        out.append((records.offsets.tolist(), records.values))
    return out


def test_a_kept_reader_reads_what_a_fresh_one_reads_in_any_order(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """Ranges out of order, overlapping and read again (a replay), around aborted
    transactions: a kept consumer gives exactly what a consumer per call gives, and
    the whole partition read gives exactly the committed records; one consumer and one
    admin client serve every call."""
    topic = fresh_name("kept")
    committed = _fill(kafka.bootstrap, topic, [("commit", 900), ("abort", 300),
                                               ("commit", 1500), ("abort", 50),
                                               ("commit", 1200)])
    end = partition_ends(kafka.bootstrap, topic)[0][1]
    with kafka_clients.kept(False):
        whole = read_partition_range(kafka.bootstrap, topic, 0, 0, end)
        expected = _reads(kafka.bootstrap, topic)
    assert whole.values == committed and len(committed) == 3600
    at = dict(zip(whole.offsets.tolist(), whole.values, strict=True))
    for (lo, hi), (offsets, values) in zip(RANGES, expected, strict=True):
        assert offsets == [o for o in sorted(at) if lo <= o < hi]  # what was committed
        assert values == [at[o] for o in offsets]
    assert sum(len(values) for _offsets, values in expected) > 5000
    made = kafka_clients.made()
    got = _reads(kafka.bootstrap, topic)
    assert got == expected
    assert kafka_clients.made() - made == 1  # one consumer; the admin client was kept
    # a far range right after a near one, many times: a stale prefetched record at or
    # past the new range's end would end it early, one below its start would join it
    far_near = list(enumerate(RANGES)) * 6
    random.Random(5).shuffle(far_near)
    for i, (lo, hi) in far_near:
        records = read_partition_range(kafka.bootstrap, topic, 0, lo, min(hi, end))
        assert (records.offsets.tolist(), records.values) == expected[i]
    assert kafka_clients.made() - made == 1


def test_threads_reading_at_once_get_clients_of_their_own(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """Four threads read the same ranges at once, twice over: each gets the committed
    records (no two reads share a consumer), and a read after them takes a kept one."""
    topic = fresh_name("threads")
    committed = _fill(kafka.bootstrap, topic, [("commit", 2000), ("abort", 100),
                                               ("commit", 1000)])
    end = partition_ends(kafka.bootstrap, topic)[0][1]
    made = kafka_clients.made()
    results: list[list[bytes | None]] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(2):
                results.append(read_partition_range(kafka.bootstrap, topic, 0, 0, end).values)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 8 and all(r == committed for r in results)
    assert kafka_clients.made() - made <= 8  # never more than a client per read
    made = kafka_clients.made()  # at most IDLE_PER_KEY of them wait; the next read
    assert read_partition_range(kafka.bootstrap, topic, 0, 0, end).values == committed
    assert kafka_clients.made() == made  # takes one of those


def test_a_client_that_failed_is_rebuilt_after_a_broker_restart(
        tmp_path: Path, fresh_name: Name) -> None:
    """A kept consumer and admin client outlive their broker: a read while it is down
    fails (one line, the broker named) and drops the client; once a broker is back on
    the same port and data, the next reads use new clients and give the committed
    records again."""
    topic = fresh_name("restart")
    data = tmp_path / "kafka"
    with EmbeddedKafka(data_dir=data) as first:
        port, bootstrap = first.port, first.bootstrap
        committed = _fill(bootstrap, topic, [("commit", 500), ("abort", 20),
                                             ("commit", 300)])
        end = partition_ends(bootstrap, topic)[0][1]
        assert read_partition_range(bootstrap, topic, 0, 0, end).values == committed
        first.stop()
        made = kafka_clients.made()
        with pytest.raises(KafkaTransportError):
            read_partition_range(bootstrap, topic, 0, 0, end, timeout_s=3)
        with pytest.raises(KafkaUnavailableError):
            partition_ends(bootstrap, topic, timeout_s=3)
        assert kafka_clients.made() - made == 0  # the kept ones were lent, and failed
    time.sleep(0.5)
    with EmbeddedKafka(data_dir=data, port=port) as second:
        assert second.bootstrap == bootstrap
        made = kafka_clients.made()
        assert partition_ends(bootstrap, topic)[0][1] == end
        assert read_partition_range(bootstrap, topic, 0, 0, end).values == committed
        assert kafka_clients.made() - made == 2  # both rebuilt


def _child_read(bootstrap: str, topic: str, end: int, out: multiprocessing.Queue) -> None:
    made = kafka_clients.made()
    values = read_partition_range(bootstrap, topic, 0, 0, end).values
    out.put((values, kafka_clients.made() - made))


def test_a_forked_child_makes_its_own_clients(kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """A process forked after the parent kept a consumer (as Spark's worker daemon
    forks workers) never uses the parent's: it makes one and reads the committed
    records; the parent's kept consumer still works afterwards."""
    topic = fresh_name("fork")
    committed = _fill(kafka.bootstrap, topic, [("commit", 400), ("abort", 10),
                                               ("commit", 100)])
    end = partition_ends(kafka.bootstrap, topic)[0][1]
    assert read_partition_range(kafka.bootstrap, topic, 0, 0, end).values == committed
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_child_read, args=(kafka.bootstrap, topic, end, out))
    child.start()
    values, made = out.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert values == committed and made == 1
    made = kafka_clients.made()
    assert read_partition_range(kafka.bootstrap, topic, 0, 0, end).values == committed
    assert kafka_clients.made() == made
