"""Child-process entry point of :class:`cep.servers.mongo.EmbeddedMongo`.

Run as ``python -m cep.servers.mongo_daemon --workdir DIR --parent-pid PID``. It starts a
SecantusDB server on 127.0.0.1 with an OS-chosen port (bind to port 0, so there is no
window in which another process can take the port) unless ``--port`` names one, writes
``<port>\\n`` on stdout and then serves until one of:

* SIGTERM (what :meth:`EmbeddedMongo.stop` sends first): default action (set here, not
  inherited: a parent started with SIGTERM ignored would otherwise wait ``stop_timeout``
  for SIGKILL), the process ends at once. Nothing is lost: the default data dir is
  disposable (``durable=False``), a ``--data-dir`` one is journaled (recovered on reopen), and
  ``SecantusDBServer.stop()`` would only add a 2 s wait for an ``accept()`` that a
  closed socket does not wake on Linux;
* EOF on stdin: the parent holds the only write end of that pipe, so the kernel closes
  it when the parent dies in any way, SIGKILL included;
* ``os.getppid()`` no longer being the parent: the fallback when the pipe's write end
  was duplicated into another process (a ``fork()`` of the parent keeps it open).

SIGINT is ignored: a terminal Ctrl-C reaches the whole foreground process group, and
the parent must decide when the server goes (it may still need the store while it
shuts down). ``PR_SET_PDEATHSIG`` is deliberately not used: it fires when the *thread*
that spawned the child exits, which would kill the server under a caller that started
it from a worker thread.

On parent death the child also removes the work directory, since nobody else will; a
``--data-dir`` outside it is kept (it is what a restarted run resumes from).
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import shutil
import signal
import sys
from pathlib import Path
from typing import NoReturn

# How often the serve loop re-checks its parent; bounds how long an orphan lives.
_POLL_SECONDS = 0.25


def _parent_gone(parent_pid: int) -> bool:
    """True when we were re-parented or stdin hit EOF (the parent died)."""
    if os.getppid() != parent_pid:
        return True
    readable, _, _ = select.select([sys.stdin.fileno()], [], [], _POLL_SECONDS)
    return bool(readable) and not os.read(sys.stdin.fileno(), 4096)


def main(argv: list[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(prog="python -m cep.servers.mongo_daemon")
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--parent-pid", required=True, type=int)
    parser.add_argument("--cache-size", default="1G")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-dir", type=Path,
                        help="persistent, journaled WiredTiger home (default: WORKDIR/data, "
                        "unjournaled, removed with WORKDIR)")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # stop() relies on it, as inherited or not
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )

    from secantus import SecantusDBServer  # heavy import: after the signal set-up

    persistent = args.data_dir is not None
    server = SecantusDBServer(
        host="127.0.0.1",
        port=args.port,
        storage_path=str(args.data_dir if persistent else args.workdir / "data"),
        # Standalone: no oplog write per document (we use no change streams), and
        # pymongo talks to it as a plain single server.
        replica_set_name=None,
        enable_test_commands=False,
        # A temp data dir is deleted at stop, so journal and checkpoints buy nothing
        # there; a persistent one must survive SIGKILL for the run to resume.
        durable=persistent,
        cache_size=args.cache_size,
        # The default 300 s idle cut would drop pooled driver connections between
        # slow micro-batches; on loopback there is no hostile peer to guard against.
        client_idle_timeout_s=24 * 3600.0,
    )
    server.start()
    sys.stdout.write(f"{server.port}\n")
    sys.stdout.flush()
    # Nothing else may go to stdout: the parent stops reading after the port.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    while not _parent_gone(args.parent_pid):
        pass
    shutil.rmtree(args.workdir, ignore_errors=True)
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown under live server threads


if __name__ == "__main__":
    main()
