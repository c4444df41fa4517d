"""The live view of a run: a web page, its JSON and a Prometheus ``/metrics``.

Served from what the run writes (its run directory or ``--metrics`` file), by the
standard library's HTTP server on a thread, with the page's files shipped in the package
(``static/``: no CDN, charts drawn as SVG by the page's own script). What the command
line calls:

- ``cep run … --ui [HOST:]PORT``: ``with live_view(args.ui) as on_workdir:
  run(…, on_workdir=on_workdir)`` (:func:`cep.run.run`; ``live_view`` binds the port at
  once, prints the page's address, and hands the run directory, a temporary one without
  ``--checkpoint``, to the server; ``serve_run`` and ``LiveServer.attach`` are its parts).
- ``cep ui RUN [--host HOST] [--port PORT]``: ``ui_command(Path(RUN), host, port)``.

Both raise ``UiError`` (one line) for a bad address, a port in use or no run at the
path.
"""

from cep.ui.address import DEFAULT_HOST, DEFAULT_PORT, parse_ui_address
from cep.ui.command import ui_command
from cep.ui.errors import UiError
from cep.ui.live import live_view
from cep.ui.server import LiveServer, serve_run

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "LiveServer", "UiError", "live_view",
           "parse_ui_address", "serve_run", "ui_command"]
