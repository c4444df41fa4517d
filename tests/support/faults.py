"""Real faults for the restart and MongoDB tests: ``cep run`` as its own process group,
SIGKILL of that whole group (and proof that nothing of it survives), and a standalone
SecantusDB server process, with optional SCRAM auth and TLS, that a test stops and
starts again on the same data directory and port, as an operator would a mongod.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from pymongo import MongoClient
from pymongo.errors import PyMongoError

from support.children import default_signals
from support.cluster import QUICK_JVM

ROOT = Path(__file__).parent.parent.parent

# FSD on the skewed tweets: 240 events in 5 batches of 48 on 3 engines, and dlb-h at
# θ = 5 % moves keys after every batch from the second on (maps 0 and 1 are fixed, so
# the first keys leave at the end of batch 1 and arrive in batch 2). Few batches: each
# `cep run` process costs a JVM start and a slow first batch, the rest is cheap.
RULE = ROOT / "rules" / "fsd.epl"
INPUT = ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"
BATCHES = 5
RUN_OPTIONS = ("--batch-size", "48", "--strategy", "dlb-h", "--threshold", "5", "--moves", "always",
               "--engines", "3", "--master", "local[2]", "--quiet")
CEP_TIMEOUT = 600  # seconds one `cep run` may take on a loaded 2-core machine


def cep_run(checkpoint: Path, *options: str, rule: Path = RULE,
            source: str = str(INPUT)) -> list[str]:
    """The ``cep run`` command line of a resumable key-moving run in ``checkpoint``;
    its events go to ``<checkpoint>.jsonl`` and its metrics to ``<checkpoint>.metrics``."""
    return [sys.executable, "-m", "cep.cli", "run", str(rule), "--input", source,
            *RUN_OPTIONS, "--checkpoint", str(checkpoint),
            "--output", f"{checkpoint}.jsonl", "--metrics", f"{checkpoint}.metrics", *options]


def start(command: list[str], logs: Path, env: dict[str, str] | None = None
          ) -> subprocess.Popen[bytes]:
    """Start ``command`` as the leader of a new process group (like a shell job), its
    output in ``logs``.out / .err: files, since nobody reads pipes while it runs.
    ``env`` adds to the environment. The JVM gets the quick start-up options of the
    cluster tests: each run here is a fresh process, and its start dominates."""
    quick = {"JAVA_TOOL_OPTIONS": os.environ.get("JAVA_TOOL_OPTIONS", QUICK_JVM)}
    with open(f"{logs}.out", "wb") as out, open(f"{logs}.err", "wb") as err:
        return subprocess.Popen(default_signals(command), cwd=ROOT, stdout=out, stderr=err,
                                env={**os.environ, **quick, **(env or {})},
                                start_new_session=True)


def finish(command: list[str], logs: Path, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end (bounded); stdout and stderr are kept in ``logs``."""
    proc = start(command, logs, env)
    try:
        proc.wait(timeout=CEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        pytest.fail(f"{command[3:5]} did not finish within {CEP_TIMEOUT} s")
    return subprocess.CompletedProcess(command, proc.returncode, read(f"{logs}.out"),
                                       read(f"{logs}.err"))


def read(path: Path | str) -> str:
    return Path(path).read_text(errors="replace")


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen[bytes], what: str,
               timeout: float = CEP_TIMEOUT) -> None:
    """Poll ``condition`` every 20 ms while ``proc`` runs; fail if it ends first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the run ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            kill_group(proc)
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.02)


def committed(checkpoint: Path, batch: int) -> bool:
    """Spark wrote the commit of ``batch``: it will never run again."""
    return (checkpoint / "checkpoint" / "commits" / str(batch)).exists()


def in_flight(checkpoint: Path, batch: int) -> bool:
    """Spark planned ``batch`` (its offsets are logged) and has not committed it."""
    planned = (checkpoint / "checkpoint" / "offsets" / str(batch)).exists()
    return planned and not committed(checkpoint, batch)


def reading(checkpoint: Path, batch: int) -> bool:
    """Spark runs ``batch`` and has not committed it, and its input tasks have begun
    reading: the earliest mark a batch's tasks leave (each piece's read first makes the
    batch's dead-letter folder, ``cep.spark.inputs.config.SourceConfig.dead_path``). A
    kill there lands inside the batch, before its engines, its output and its commit,
    however fast or loaded the machine (a fixed sleep after the batch is planned landed
    after its commit on a fast one)."""
    started = (checkpoint / "dead" / f"batch-{batch:07d}").is_dir()
    return started and in_flight(checkpoint, batch)


def appended(checkpoint: Path, batch: int) -> bool:
    """The driver has appended ``batch`` to the run's output file (its ledger says so)."""
    ledger = checkpoint / "ledgers" / "events.json"
    try:
        return json.loads(ledger.read_text())["batch"] >= batch
    except (OSError, ValueError):
        return False


def land(folder: Path, name: str, lines: list[str]) -> None:
    """A file appears whole in a followed folder: written under a hidden name (which a
    run does not list), then renamed into place."""
    tmp = folder / f".{name}.tmp"
    tmp.write_text("".join(lines))
    os.replace(tmp, folder / name)


def batch_total(checkpoint: Path, name: str) -> int:
    """``name`` summed over the committed batches' metrics files (``events_in``: the
    events the run has consumed so far)."""
    return sum(json.loads(p.read_text())[name]
               for p in (checkpoint / "metrics").glob("batch-*.json"))


def group_members(pgid: int) -> list[str]:
    """Live (not zombie) processes of process group ``pgid``, as "pid command"."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue  # gone meanwhile
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append(f"{stat.parent.name} {command[:120]!r}")
    return members


def kill_group(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """SIGKILL the whole process group of ``proc`` (driver, JVM, Python workers, an
    embedded MongoDB), then fail unless every member is gone within ``timeout``."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_group_gone(proc, timeout, "processes outlived the SIGKILL of their group")


def wait_group_gone(proc: subprocess.Popen[bytes], timeout: float, failure: str) -> None:
    """Fail with ``failure`` unless every member of ``proc``'s process group is gone
    within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (left := group_members(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"{failure}: {left}"


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in read(path).splitlines()]


def metrics(path: Path) -> list[dict]:
    return [m for m in events(path) if "batch" in m]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SecantusServer:
    """``python -m secantus`` on 127.0.0.1: a MongoDB server in its own process.

    With ``user``/``password`` it requires SCRAM authentication (the user is created on
    the first start, through a short unauthenticated start, as SecantusDB documents).
    With ``tls`` = (certificate, key) it speaks TLS only. Data and port stay the same
    across :meth:`stop` and :meth:`start`, so the URI stays valid.
    """

    def __init__(self, data_dir: Path, *, user: str | None = None,
                 password: str | None = None, tls: tuple[Path, Path] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.user, self.password, self.tls = user, password, tls
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        auth = f"{self.user}:{quote(self.password or '', safe='')}@" if self.user else ""
        options = ["authSource=admin"] if self.user else []
        if self.tls:
            options += ["tls=true", f"tlsCAFile={self.tls[0]}"]
        query = f"?{'&'.join(options)}" if options else ""
        return f"mongodb://{auth}127.0.0.1:{self.port}/{query}"

    def start(self) -> SecantusServer:
        if self.user and not (self.data_dir / "WiredTiger").exists():
            self._launch(auth=False)
            client: MongoClient = MongoClient(f"mongodb://127.0.0.1:{self.port}/")
            with client:
                client.admin.command("createUser", self.user, pwd=self.password,
                                     roles=["root"])
            self.stop()
        self._launch(auth=bool(self.user))
        return self

    def _launch(self, auth: bool) -> None:
        command = [sys.executable, "-m", "secantus", "--host", "127.0.0.1",
                   "--port", str(self.port), "--storage-path", str(self.data_dir),
                   "--standalone", "--log-level", "ERROR"]
        if auth:
            command.append("--auth")
        if self.tls:
            command += ["--tls-cert-file", str(self.tls[0]), "--tls-key-file", str(self.tls[1])]
        self.proc = subprocess.Popen(default_signals(command), cwd=self.data_dir.parent,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        uri = self.uri if auth or not self.user else f"mongodb://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + 60
        while True:
            client: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=250)
            try:
                with client:
                    client.admin.command("ping")
                return
            except PyMongoError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"SecantusDB did not start on port {self.port}")
                time.sleep(0.1)

    def stop(self, *, crash: bool = False) -> None:
        """Stop the server as an operator's ``kill`` does (SIGTERM), or as a crash
        (SIGKILL: whatever it had not made durable is lost); wait until it is gone."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL if crash else signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
