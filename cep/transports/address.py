"""Kafka URIs, client settings and one-line errors shared by the Kafka reader and writer.

URI forms (``--input`` / ``--output``)::

    kafka://HOST:PORT[,HOST:PORT…]/TOPIC[,TOPIC…][?OPTION=VALUE&…]
    kafka://USER:PASSWORD@HOST:PORT/TOPIC?sasl.mechanism=SCRAM-SHA-512
    kafka://embedded/TOPIC           (a broker that cep starts itself, see embedded_kafka.py)

Query options are librdkafka settings passed through unchanged (``security.protocol``,
``ssl.ca.location``, ``sasl.mechanism``, ``socket.timeout.ms`` …), so a deployment's
settings live in one string, as for the MongoDB URI of the state store. User info
becomes ``sasl.username`` / ``sasl.password``; then the defaults are
``security.protocol=SASL_SSL`` (a password never travels in clear unless the URI says
so) and ``sasl.mechanism=PLAIN``. Messages never show the password: they name the
address as :func:`cep.transports.mongo_client.mask_uri` masks it.

librdkafka logs connection failures to stderr on its own threads; we route its log to
the ``cep.kafka`` logger instead, and turn failures into :class:`KafkaTransportError`
with one line naming the operation and the masked address.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from confluent_kafka import KafkaError, KafkaException

from cep.transports.mongo_client import mask_uri

EMBEDDED_HOST = "embedded"
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_HOST_PORT = re.compile(r"[A-Za-z0-9._-]+:\d{1,5}|\[[0-9A-Fa-f:]+\]:\d{1,5}")
_LOG = logging.getLogger("cep.kafka")
_LOG.addHandler(logging.NullHandler())  # silent unless the application configures logging
# Codes librdkafka uses when it cannot talk to any broker.
_UNREACHABLE = frozenset(
    {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
     KafkaError._RESOLVE}
)


class KafkaTransportError(RuntimeError):
    """A Kafka operation failed; the message is one line and holds no password."""


class KafkaUnavailableError(KafkaTransportError):
    """No broker could be reached within the time-out."""


@dataclass(frozen=True)
class KafkaAddress:
    """Where a cluster is and how to talk to it; picklable (Spark ships it to executors).

    ``bootstrap`` is librdkafka's ``bootstrap.servers``; ``options`` are further client
    settings (from the URI's query and user info); ``shown`` is what messages print.
    """

    bootstrap: str
    options: Mapping[str, str] = field(default_factory=dict)
    shown: str = ""

    def __str__(self) -> str:
        return self.shown or self.bootstrap

    def client_config(self, **extra: Any) -> dict[str, Any]:
        """Settings for a Producer/Consumer/AdminClient: ours, then the URI's, which win
        (a deployment may, say, raise ``socket.timeout.ms``)."""
        return {"bootstrap.servers": self.bootstrap, "logger": _LOG, **extra, **self.options}


@dataclass(frozen=True)
class KafkaUri:
    """A parsed ``kafka://`` URI: the cluster and the topics it names."""

    address: KafkaAddress
    topics: tuple[str, ...]

    @property
    def embedded(self) -> bool:
        return self.address.bootstrap == EMBEDDED_HOST


def as_address(bootstrap: KafkaAddress | str) -> KafkaAddress:
    """A plain ``host:port[,…]`` string means no further settings."""
    return bootstrap if isinstance(bootstrap, KafkaAddress) else KafkaAddress(bootstrap)


def parse_kafka_uri(uri: str) -> KafkaUri:
    """Parse the forms in the module notes; ValueError (password masked) when malformed."""
    shown = mask_uri(uri)
    if not uri.startswith("kafka://"):
        raise ValueError(f"not a kafka:// URI: {shown}")
    rest, _, query = uri[len("kafka://") :].partition("?")
    hosts, slash, path = rest.partition("/")
    if not slash or not path:
        raise ValueError(f"kafka URI needs a topic: kafka://HOST:PORT/TOPIC, got {shown}")
    userinfo, at, hosts = hosts.rpartition("@")
    options: dict[str, str] = {}
    for option in filter(None, query.split("&")):
        name, eq, value = option.partition("=")
        if not eq or not name:
            raise ValueError(f"kafka URI option must be NAME=VALUE: {name!r} in {shown}")
        options[unquote(name)] = unquote(value)
    if at:
        user, _, password = userinfo.partition(":")
        options.setdefault("security.protocol", "SASL_SSL")
        options.setdefault("sasl.mechanism", "PLAIN")
        options["sasl.username"] = unquote(user)
        options["sasl.password"] = unquote(password)
    if hosts != EMBEDDED_HOST and not all(_HOST_PORT.fullmatch(h) for h in hosts.split(",")):
        raise ValueError(f"kafka URI hosts must be HOST:PORT[,HOST:PORT]: {shown}")
    topics = tuple(path.split(","))
    bad = [t for t in topics if not _TOPIC.fullmatch(t)]
    if bad:
        raise ValueError(f"invalid Kafka topic name {bad[0]!r} in {shown}")
    masked_hosts = shown[len("kafka://") :].partition("/")[0]
    return KafkaUri(KafkaAddress(hosts, options, f"kafka://{masked_hosts}"), topics)


def _reason(error: KafkaError | BaseException) -> str:
    text = error.str() if isinstance(error, KafkaError) else str(error)
    return " ".join(text.split())[:300]


def transport_error(
    address: KafkaAddress, operation: str, error: KafkaError | BaseException
) -> KafkaTransportError:
    """The one-line exception for ``error`` (a KafkaError or an exception) during
    ``operation``: :class:`KafkaUnavailableError` when no broker answered."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else error
    if isinstance(kafka_error, KafkaError) and kafka_error.code() in _UNREACHABLE:
        return KafkaUnavailableError(
            f"Kafka unreachable at {address} during {operation}: {_reason(kafka_error)}"
        )
    return KafkaTransportError(f"Kafka {operation} failed at {address}: {_reason(kafka_error)}")


@contextmanager
def kafka_errors(address: KafkaAddress, operation: str) -> Iterator[None]:
    """Turn a client exception inside into a one-line :class:`KafkaTransportError`."""
    try:
        yield
    except KafkaException as exc:
        raise transport_error(address, operation, exc) from None


class ErrorLatch:
    """An ``error_cb`` that keeps the client's last error: librdkafka reports a broker
    that went away there, not as an exception, so a call that merely times out can say
    why."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        self.last = error
