"""``--ui [HOST:]PORT`` and ``cep ui --host/--port``: where the live view listens.

Localhost unless a host is given: the page shows the run's keys, field values and file
names, which are the user's data, so it is offered to other machines only on request.
"""

from __future__ import annotations

from cep.ui.errors import UiError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8650


def parse_ui_address(text: str) -> tuple[str, int]:
    """``"PORT"``, ``"HOST:PORT"`` or ``"[IPV6]:PORT"`` as ``(host, port)``; the host is
    127.0.0.1 when none is given. Port 0 lets the system pick a free one."""
    value = text.strip()
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_HOST, value
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise UiError(f"--ui {text!r}: write an IPv6 host in brackets, [HOST]:PORT")
    if not host:
        host = DEFAULT_HOST
    return host, parse_port(port_text, text)


def parse_port(port_text: str, given: str | None = None) -> int:
    """A TCP port number 0–65535, or a UiError naming what was given."""
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise UiError(f"--ui {given if given is not None else port_text!r}: the port must be "
                      "a number from 0 to 65535, as [HOST:]PORT")
    return port
