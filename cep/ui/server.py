"""The live view's HTTP server: the page, its JSON, and ``/metrics``, read-only.

The standard library's ``ThreadingHTTPServer`` is enough: a handful of clients poll a
few small documents, and a framework would be one more dependency of every install.
It runs on a daemon thread of whatever process starts it (``cep run --ui``'s driver,
or ``cep ui``), and everything it serves is read from the run's own files
(``RunSource``), so it never touches the running query and can watch a run another
process is running, or one that has ended.

Safe by construction: only GET and HEAD are answered (anything else is 405: no action
can be taken from the page); the page's script writes every value from the input or the
rules with ``textContent``, and the Content-Security-Policy lets no inline script run,
so a key such as ``<img src=x onerror=…>`` is shown, never executed; the server listens
on 127.0.0.1 unless told otherwise.

Endpoints::

    /                      the page (static/index.html, app.js, style.css)
    /api/state?since=B     totals, latest events and dead letters, input, settings, and the
                           figures of the batches after B (all kept ones without since)
    /api/history?before=B&count=N   figures of up to N batches before B, from the metrics
    /metrics               Prometheus text format (prometheus.py)
"""

from __future__ import annotations

import errno
import json
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cep.closing import Closing
from cep.ui.errors import UiError
from cep.ui.prometheus import CONTENT_TYPE as PROMETHEUS_TYPE
from cep.ui.prometheus import exposition
from cep.ui.source import RunSource
from cep.ui.state import LiveState

STATIC = {"index.html": "text/html; charset=utf-8",
          "app.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
HISTORY_DEFAULT = 600


def _static_files() -> dict[str, bytes]:
    folder = resources.files("cep.ui") / "static"
    return {name: (folder / name).read_bytes() for name in STATIC}


class _Server(ThreadingHTTPServer):
    """What the handlers read: the watched run (None until attached), the page's files."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], source: RunSource | None,
                 static: dict[str, bytes]) -> None:
        super().__init__(address, _Handler)
        self.source = source
        self.static = static
        self.cpu_s = 0.0  # CPU seconds spent answering (what the view costs its run)
        self._cpu_lock = threading.Lock()

    def count_cpu(self, seconds: float) -> None:
        with self._cpu_lock:
            self.cpu_s += seconds


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "cep-ui"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _refuse(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def log_message(self, format: str, *args) -> None:
        """Quiet: the run's own progress lines share the terminal."""

    def _answer(self, body: bool) -> None:
        started = time.thread_time()
        try:
            self._route(body)
        finally:
            self.server.count_cpu(time.thread_time() - started)

    def _route(self, body: bool) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        route = url.path
        try:
            if route in ("/", "/index.html"):
                self._send(self.server.static["index.html"], STATIC["index.html"], body)
            elif route.startswith("/static/") and route[len("/static/"):] in STATIC:
                name = route[len("/static/"):]
                self._send(self.server.static[name], STATIC[name], body)
            elif route == "/favicon.ico":  # browsers ask; there is none
                self._send(b"", "image/x-icon", body, HTTPStatus.NO_CONTENT)
            elif route == "/metrics":
                self._send(exposition(self._snapshot(None, last_only=True)).encode(),
                           PROMETHEUS_TYPE, body)
            elif route == "/api/state":
                self._json(self._snapshot(_int(query.get("since"))), body)
            elif route == "/api/history":
                before = _int(query.get("before"))
                count = _int(query.get("count")) or HISTORY_DEFAULT
                if before is None:
                    raise ValueError("history needs before=BATCH")
                source = self.server.source
                points = source.history(before, count) if source is not None else []
                self._json({"points": points}, body)
            else:
                self._send(b"not found\n", "text/plain; charset=utf-8", body,
                           HTTPStatus.NOT_FOUND)
        except ValueError as err:
            self._send(f"{err}\n".encode(), "text/plain; charset=utf-8", body,
                       HTTPStatus.BAD_REQUEST)

    def _snapshot(self, since: int | None, last_only: bool = False) -> dict:
        source = self.server.source
        if source is None:  # cep run --ui binds first, and the run directory comes next
            return {"run": {"path": "", "kind": "starting", "manifest": {}},
                    **LiveState().snapshot()}
        return source.snapshot(since, last_only)

    def _json(self, value: dict, body: bool) -> None:
        self._send(json.dumps(value, separators=(",", ":")).encode(),
                   "application/json", body)

    def _send(self, data: bytes, content_type: str, body: bool,
              status: HTTPStatus = HTTPStatus.OK) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)


def _int(text: str | None) -> int | None:
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"not a batch number: {text!r}") from None


class LiveServer(Closing):
    """The live view of one run, served on a daemon thread until ``close``.

    ``url`` is where to point a browser (or Prometheus, at ``url + "metrics"``)."""

    def __init__(self, run: Path | None, host: str, port: int) -> None:
        source = RunSource(run) if run is not None else None  # no run there: UiError
        server_class = _Server6 if ":" in host else _Server
        try:
            self._server = server_class((host, port), source, _static_files())
        except OSError as err:
            raise UiError(_bind_failure(err, host, port)) from None
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.5},
                                        name="cep-ui", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else str(host)
        return f"http://{shown}:{port}/"

    @property
    def cpu_s(self) -> float:
        """CPU seconds the server's threads have spent answering requests."""
        return self._server.cpu_s

    def attach(self, run: Path) -> None:
        """Serve ``run`` (a run directory or metrics file) from now on."""
        self._server.source = RunSource(run)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_run(run: Path | None, host: str = "127.0.0.1", port: int = 0) -> LiveServer:
    """Start the live view of ``run`` (a run directory or ``--metrics`` file; None: one
    attached later with ``LiveServer.attach``). Raises UiError, one line, when the
    address cannot be had or there is no run at ``run``."""
    return LiveServer(run, host, port)


def _bind_failure(err: OSError, host: str, port: int) -> str:
    if err.errno == errno.EADDRINUSE:
        return (f"the live view's port {port} on {host} is in use: pick another "
                "(--ui [HOST:]PORT, cep ui --port PORT; 0 picks a free one)")
    if err.errno == errno.EACCES:
        return f"the live view may not listen on port {port} (ports below 1024 need root)"
    reason = err.strerror or str(err)
    return f"the live view cannot listen on {host}:{port}: {reason}"
