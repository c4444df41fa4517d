"""Loopback ports that refuse connections (``support.ports``), for tests of what a client
does when nothing answers."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refusing_port(port: int = 0) -> Iterator[int]:
    """A loopback port that refuses connections while the block runs: bound by us and
    never listening, so no other process on a shared machine can take it meanwhile (a port
    only looked up as free can be taken before the test dials it).

    ``port`` 0 picks a free one; a given port (one that a stopped server just left) is
    bound with ``SO_REUSEADDR``, which the server's connections in TIME_WAIT require."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        yield sock.getsockname()[1]
