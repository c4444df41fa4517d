"""``cep ui RUN [--host HOST] [--port PORT]``: the live view of a run from what it wrote.

RUN is a run directory (``cep run --checkpoint DIR``) or a ``--metrics`` file, of a run
that is going on in another terminal or has ended: the view reads only those files, so
it needs no restart of the run and cannot disturb it. It serves until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path

from cep.ui.address import DEFAULT_HOST, DEFAULT_PORT
from cep.ui.server import serve_run


def ui_command(run: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
               stop: threading.Event | None = None) -> int:
    """Serve ``run``'s live view until Ctrl-C (or ``stop``, for tests); returns the exit
    status. A port in use or no run at ``run`` raises ``UiError`` (one line, for the
    command line to print)."""
    stop = stop or threading.Event()
    # the Ctrl-C the message invites may come as soon as it is out: it ends the view
    # (status 0) wherever it lands, not only in the wait
    with serve_run(run, host, port) as server, contextlib.suppress(KeyboardInterrupt):
        print(f"cep: live view of {run} at {server.url} (Ctrl-C to stop)",
              file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
    return 0
