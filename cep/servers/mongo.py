"""The embedded MongoDB-compatible server that a local ``cep run`` uses for key handoff.

What SecantusDB 0.7.0b3 is (read from its wheel; ``pip show -f SecantusDB``)
-------------------------------------------------------------------------------
* A MongoDB wire-protocol server written in Python (``secantus.server.SecantusDBServer``)
  over WiredTiger (the C library mongod ships, vendored in the wheel as ``wiredtiger``).
  Entry points: the console script ``secantusd-py`` / ``python -m secantus``
  (``--host --port --storage-path --cache-size --standalone --log-level …``), or the
  Python API ``SecantusDBServer(host, port=0, storage_path, *, replica_set_name,
  durable, cache_size, client_idle_timeout_s, …)`` with ``start()`` / ``stop()`` /
  ``port`` / ``uri`` and a context manager. ``port=0`` binds an OS-chosen port and
  ``server.port`` reads it back; that is what we use, so there is no free-port race.
  (The Rust ``secantusd-rs`` server is not in the wheel.)
* Storage: a WiredTiger home directory (``storage_path``; ``":memory:"`` gives WT's
  in-memory engine in a temp dir). ``durable=False`` turns the journal and the
  close-checkpoint off — right for a data dir that is deleted at stop.
* By default it advertises itself as a one-member replica set ``secantus`` and writes
  an oplog entry per document; ``replica_set_name=None`` (``--standalone``) drops both,
  and pymongo then sees a plain ``Single`` server.
* Checked by hand with pymongo 4.20 (it reports itself as mongod 8.2.11): ``ping``,
  insert, find, update/replace with upsert, delete_many, ``bulk_write`` (ordered and
  not, batched by the driver), ``find_one_and_update/replace/delete``, create_index
  (a unique secondary index rejects a duplicate). A duplicate ``_id`` or unique key
  answers code 11000, so pymongo raises ``DuplicateKeyError``. Listed by its README,
  not checked: aggregation, transactions, change streams (replica-set mode only),
  SCRAM auth and TLS (off by default).
  ``maxBsonObjectSize`` is 16 MiB (+16 KiB headroom); a larger document is refused by
  the driver (``DocumentTooLarge``).
* Write concern: ``w: 1``, ``w: "majority"`` and ``j: true`` are accepted and mean
  "applied" (``j`` is durable only with the journal on); numeric ``w > 1`` answers
  ``UnsatisfiableWriteConcern`` like a one-node set; ``w: 0`` is unacknowledged.
* Not supported: replica sets/sharding, text/hashed/wildcard indexes, ``$where``/JS,
  ``OP_COMPRESSED``.
* Performance traps measured on this machine (they shaped ``migration.store``):
  - a query or upsert on a *sub-document* ``_id`` is a collection scan (1000 upserts
    took 56 s against 0.3 s with string ``_id`` s), so the store uses string ids;
  - ``{_id: {$in: [...]}}`` is quadratic in the list length (1000 ids: 1.9 s; 40
    queries of 25 ids: 0.15 s), so the store splits ``$in`` lists;
  - ``_id`` range queries and deletes use the ``_id`` index.
* Each connection gets a thread and is dropped after 300 s idle by default; we raise
  that to a day (a slow micro-batch must not lose its pooled connections).

The server runs in its own process (``python -m cep.servers.mongo_daemon``) rather than in
ours: it is pure Python, and inside the driver process it would compete with the
driver for the GIL. See ``cep.servers.mongo_daemon`` for how the child dies with its parent.

How long a stop takes (why a user's Ctrl-C does not wait for the server): SIGTERM ends
the child at once, as it installs no handler for it (measured with a parent interrupted
by Ctrl-C on the shared 2-core machine, load averages 1 to 20: the child is gone
0.05-0.5 s after SIGTERM; ``stop_timeout`` and SIGKILL are for a child that is stuck).
What such a parent spends after that, 0.3-1.0 s, is its own exit: interpreter teardown,
and pymongo's exit-time joins of its clients' monitor threads (up to 1 s each).

Persistent data (``data_dir``): a ``cep run --checkpoint DIR`` that moves keys keeps the
server's WiredTiger home in ``DIR/mongo``, so a restarted run's new server reopens the
key maps and handoff documents the killed run wrote. There the server runs with
``durable=True`` (journal, periodic checkpoints, recovery on reopen) and the directory
is never deleted by us. The journal alone is not enough: WiredTiger buffers log records
and writes them out a little later, so a write acknowledged just before a SIGKILL can
be lost (measured: 5 of 10 trials) unless it asked for ``j: true``, which makes
SecantusDB flush the log before it answers (0 of 10); ``cep.transports.mongo_client``
asks for it.
WiredTiger locks its home, so a second server on the same directory fails to start
("Device or resource busy") instead of corrupting it.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from cep.servers.child import ChildServer


class EmbeddedMongoError(RuntimeError):
    """The embedded server did not start (the message carries its stderr tail)."""


class EmbeddedMongo(ChildServer):
    """A SecantusDB server in a child process on 127.0.0.1.

    ``with EmbeddedMongo() as mongo: StateStore(mongo.uri, run_id=…)``. The server is
    stopped by ``stop()``, by leaving the ``with`` block (also on KeyboardInterrupt),
    at interpreter exit (``atexit``), and — when this process is killed outright —
    by the child itself within about a quarter of a second.

    Data lives in a temp dir removed at stop, unless ``data_dir`` is given: then it is
    kept there, journaled, for the next server started on it (see the module notes).
    ``port`` 0 lets the OS choose; a fixed port lets a restarted server keep its URI.
    """

    PREFIX = "cep-mongo-"
    LOG = "server.log"
    NAME = "embedded SecantusDB"
    ROLE = "server"
    ERROR = EmbeddedMongoError
    STARTUP_TIMEOUT = 30.0
    STOP_TIMEOUT = 5.0

    def __init__(self, *, data_dir: Path | None = None, port: int = 0,
                 startup_timeout: float | None = None, stop_timeout: float | None = None,
                 cache_size: str = "1G") -> None:
        super().__init__(data_dir=data_dir, port=port, startup_timeout=startup_timeout,
                         stop_timeout=stop_timeout)
        self.cache_size = cache_size  # WiredTiger's cache

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.running_port()}/"

    def _spawn(self) -> None:
        assert self._workdir is not None
        package_root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        with open(self._workdir / self.LOG, "wb") as log:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cep.servers.mongo_daemon",
                    "--workdir",
                    str(self._workdir),
                    "--parent-pid",
                    str(os.getpid()),
                    "--cache-size",
                    self.cache_size,
                    "--port",
                    str(self.requested_port),
                    *(["--data-dir", str(self.data_dir)] if self.data_dir else []),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                close_fds=True,
            )
        self._port = self._read_port(time.monotonic() + self.startup_timeout)

    def _read_port(self, deadline: float) -> int:
        """Read the ``<port>\\n`` line the child prints once it listens."""
        assert self._proc is not None and self._proc.stdout is not None
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._failure(f"no port announced within {self.startup_timeout:g} s")
                if not sel.select(remaining):
                    continue
                chunk = os.read(self._proc.stdout.fileno(), 64)
                if not chunk:
                    self._proc.wait(timeout=self.stop_timeout)
                    raise self._failure(f"server exited with code {self._proc.returncode}")
                line += chunk
        self._proc.stdout.close()
        return int(line)

    def _await_ready(self) -> None:
        """The child announces its port after ``listen()``; prove it also answers."""
        timeout_ms = max(1, int(self.startup_timeout * 1000))
        client: MongoClient = MongoClient(
            self.uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms
        )
        try:
            client.admin.command("ping")
        except PyMongoError as exc:
            raise self._failure(f"server does not answer ping: {exc}") from None
        finally:
            client.close()
