"""The live view of a run: a web page, its JSON and a Prometheus ``/metrics``.

Served from what the run writes (its run directory or ``--metrics`` file), by the
standard library's HTTP server on a thread, with the page's files shipped in the package
(``static/``: no CDN, charts drawn as SVG by the page's own script). What the command
line calls:

- ``cep run … --ui [HOST:]PORT``: ``parse_ui_address(text)`` when parsing; before the run
  ``server = serve_run(checkpoint_dir_or_None, host, port)`` (binds at once, so a port in
  use fails before Spark starts), print ``server.url``, pass
  ``on_workdir=server.attach`` to ``run_on_spark`` (a run without ``--checkpoint`` has a
  temporary run directory), and ``server.close()`` after the run.
- ``cep ui RUN [--host HOST] [--port PORT]``: ``ui_command(Path(RUN), host, port)``.

Both raise ``UiError`` (one line) for a port in use or no run at the path.
"""

from cep.ui.address import DEFAULT_HOST, DEFAULT_PORT, parse_ui_address
from cep.ui.command import ui_command
from cep.ui.errors import UiError
from cep.ui.server import LiveServer, serve_run

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "LiveServer", "UiError", "parse_ui_address",
           "serve_run", "ui_command"]
