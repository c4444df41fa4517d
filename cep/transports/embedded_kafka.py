"""``kafka://embedded/TOPIC``: where clients find the broker that cep starts itself.

The embedded broker (:mod:`cep.servers.kafka`) keeps its data in one directory,
``$CEP_KAFKA_DIR`` (default ``~/.cache/cep/kafka``), so ``cep produce
kafka://embedded/tweets …`` and a later ``cep run … --input kafka://embedded/tweets``
meet the same topics. The command that starts or attaches to it writes the broker's
address to ``DIR/cep-bootstrap`` (:func:`bootstrap_file`; a stale one names a closed port:
unreachable, as the broker is), and :func:`resolve` turns the ``embedded`` host into it
wherever a client is made (the driver, or executors of a local run, which inherit the
environment). The port is chosen by the OS at each start, so segments and checkpoints
keep the word ``embedded``, never a port.
"""

from __future__ import annotations

import os
from pathlib import Path

from cep.transports.address import EMBEDDED_HOST, KafkaAddress, KafkaUnavailableError

DIR_ENV = "CEP_KAFKA_DIR"
_BOOTSTRAP_FILE = "cep-bootstrap"


def embedded_dir() -> Path:
    """The embedded broker's data directory."""
    configured = os.environ.get(DIR_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "cep" / "kafka"


def bootstrap_file() -> Path:
    """Where the running embedded broker's ``host:port`` is published."""
    return embedded_dir() / _BOOTSTRAP_FILE


def resolve(address: KafkaAddress) -> KafkaAddress:
    """``address`` itself, or for ``embedded`` the running embedded broker's."""
    if address.bootstrap != EMBEDDED_HOST:
        return address
    try:
        bootstrap = bootstrap_file().read_text().strip()
    except FileNotFoundError:
        raise KafkaUnavailableError(
            f"Kafka unreachable at kafka://{EMBEDDED_HOST}: no embedded broker runs on "
            f"{embedded_dir()} (cep produce and cep run start it)") from None
    return KafkaAddress(bootstrap, address.options, address.shown)
