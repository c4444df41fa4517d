"""The life of a server that cep runs in a child process on 127.0.0.1.

The embedded MongoDB (``cep.servers.mongo``) and the embedded Kafka broker
(``cep.servers.kafka``) differ in how they are spawned, how they announce their port
and how readiness is proven; they share everything else, here: a private temp dir for
logs (and data without ``data_dir``), stop on leaving a ``with`` block, on error during
start and at interpreter exit, a stop that only the starting process performs (a forked
copy inherits the object and its ``atexit`` hook but not the child), SIGTERM then
SIGKILL after ``stop_timeout``, the port of a running server, and a failure to start
that carries the tail of the child's stderr (inline when it is one line).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Self

STDERR_TAIL_CHARS = 2000


class ChildServer:
    """Start, stop and failure reporting of a server in a child process.

    Subclasses set the class attributes below and implement :meth:`_spawn` (start
    ``self._proc``; set ``self._port``) and :meth:`_await_ready` (prove the server
    answers). ``data_dir`` None keeps the data in the temp dir; ``port`` 0 lets the OS
    choose; the time-outs default to the class's.
    """

    PREFIX: str  # of the temp dir
    LOG: str  # the child's stderr file in the temp dir
    NAME: str  # the server in failure messages ("embedded Kafka")
    ROLE: str  # the child in failure messages ("broker")
    ERROR: type[RuntimeError]  # raised when the child does not start
    STARTUP_TIMEOUT: float  # seconds
    STOP_TIMEOUT: float  # seconds from SIGTERM to SIGKILL

    def __init__(self, *, data_dir: Path | None = None, port: int = 0,
                 startup_timeout: float | None = None, stop_timeout: float | None = None
                 ) -> None:
        self.data_dir = data_dir
        self.requested_port = port
        self.startup_timeout = (self.STARTUP_TIMEOUT if startup_timeout is None
                                else startup_timeout)
        self.stop_timeout = self.STOP_TIMEOUT if stop_timeout is None else stop_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._port: int | None = None
        self._owner_pid = 0
        self._lock = threading.Lock()

    @property
    def port(self) -> int | None:
        return self._port

    def running_port(self) -> int:
        """The port of the running server (RuntimeError when it is not running)."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return self._port

    @property
    def pid(self) -> int | None:
        """The server process id while it runs (tests use it to prove it is gone)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def workdir(self) -> Path | None:
        """Temp dir holding the server's stderr log (and the data without ``data_dir``)."""
        return self._workdir

    def start(self) -> Self:
        with self._lock:
            if self._proc is not None:
                raise RuntimeError(f"{type(self).__name__} is already started")
            self._workdir = Path(tempfile.mkdtemp(prefix=self.PREFIX))
            self._owner_pid = os.getpid()
            # Registered before the child exists: a Ctrl-C anywhere below still
            # leads to stop() through the except clause or interpreter exit.
            atexit.register(self.stop)
        try:
            self._spawn()
            self._await_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self) -> None:
        raise NotImplementedError

    def _await_ready(self) -> None:
        raise NotImplementedError

    def stderr_tail(self) -> str:
        """The end of the child's stderr log ('' if there is none)."""
        if self._workdir is None:
            return ""
        try:
            text = (self._workdir / self.LOG).read_text(errors="replace")
        except OSError:
            return ""
        return text[-STDERR_TAIL_CHARS:].strip()

    def _stderr_noise(self, tail: str) -> str:
        """``tail`` without lines that say nothing about a failure (none by default)."""
        return tail

    def _failure(self, what: str) -> RuntimeError:
        """The error for a child that did not start, with its stderr's tail."""
        tail = self._stderr_noise(self.stderr_tail()).strip()
        if not tail:
            detail = " (no stderr output)"
        elif "\n" not in tail:
            detail = f": {tail}"
        else:
            detail = f"\n--- {self.ROLE} stderr (tail) ---\n{tail}"
        return self.ERROR(f"{self.NAME} failed to start: {what}{detail}")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``stop_timeout``); idempotent,
        and a no-op in a forked copy of the process that started it."""
        self._end(signal.SIGTERM)

    def _end(self, sig: signal.Signals) -> None:
        if os.getpid() != self._owner_pid:
            return
        with self._lock:
            proc, workdir = self._proc, self._workdir
            self._proc = self._workdir = self._port = None
            atexit.unregister(self.stop)
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
