"""EmbeddedMongo lifecycle against the real SecantusDB child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pymongo import MongoClient
from support.children import alive, default_signals, first_line, wait_exit, wait_gone

from cep.servers.mongo import EmbeddedMongo, EmbeddedMongoError
from migration.store import StateStore

# Bounds on waits for a state the test expects: far beyond what a loaded machine takes
# (a stop is about a second even at load average 20, see cep.servers.mongo), so only a
# real hang fails them; every wait ends as soon as its condition holds.
PARENT_START_S = 300.0  # a fresh interpreter importing pymongo, then the server's start
GONE_S = 120.0


def _ping(uri: str) -> dict:
    client: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=60_000)
    try:
        return client.admin.command("ping")
    finally:
        client.close()


def test_start_answers_ping_and_stop_removes_process_and_data() -> None:
    server = EmbeddedMongo()
    with server:
        pid, workdir = server.pid, server.workdir
        assert pid is not None and workdir is not None
        assert server.uri.startswith("mongodb://127.0.0.1:")
        assert _ping(server.uri)["ok"] == 1.0
        assert (workdir / "data").is_dir()
    assert not alive(pid)
    assert not workdir.exists()
    server.stop()  # idempotent
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.uri


def test_stop_in_a_forked_copy_leaves_the_server_running(mongo: EmbeddedMongo) -> None:
    child = os.fork()
    if child == 0:  # the copy runs the same atexit hook and may call stop()
        mongo.stop()
        os._exit(0)
    os.waitpid(child, 0)
    assert mongo.pid is not None and alive(mongo.pid)
    assert _ping(mongo.uri)["ok"] == 1.0


def test_two_servers_get_different_ports() -> None:
    with EmbeddedMongo() as a, EmbeddedMongo() as b:
        assert a.uri != b.uri
        assert _ping(a.uri)["ok"] == _ping(b.uri)["ok"] == 1.0


def test_failed_start_reports_server_stderr() -> None:
    server = EmbeddedMongo(cache_size="not-a-size")
    with pytest.raises(EmbeddedMongoError, match="cache_size") as info:
        server.start()
    assert "server stderr" in str(info.value)
    assert server.pid is None and server.workdir is None


# A parent process that owns an EmbeddedMongo (with its data in argv[2] if given),
# reports the server's pid, workdir and URI, then waits to be interrupted or killed.
_PARENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from cep.servers.mongo import EmbeddedMongo

    server = EmbeddedMongo(data_dir=Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    if sys.argv[1] == "with":
        with server:
            print(server.pid, server.workdir, server.uri, flush=True)
            time.sleep(600)
    else:  # rely on atexit alone
        server.start()
        print(server.pid, server.workdir, server.uri, flush=True)
        time.sleep(600)
    """
)


def _start_parent(mode: str, *args: str) -> tuple[subprocess.Popen[str], int, Path, str]:
    parent = subprocess.Popen(
        default_signals([sys.executable, "-c", _PARENT, mode, *args]),  # Ctrl-C acts
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a shell job
    )
    line = first_line(parent, PARENT_START_S)
    if not line:
        wait_exit(parent, GONE_S)
        pytest.fail(f"parent did not start: {parent.stderr.read() if parent.stderr else ''}")
    pid, workdir, uri = line.split()
    assert alive(int(pid))
    return parent, int(pid), Path(workdir), uri


@pytest.mark.parametrize("mode", ["with", "atexit"])
def test_ctrl_c_in_parent_stops_server(mode: str) -> None:
    parent, pid, workdir, _ = _start_parent(mode)
    # A terminal's Ctrl-C signals the whole foreground process group.
    os.killpg(parent.pid, signal.SIGINT)
    seconds = wait_exit(parent, GONE_S)
    print(f"parent ({mode}) exited {seconds:.2f} s after Ctrl-C")
    assert parent.stderr is not None
    assert "KeyboardInterrupt" in parent.stderr.read()
    assert not alive(pid)
    assert not workdir.exists()


def test_sigkilled_parent_leaves_no_server() -> None:
    parent, pid, workdir, _ = _start_parent("with")
    parent.kill()
    wait_exit(parent, GONE_S)
    wait_gone(pid, GONE_S)
    assert not workdir.exists()


def test_a_data_dir_outlives_a_sigkilled_owner_and_reopens_on_the_same_port(
        tmp_path: Path) -> None:
    """What a restarted ``cep run --checkpoint`` relies on: the maps and documents the
    killed run acknowledged are there for the next server on the same directory."""
    data = tmp_path / "mongo"
    parent, pid, workdir, uri = _start_parent("with", str(data))
    with StateStore(uri, run_id="r") as store:
        assert store.put_key_map(3, b"map three")
        store.put_states(2, {"k": b"state"})
    parent.kill()
    wait_exit(parent, GONE_S)
    wait_gone(pid, GONE_S)
    assert not workdir.exists()  # the log's temp dir goes, the data stays
    assert (data / "WiredTiger").exists()
    port = int(uri.rsplit(":", 1)[1].strip("/"))
    with EmbeddedMongo(data_dir=data, port=port) as again:
        assert again.uri == uri
        with StateStore(again.uri, run_id="r") as store:
            assert store.get_key_map(3) == b"map three"
            assert store.get_states(2, ["k"]) == {"k": b"state"}
    assert (data / "WiredTiger").exists()  # a clean stop keeps it too
