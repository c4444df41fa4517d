"""``kafka://embedded/TOPIC``: the broker cep starts itself, found again by later commands.

The embedded broker keeps its data in one directory, ``$CEP_KAFKA_DIR`` (default
``~/.cache/cep/kafka``), so ``cep produce kafka://embedded/tweets …`` and a later
``cep run … --input kafka://embedded/tweets`` meet the same topics. Whoever needs it
calls :func:`embedded_broker`: it attaches to a broker already serving the directory
(another cep command's), else starts one and stops it (SIGTERM: it saves its data) when
the command ends. The broker's address is written to ``DIR/cep-bootstrap`` (a stale one
names a closed port: unreachable, as the broker is), and :func:`resolve` turns the
``embedded`` host into it wherever a client is made (the driver, or executors of a
local run, which inherit the environment). The port is chosen by the OS at each start,
so segments and checkpoints keep the word ``embedded``, never a port.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from cep.servers.kafka import embedded_bootstrap
from cep.transports.address import (
    EMBEDDED_HOST,
    KafkaAddress,
    KafkaUnavailableError,
)

DIR_ENV = "CEP_KAFKA_DIR"
_BOOTSTRAP_FILE = "cep-bootstrap"


def embedded_dir() -> Path:
    """The embedded broker's data directory."""
    configured = os.environ.get(DIR_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "cep" / "kafka"


@contextlib.contextmanager
def embedded_broker() -> Iterator[str]:
    """The embedded broker's ``host:port`` for the duration of the block: the running
    one, or one started here (and stopped at the end); published for :func:`resolve`."""
    data = embedded_dir()
    with embedded_bootstrap(data) as bootstrap:
        marker = data / _BOOTSTRAP_FILE
        marker.write_text(bootstrap)
        yield bootstrap


def resolve(address: KafkaAddress) -> KafkaAddress:
    """``address`` itself, or for ``embedded`` the running embedded broker's."""
    if address.bootstrap != EMBEDDED_HOST:
        return address
    marker = embedded_dir() / _BOOTSTRAP_FILE
    try:
        bootstrap = marker.read_text().strip()
    except FileNotFoundError:
        raise KafkaUnavailableError(
            f"Kafka unreachable at kafka://{EMBEDDED_HOST}: no embedded broker runs on "
            f"{embedded_dir()} (cep produce and cep run start it)") from None
    return KafkaAddress(bootstrap, address.options, address.shown)
