"""``cep run … --ui [HOST:]PORT``: the live view beside a run in the driver's process.

The port is bound before the run starts, so a port in use fails in a second, not after
Spark's start; the run then tells the server its run directory (``cep.run.run``'s
``on_workdir``: the ``--checkpoint`` directory, or the temporary one a run without it
uses), and the page, which polls, shows the run from its first batch on. The address
is the first line the run prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cep.ui.address import parse_ui_address
from cep.ui.server import serve_run

OnWorkdir = Callable[[Path], None]


@contextmanager
def live_view(address: str | None) -> Iterator[OnWorkdir | None]:
    """With ``address`` (``--ui``'s value): a live view for the duration of the block,
    yielding the ``on_workdir`` callback to hand to ``cep.run.run``; without it,
    nothing (None). Raises UiError, one line, for a bad address or a port in use."""
    if address is None:
        yield None
        return
    host, port = parse_ui_address(address)
    with serve_run(None, host, port) as server:
        print(f"cep: live view at {server.url}", file=sys.stderr, flush=True)
        yield server.attach
