"""A broker stopped mid-run: one-line errors naming the masked address, then the same
calls resume once it is back on the same data dir and port."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from support.kafka_writer_child import records

from cep.servers.kafka import EmbeddedKafka
from cep.transports.address import KafkaUnavailableError, parse_kafka_uri
from cep.transports.kafka_read import partition_ends, read_partition_range
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter


def test_read_and_write_fail_cleanly_and_resume(tmp_path: Path,
                                                consume: Callable[..., list]) -> None:
    data = tmp_path / "kafka"
    broker = EmbeddedKafka(data_dir=data).start()
    port = broker.port
    uri = parse_kafka_uri(f"kafka://cep:pw0rd@127.0.0.1:{port}/in,out"
                          "?security.protocol=PLAINTEXT&socket.timeout.ms=2000")
    address = uri.address
    try:
        ensure_topic(address, "out", 2)
        writer = TransactionalBatchWriter(address, "out", "outage", timeout_s=3)
        assert writer.write(0, records(0, 40)) == 40
        ends = partition_ends(address, "out")
        broker.stop()  # SIGTERM: the broker saves its snapshot

        with pytest.raises(KafkaUnavailableError) as read_error:
            read_partition_range(address, "out", 0, 0, ends[0][1], timeout_s=3)
        with pytest.raises(KafkaUnavailableError) as write_error:
            writer.write(1, records(1, 40))
        for error in (read_error, write_error):
            message = str(error.value)
            assert f"kafka://cep:***@127.0.0.1:{port}" in message
            assert "pw0rd" not in message and "\n" not in message
        # write(1) asks the broker for the batch marker first (begin), and fails there
        assert re.match(rf"Kafka unreachable at kafka://cep:\*\*\*@127\.0\.0\.1:{port} during "
                        r"reading the batch marker of 'out': ", str(write_error.value))

        broker = EmbeddedKafka(data_dir=data, port=port or 0).start()
        writer.timeout_s = 120.0  # short only to see the outage fast; now generous
        assert partition_ends(address, "out") == ends
        assert len(read_partition_range(address, "out", 0, 0, ends[0][1])) == ends[0][1] - 1
        assert writer.write(1, records(1, 40)) == 40  # the same writer resumes
        assert writer.write(1, records(1, 40)) == 0
        writer.close()
        seen = Counter(v for *_rest, v in consume(broker.bootstrap, "out"))
        assert seen == Counter(v for _k, v in records(0, 40) + records(1, 40))
    finally:
        broker.stop()
