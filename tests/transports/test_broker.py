"""The embedded broker: loopback address, persistence in a data dir, stop and kill."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.children import alive, first_line, wait_exit, wait_gone

from cep.io.kafka_produce import produce
from cep.servers.kafka import (
    EmbeddedKafka,
    EmbeddedKafkaError,
    embedded_bootstrap,
    running_bootstrap,
)
from cep.transports.kafka_read import partition_ends, read_partition_range, topic_partitions
from cep.transports.kafka_send import ensure_topic

# Bounds on waits that end as soon as their condition holds, far beyond a loaded
# machine: a failing start ends when the broker exits (its port or data dir is taken),
# not at this bound, which only stops it saying "no address announced" under load.
FAILING_START_S = 120.0
GONE_S = 120.0
CONNECT_S = 30.0


def test_listens_on_loopback_and_stops(kafka: EmbeddedKafka) -> None:
    assert kafka.port is not None and kafka.bootstrap == f"127.0.0.1:{kafka.port}"
    with socket.create_connection(("127.0.0.1", kafka.port), timeout=CONNECT_S):
        pass


def test_stop_ends_the_process_and_frees_the_port() -> None:
    broker = EmbeddedKafka().start()
    pid, port = broker.pid, broker.port
    assert pid is not None and alive(pid)
    broker.stop()
    broker.stop()  # idempotent
    assert not alive(pid)
    with pytest.raises(ConnectionRefusedError), socket.create_connection(
            ("127.0.0.1", port), timeout=CONNECT_S):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        _ = broker.bootstrap


def test_data_dir_survives_a_stop_and_a_fixed_port_is_kept(tmp_path: Path) -> None:
    with EmbeddedKafka(data_dir=tmp_path / "kafka") as first:
        port = first.port
        ensure_topic(first.bootstrap, "kept", 2)
        lines = tmp_path / "in.jsonl"
        lines.write_text('{"a": 1}\n{"a": 2}\n{"a": 3}\n')
        assert produce(first.bootstrap, "kept", lines) == 3
    assert port is not None
    with EmbeddedKafka(data_dir=tmp_path / "kafka", port=port) as second:
        assert second.bootstrap == f"127.0.0.1:{port}"
        assert topic_partitions(second.bootstrap, "kept") == [0, 1]
        ends = partition_ends(second.bootstrap, "kept")
        assert ends == {0: (0, 2), 1: (0, 1)}
        assert read_partition_range(second.bootstrap, "kept", 0, 0, 2).values == [
            b'{"a": 1}', b'{"a": 3}']


def test_kill_is_a_crash() -> None:
    broker = EmbeddedKafka().start()
    pid = broker.pid
    assert pid is not None
    broker.kill()
    assert not alive(pid)


def test_a_taken_port_is_a_clear_error(kafka: EmbeddedKafka) -> None:
    with pytest.raises(EmbeddedKafkaError, match="embedded Kafka failed to start"):
        EmbeddedKafka(port=kafka.port or 0, startup_timeout=FAILING_START_S).start()


def test_one_broker_per_data_dir_and_others_attach(tmp_path: Path) -> None:
    data = tmp_path / "kafka"
    assert running_bootstrap(data) is None
    with EmbeddedKafka(data_dir=data) as owner:
        assert running_bootstrap(data) == owner.bootstrap
        with pytest.raises(EmbeddedKafkaError, match="already running") as info:
            EmbeddedKafka(data_dir=data, startup_timeout=FAILING_START_S).start()
        assert "\n" not in str(info.value) and "GLIBC" not in str(info.value)
    assert running_bootstrap(data) is None


def test_embedded_bootstrap_starts_or_attaches(tmp_path: Path) -> None:
    data = tmp_path / "kafka"
    with embedded_bootstrap(data) as started:
        ensure_topic(started, "demo", 1)
        with embedded_bootstrap(data) as attached:  # a second command meanwhile
            assert attached == started
            assert topic_partitions(attached, "demo") == [0]
        assert running_bootstrap(data) == started  # the attached one did not stop it
    assert running_bootstrap(data) is None
    with embedded_bootstrap(data) as again:  # a later command sees the topic
        assert topic_partitions(again, "demo") == [0]


def test_the_broker_dies_with_its_owner_process() -> None:
    """kill -9 of the process that started it: the kernel sends the broker SIGTERM."""
    owner = subprocess.Popen(
        [sys.executable, "-c",
         "import time\n"
         "from cep.servers.kafka import EmbeddedKafka\n"
         "k = EmbeddedKafka().start()\n"
         "print(k.pid, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True,
    )
    broker_pid = int(first_line(owner, GONE_S))
    assert alive(broker_pid)
    owner.kill()
    wait_exit(owner, GONE_S)
    wait_gone(broker_pid, GONE_S)  # SIGTERM from the kernel: the broker saves, then exits
