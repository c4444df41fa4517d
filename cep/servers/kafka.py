"""An embedded Kafka-wire broker on 127.0.0.1 for tests and ``kafka://embedded/…`` demos.

No Kafka server is packaged in Debian; the PyPI package ``noida-db`` (0.2.3) ships one
native binary (``noida_db/noida-db``) that speaks several wire protocols, Kafka among them.
We start it as ``noida-db start --data-dir D --host 127.0.0.1 --only kafka --kafka-port P``;
with ``P = 0`` it binds an OS-chosen port and prints ``kafka  127.0.0.1:<port>`` on stdout,
which we read back, so there is no free-port race. It also opens a loopback control port
(``D/noida.control.json``), which we do not use. On Debian 12 it prints a harmless
``GLIBC_2.39 not found`` warning (a weak symbol) on stderr.

What it supports (checked with confluent-kafka 2.16 / librdkafka 2.16; see
docs/guide.md#the-embedded-kafka-broker for the table): topic creation with N partitions,
produce and fetch by partition and offset, watermarks (read_committed gives the last
stable offset), consumer-group commits, and transactions with fencing, aborts that a
read_committed consumer never sees, ``send_offsets_to_transaction`` and recovery of a
writer killed mid-transaction by the next ``init_transactions``.

Durability is the caveat that shapes this module: the broker keeps everything in memory
and rewrites one JSON snapshot (``D/kafka.json``) a few seconds after each change.
SIGTERM saves it before exit; SIGKILL loses whatever was acknowledged since the last
snapshot (measured: a committed transaction and its topic, gone). So :meth:`stop` sends
SIGTERM and waits, and :meth:`kill` exists only to simulate a crash. The snapshot is a
full rewrite, ~5 s for 1M 150-byte records (746 MB of JSON): fine for tests and demos,
not for long runs.

The child gets ``PR_SET_PDEATHSIG = SIGTERM``: if this process dies outright, the kernel
tells the broker to save and exit (Linux only; the signal fires when the *thread* that
started it exits, so start it from a thread that lives as long as the run).
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from cep.servers.child import ChildServer
from cep.transports.embedded_kafka import bootstrap_file, embedded_dir

_PR_SET_PDEATHSIG = 1
_ANNOUNCE = re.compile(rb"^\s*kafka\s+(\S+):(\d+)\s*$", re.MULTILINE)
_STATUS_LINE = re.compile(r"\bkafka\s+(127\.0\.0\.1:\d+)\b")
_GLIBC_WARNING = re.compile(r"^.*weak version `GLIBC_[\d.]+' not found.*\n?", re.MULTILINE)


class EmbeddedKafkaError(RuntimeError):
    """The embedded broker did not start (the message carries its stderr tail)."""


def broker_binary() -> Path:
    """The ``noida-db`` executable inside the installed wheel (made executable if needed)."""
    try:
        path = Path(str(files("noida_db").joinpath("noida-db")))
    except ModuleNotFoundError:
        raise EmbeddedKafkaError(
            "embedded Kafka needs the 'noida-db' package (pip install noida-db)"
        ) from None
    if not path.is_file():
        raise EmbeddedKafkaError(f"embedded Kafka: no broker binary at {path}")
    if not os.access(path, os.X_OK):
        try:
            path.chmod(path.stat().st_mode | 0o111)
        except OSError as exc:
            raise EmbeddedKafkaError(
                f"embedded Kafka: cannot make {path} executable: {exc}"
            ) from None
    return path


def running_bootstrap(data_dir: Path, timeout_s: float = 10.0) -> str | None:
    """The address of a broker already serving ``data_dir`` (another ``cep`` command's),
    or None. Only one broker may own a data dir, so ``kafka://embedded/…`` attaches to
    it (e.g. ``cep produce`` while a ``cep run --follow`` reads) instead of failing."""
    if not (data_dir / "noida.control.json").is_file():
        return None
    status = subprocess.run(
        [str(broker_binary()), "status", "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=timeout_s, check=False,
    )
    found = _STATUS_LINE.search(status.stdout) if status.returncode == 0 else None
    return found.group(1) if found else None


@contextmanager
def embedded_bootstrap(data_dir: Path) -> Iterator[str]:
    """The address of the broker serving ``data_dir`` for the ``with`` block: the one
    already running there (left running), else one started now (stopped at the end).

    What ``kafka://embedded/TOPIC`` resolves to: ``cep produce`` and a later ``cep run``
    name the same data dir, so the run reads what the produce left, and a produce
    during a ``--follow`` run feeds the running broker.
    """
    running = running_bootstrap(data_dir)
    if running is not None:
        yield running
        return
    with EmbeddedKafka(data_dir=data_dir) as broker:
        yield broker.bootstrap


@contextmanager
def embedded_broker() -> Iterator[str]:
    """The broker of ``kafka://embedded`` for the duration of the block: the running one
    on :func:`~cep.transports.embedded_kafka.embedded_dir`, or one started here (and
    stopped at the end, with SIGTERM: it saves its data); its address published for
    :func:`~cep.transports.embedded_kafka.resolve`."""
    with embedded_bootstrap(embedded_dir()) as bootstrap:
        bootstrap_file().write_text(bootstrap)
        yield bootstrap


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM it when the parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EmbeddedKafka(ChildServer):
    """A noida-db Kafka broker in a child process on 127.0.0.1.

    ``with EmbeddedKafka() as kafka: produce(kafka.bootstrap, …)``. Stopped by
    :meth:`stop` (SIGTERM: the broker saves its snapshot), by leaving the ``with``
    block, at interpreter exit and, when this process is killed, by the kernel (see the
    module notes).

    Data lives in a temp dir removed at stop unless ``data_dir`` is given: then it is
    kept there for the next broker started on it (a checkpointed run's input and
    output topics survive a restart). ``port`` 0 lets the OS choose; a fixed port
    lets a restarted broker keep its address.
    """

    PREFIX = "cep-kafka-"
    LOG = "broker.log"
    NAME = "embedded Kafka"
    ROLE = "broker"
    ERROR = EmbeddedKafkaError
    STARTUP_TIMEOUT = 15.0
    STOP_TIMEOUT = 30.0  # the broker saves its snapshot before it exits

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``, the ``bootstrap.servers`` value for clients."""
        return f"127.0.0.1:{self.running_port()}"

    def _spawn(self) -> None:
        assert self._workdir is not None
        data = self.data_dir if self.data_dir is not None else self._workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        # stdout goes to a file, not a pipe: the broker may write to it later, and a
        # pipe we stopped reading would block it or kill it with SIGPIPE.
        with (
            open(self._workdir / "broker.out", "wb") as out,
            open(self._workdir / self.LOG, "wb") as log,
        ):
            self._proc = subprocess.Popen(
                [
                    str(broker_binary()),
                    "start",
                    "--data-dir",
                    str(data),
                    "--host",
                    "127.0.0.1",
                    "--only",
                    "kafka",
                    "--kafka-port",
                    str(self.requested_port),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=log,
                close_fds=True,
                preexec_fn=_die_with_parent,
            )
        self._port = self._read_port(time.monotonic() + self.startup_timeout)

    def _read_port(self, deadline: float) -> int:
        """Read the ``kafka  127.0.0.1:<port>`` line the broker prints once it listens."""
        assert self._proc is not None and self._workdir is not None
        while (found := _ANNOUNCE.search((self._workdir / "broker.out").read_bytes())) is None:
            if self._proc.poll() is not None:
                raise self._failure(f"broker exited with code {self._proc.returncode}")
            if time.monotonic() > deadline:
                raise self._failure(f"no address announced within {self.startup_timeout:g} s")
            time.sleep(0.02)
        return int(found.group(2))

    def _await_ready(self) -> None:
        """The broker prints its address after binding; prove it accepts connections."""
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self._port or 0), timeout=1):
                    return
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise self._failure(f"port {self._port} does not accept: {exc}") from None
                time.sleep(0.05)

    def _stderr_noise(self, tail: str) -> str:
        """Without noida-db's harmless ``GLIBC_2.39 not found`` warning (module notes)."""
        return _GLIBC_WARNING.sub("", tail)

    def kill(self) -> None:
        """SIGKILL the broker, losing unsaved data: a crash, for tests."""
        self._end(signal.SIGKILL)
