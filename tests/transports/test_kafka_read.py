"""Reading exact offset ranges, read_committed, from a real broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from cep.io.kafka_produce import produce
from cep.servers.kafka import EmbeddedKafka
from cep.transports.address import (
    KafkaTransportError,
    KafkaUnavailableError,
    parse_kafka_uri,
)
from cep.transports.kafka_read import partition_ends, read_partition_range, topic_partitions
from cep.transports.kafka_send import ensure_topic

Name = Callable[[str], str]


def _transactions(bootstrap: str, topic: str, plan: list[tuple[str, int]]) -> list[bytes]:
    """Run transactions on partition 0: ("commit"|"abort", n records) each; return the
    committed values in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{topic}"})
    producer.init_transactions(10)
    committed = []
    for i, (outcome, n) in enumerate(plan):
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


def test_full_and_partial_ranges_are_exact(kafka: EmbeddedKafka, fresh_name: Name,
                                           tmp_path: Path) -> None:
    topic = fresh_name("read")
    lines = [json.dumps({"user": f"u{i % 7}", "i": i}).encode() for i in range(5000)]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert produce(kafka.bootstrap, topic, tmp_path / "in.jsonl", 3, "user") == 5000
    assert topic_partitions(kafka.bootstrap, topic) == [0, 1, 2]
    ends = partition_ends(kafka.bootstrap, topic)
    assert sum(high for _low, high in ends.values()) == 5000
    got = []
    users: list[set[str]] = []  # of each partition
    for partition, (low, high) in ends.items():
        records = read_partition_range(kafka.bootstrap, topic, partition, low, high)
        assert records.offsets.dtype == np.int64
        assert records.offsets.tolist() == list(range(low, high))
        users.append({json.loads(v)["user"] for v in records.values})
        got += records.values
        inside = read_partition_range(kafka.bootstrap, topic, partition, 10, 17)
        assert inside.offsets.tolist() == list(range(10, 17))
        assert inside.values == records.values[10:17]
    assert sorted(got) == sorted(lines)
    assert sum(map(len, users)) == 7 and set().union(*users) == {f"u{i}" for i in range(7)}
    # each key lands in one partition, in file order
    by_user: dict[str, set[int]] = {}
    for partition, (low, high) in ends.items():
        for v in read_partition_range(kafka.bootstrap, topic, partition, low, high).values:
            by_user.setdefault(json.loads(v)["user"], set()).add(partition)
    assert all(len(parts) == 1 for parts in by_user.values())


def test_empty_range_needs_no_broker() -> None:
    records = read_partition_range("127.0.0.1:1", "t", 0, 5, 5)
    assert len(records) == 0 and records.offsets.dtype == np.int64


def test_aborted_records_and_markers_are_skipped(kafka: EmbeddedKafka,
                                               fresh_name: Name) -> None:
    topic = fresh_name("txn")
    ensure_topic(kafka.bootstrap, topic, 1)
    committed = _transactions(kafka.bootstrap, topic,
                              [("commit", 5), ("abort", 4), ("commit", 3), ("abort", 2)])
    (low, high), = partition_ends(kafka.bootstrap, topic).values()
    # 5 + marker + 4 + marker + 3 + marker + 2 + marker
    assert (low, high) == (0, 18)
    records = read_partition_range(kafka.bootstrap, topic, 0, low, high)
    assert records.values == committed
    assert records.offsets.tolist() == [0, 1, 2, 3, 4, 11, 12, 13]
    # a range that ends inside aborted data, and one that holds nothing committed
    assert read_partition_range(kafka.bootstrap, topic, 0, 3, 8).values == committed[3:5]
    assert len(read_partition_range(kafka.bootstrap, topic, 0, 5, 11)) == 0
    assert len(read_partition_range(kafka.bootstrap, topic, 0, 14, 18)) == 0
    assert read_partition_range(kafka.bootstrap, topic, 0, 9, 15).values == committed[5:]


def test_an_open_transaction_bounds_the_stable_end(kafka: EmbeddedKafka,
                                                   fresh_name: Name) -> None:
    topic = fresh_name("open")
    ensure_topic(kafka.bootstrap, topic, 1)
    _transactions(kafka.bootstrap, topic, [("commit", 3)])
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": topic})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, b"pending", partition=0)
    producer.flush(10)
    (_low, high), = partition_ends(kafka.bootstrap, topic).values()
    assert high == 4  # 3 records + marker; the pending record is past the stable end
    assert len(read_partition_range(kafka.bootstrap, topic, 0, 0, high)) == 3
    # read while the transaction was still open (not after it ended, by time-out or
    # abort, which would have moved the stable end past its record and marker)
    assert partition_ends(kafka.bootstrap, topic) == {0: (0, 4)}
    producer.abort_transaction(10)


def test_a_range_past_the_log_is_an_error(kafka: EmbeddedKafka, fresh_name: Name) -> None:
    topic = fresh_name("short")
    ensure_topic(kafka.bootstrap, topic, 1)
    _transactions(kafka.bootstrap, topic, [("commit", 2)])
    with pytest.raises(KafkaTransportError, match=r"offsets 0\.\.10") as info:
        read_partition_range(kafka.bootstrap, topic, 0, 0, 10, timeout_s=10)
    assert "\n" not in str(info.value)
    with pytest.raises(KafkaTransportError, match="Offset out of range"):
        read_partition_range(kafka.bootstrap, topic, 0, 50, 60, timeout_s=10)


def test_a_range_below_the_log_start_is_an_error(kafka: EmbeddedKafka,
                                                 fresh_name: Name) -> None:
    """Records deleted (retention) under a planned range: an error, never a silent jump."""
    topic = fresh_name("deleted")
    ensure_topic(kafka.bootstrap, topic, 1)
    _transactions(kafka.bootstrap, topic, [("commit", 6)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 4)]).values():
        future.result(10)
    assert partition_ends(kafka.bootstrap, topic) == {0: (4, 7)}
    with pytest.raises(KafkaTransportError, match="Offset out of range"):
        read_partition_range(kafka.bootstrap, topic, 0, 0, 7, timeout_s=10)
    assert len(read_partition_range(kafka.bootstrap, topic, 0, 4, 7)) == 2


def test_a_missing_topic_is_named(kafka: EmbeddedKafka) -> None:
    with pytest.raises(KafkaTransportError, match=r"'nope' does not exist at 127\.0\.0\.1"):
        topic_partitions(kafka.bootstrap, "nope")


def test_a_broker_that_is_down_gives_one_masked_line(closed_port: int) -> None:
    port = closed_port
    uri = parse_kafka_uri(f"kafka://alice:s3cret@127.0.0.1:{port}/t?security.protocol=PLAINTEXT")
    for call in (
        lambda: topic_partitions(uri.address, "t", timeout_s=2),
        lambda: read_partition_range(uri.address, "t", 0, 0, 10, timeout_s=2),
    ):
        with pytest.raises(KafkaUnavailableError) as info:
            call()
        message = str(info.value)
        assert f"kafka://alice:***@127.0.0.1:{port}" in message
        assert "s3cret" not in message and "\n" not in message


def test_ranges_fetched_together_equal_ranges_fetched_alone(kafka: EmbeddedKafka,
                                                            fresh_name: Name) -> None:
    """``KafkaFetch``: a task's pieces of one partition fetched once (from the first
    piece's start) give exactly what each piece fetched alone gives, gaps of aborted
    records and markers included; a range outside what it was given is fetched alone."""
    from cep.io.kafka_input import KafkaFetch

    topic = fresh_name("fetch")
    ensure_topic(kafka.bootstrap, topic, 1)
    # (a range that starts after an aborted transaction's marker, read alone, comes back
    # empty from the embedded broker: it lists the aborted transaction anyway, and the
    # client then drops that producer's later records; so no piece starts there)
    _transactions(kafka.bootstrap, topic, [("commit", 7), ("abort", 4), ("commit", 6)])
    (_low, high), = partition_ends(kafka.bootstrap, topic).values()
    path = f"kafka://{kafka.bootstrap}/{topic}#0"
    cuts = [(0, 5), (5, 9), (9, 12), (12, high)]
    fetched = KafkaFetch([(path, lo, hi) for lo, hi in cuts] + [(path, 3, 3)])
    assert fetched.spans == {path: (0, high)}
    for lo, hi in [*cuts, (2, 14), (8, high)]:
        alone = read_partition_range(kafka.bootstrap, topic, 0, lo, hi)
        together = fetched.between(path, lo, hi)
        assert together.offsets.tolist() == alone.offsets.tolist()
        assert together.values == alone.values
    assert len(fetched.records) == 1  # one fetch served them all
    fresh = KafkaFetch([(path, 5, 9)])
    assert fresh.between(path, 0, 5).values == read_partition_range(
        kafka.bootstrap, topic, 0, 0, 5).values and not fresh.records


def test_progress_counts_records_that_arrived_after_the_listing(
        kafka: EmbeddedKafka, fresh_name: Name, tmp_path: Path) -> None:
    """A Kafka source's ``arrived_records`` (``cep.spark.inputs.progress``) is what its
    partitions hold past what the input log planned, asked of the broker when the batch
    commits: the ``--engines auto`` policy's lag for a job that reads all it finds.
    Oracle: the counts produced before and after the listing."""
    from cep.io.inputlog import InputLog
    from cep.spark.inputs.progress import InputProgress
    topic = fresh_name("arrived")
    first = tmp_path / "first.jsonl"
    first.write_text("".join(json.dumps({"user": f"u{i % 50}", "i": i}) + "\n"
                             for i in range(300)))
    assert produce(kafka.bootstrap, topic, first, 2, "user") == 300
    sources = {"Tweet": f"kafka://{kafka.bootstrap}/{topic}"}
    run = tmp_path / "run"
    InputLog(run / "input", sources, follow=True).discover(first=True)
    metrics: dict = {}
    progress = InputProgress(run, sources)
    progress(0, [], metrics)
    rows = metrics["input"]["sources"]
    assert len(rows) == 2, "one row per partition"
    assert sum(r["behind_records"] for r in rows) == 300
    assert [r["arrived_records"] for r in rows] == [0, 0]
    later = tmp_path / "later.jsonl"
    later.write_text("".join(json.dumps({"user": f"u{i % 50}", "i": i}) + "\n"
                             for i in range(120)))
    assert produce(kafka.bootstrap, topic, later, 2, "user") == 120
    progress(0, [], metrics)
    rows = metrics["input"]["sources"]
    assert sum(r["behind_records"] for r in rows) == 300, "the log has not listed them"
    assert sum(r["arrived_records"] for r in rows) == 120
    kafka_down = InputProgress(run, {"Tweet": "kafka://127.0.0.1:1/none"})
    kafka_down(0, [], metrics)  # the log's partitions still name the live broker
    assert metrics["input"]["sources"]


def test_a_field_no_rule_reads_is_checked_and_left_out_of_a_kafka_frame(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    """``read_kafka_range(..., unread=…)`` as the file reader's ``unread``: the field is
    left out of the frame, and a bad value of it still makes its record a dead letter.
    Oracle: the same range read with every field kept (the rows, their offsets and the
    other fields' values), and the one record the test made bad."""
    from cep.io.deadletter import DeadLetter
    from cep.io.kafka_input import read_kafka_range
    from grammar.compile import compile_text

    stream = compile_text("CREATE SCHEMA E (id long, note string);\n"
                          "SELECT id FROM E;").streams["E"]
    topic = fresh_name("unread")
    ensure_topic(kafka.bootstrap, topic, 1)
    lines = [json.dumps({"id": i, "note": f"n{i}" if i != 3 else 7}).encode()
             for i in range(6)]
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for line in lines:
        producer.produce(topic, line, partition=0)
    producer.flush()
    path = f"kafka://{kafka.bootstrap}/{topic}#0"
    frames, dead = {}, {}
    for name, unread in (("all", frozenset()), ("unread", frozenset({"note"}))):
        with DeadLetter() as letters:
            frames[name] = read_kafka_range(path, 0, 6, stream, letters, unread=unread)
        dead[name] = letters.count
    assert dead == {"all": 1, "unread": 1}  # id 3's note is not a string
    assert "note" in frames["all"] and "note" not in frames["unread"]
    assert frames["unread"]["id"].tolist() == frames["all"]["id"].tolist() == [0, 1, 2, 4, 5]
    assert frames["unread"]["offset"].tolist() == frames["all"]["offset"].tolist()
