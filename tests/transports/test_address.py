"""kafka:// URIs: hosts, topics, options, credentials, and what messages show."""

from __future__ import annotations

import pickle

import pytest
from confluent_kafka import KafkaError

from cep.transports.address import (
    KafkaAddress,
    KafkaUnavailableError,
    parse_kafka_uri,
    transport_error,
)


def test_hosts_topics_and_options() -> None:
    uri = parse_kafka_uri("kafka://b1:9092,b2:9093/in,more?socket.timeout.ms=9000")
    assert uri.topics == ("in", "more") and not uri.embedded
    assert uri.address.bootstrap == "b1:9092,b2:9093"
    config = uri.address.client_config(**{"socket.timeout.ms": 100, "linger.ms": 5})
    assert config["socket.timeout.ms"] == "9000"  # the URI wins over our defaults
    assert config["linger.ms"] == 5
    assert str(uri.address) == "kafka://b1:9092,b2:9093"
    assert pickle.loads(pickle.dumps(uri)) == uri


def test_credentials_become_sasl_and_are_masked() -> None:
    uri = parse_kafka_uri("kafka://alice:p%40ss@broker:9094/t?sasl.mechanism=SCRAM-SHA-512")
    config = uri.address.client_config()
    assert config["sasl.username"] == "alice" and config["sasl.password"] == "p@ss"
    assert config["security.protocol"] == "SASL_SSL"
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert str(uri.address) == "kafka://alice:***@broker:9094"
    secret_option = parse_kafka_uri("kafka://h:1/t?ssl.key.password=hunter2")
    assert "hunter2" not in str(secret_option.address)


def test_embedded() -> None:
    uri = parse_kafka_uri("kafka://embedded/tweets")
    assert uri.embedded and uri.topics == ("tweets",)


@pytest.mark.parametrize(("bad", "why"), [
    ("kafka://h:1", r"needs a topic: kafka://HOST:PORT/TOPIC, got kafka://h:1$"),
    ("kafka://h:1/", r"needs a topic: kafka://HOST:PORT/TOPIC, got kafka://h:1/$"),
    ("kafka://h/t", r"hosts must be HOST:PORT\[,HOST:PORT\]: kafka://h/t$"),
    ("kafka://h:1/bad topic", r"invalid Kafka topic name 'bad topic' in kafka://h:1/bad topic$"),
    ("kafka://h:1/t?novalue", r"option must be NAME=VALUE: 'novalue' in kafka://h:1/t\?novalue$"),
    ("http://h:1/t", r"^not a kafka:// URI: http://h:1/t$"),
])
def test_malformed_uris(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_kafka_uri(bad)


def test_malformed_uri_message_hides_the_password() -> None:
    with pytest.raises(ValueError, match=r"hosts must be HOST:PORT\[,HOST:PORT\]: "
                                         r"kafka://u:\*\*\*@h/t$") as info:
        parse_kafka_uri("kafka://u:topsecret@h/t")
    assert "topsecret" not in str(info.value)


def test_unreachable_codes_map_to_unavailable() -> None:
    address = KafkaAddress("h:1", shown="kafka://h:1")
    error = transport_error(address, "x", KafkaError(KafkaError._TRANSPORT))
    assert isinstance(error, KafkaUnavailableError)
    assert str(error).startswith("Kafka unreachable at kafka://h:1 during x")
    other = transport_error(address, "y", KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    assert not isinstance(other, KafkaUnavailableError)
