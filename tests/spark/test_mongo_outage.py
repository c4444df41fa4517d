"""MongoDB outage and connection security, with real processes throughout.

A key-moving ``cep run --mongo-uri … --checkpoint DIR`` talks to a SecantusDB server in
its own process that requires a password. The test kills the server (SIGKILL) in the
middle of the run: ``cep`` must stop within a bounded time with exit status 1 and one line naming
the batch and the URI (password masked), no traceback, the checkpoint intact. A restart
while the server is still down fails fast the same way; once the server is back on its
data, the restart finishes with exactly the events of an uninterrupted run. Through all
of it the password appears in no output, log, metrics or checkpoint file.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from support.faults import (
    INPUT,
    RULE,
    SecantusServer,
    appended,
    cep_run,
    committed,
    events,
    finish,
    in_flight,
    kill_group,
    read,
    start,
    wait_until,
)

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from cep.spark.jvm.session import SPARK_LOG
from cep.transports.mongo_client import MongoUnavailableError, StoreError
from grammar.compile import compile_file
from migration.store import StateStore

# ":", "/" and "@" must be percent-encoded in a URI: both spellings must stay hidden
PASSWORD = "Sw0rd:fish/42@x"
SECRETS = (PASSWORD, quote(PASSWORD, safe=""))
FAIL_WITHIN = 90  # seconds from the server's stop to cep's exit (time-out 2 s + Spark)


def _commits(run: Path) -> list[int]:
    return sorted(int(p.name) for p in (run / "checkpoint" / "commits").glob("[0-9]*"))


@pytest.fixture(scope="module")
def outage(tmp_path_factory):
    """The scenario, once: run, stop the server mid-run, restart cep while it is down,
    start the server again, restart cep. Yields what each step produced."""
    tmp = tmp_path_factory.mktemp("outage")
    server = SecantusServer(tmp / "db", user="cep", password=PASSWORD)
    server.start()
    run = tmp / "run"
    command = cep_run(run, "--mongo-uri", server.uri, "--mongo-timeout", "2")
    proc = start(command, tmp / "failed")
    try:
        deadline = time.monotonic() + 600
        while not committed(run, 1) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended early: {read(f'{tmp}/failed.err')}"
        server.stop(crash=True)  # the harshest stop: acknowledged writes must survive it
        stopped = time.monotonic()
        proc.wait(timeout=FAIL_WITHIN)
    except (AssertionError, subprocess.TimeoutExpired):
        kill_group(proc)
        server.stop(crash=True)
        raise
    failed = subprocess.CompletedProcess(command, proc.returncode, read(f"{tmp}/failed.out"),
                                         read(f"{tmp}/failed.err"))
    scenario = {"tmp": tmp, "run": run, "server": server, "failed": failed,
                "fail_s": time.monotonic() - stopped, "commits_after_failure": _commits(run)}
    began = time.monotonic()
    scenario["while_down"] = finish(command, tmp / "while-down")
    scenario["while_down_s"] = time.monotonic() - began
    scenario["commits_while_down"] = _commits(run)
    server.start()
    scenario["resumed"] = finish(command, tmp / "resumed")
    yield scenario
    server.stop(crash=True)


def test_mongodb_stopping_mid_run_stops_cep_with_one_clear_line(outage):
    failed, run = outage["failed"], outage["run"]
    assert failed.returncode == 1
    assert outage["fail_s"] < FAIL_WITHIN
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1, failed.stderr
    port = outage["server"].port
    found = re.match(rf"cep: batch (\d+) failed: MongoDB unreachable at "
                     rf"mongodb://cep:\*\*\*@127\.0\.0\.1:{port}/\?authSource=admin during ",
                     lines[0])
    assert found, lines[0]
    assert f"checkpoint {run} is intact" in lines[0]
    batch = int(found.group(1))
    commits = outage["commits_after_failure"]
    assert commits == list(range(batch)), "the failed batch is the first open one"
    assert batch >= 2


def test_a_restart_while_mongodb_is_down_fails_fast_and_clearly(outage):
    down = outage["while_down"]
    assert down.returncode == 1
    assert outage["while_down_s"] < 60
    port = outage["server"].port
    batch = len(outage["commits_after_failure"])
    assert down.stderr.startswith(f"cep: batch {batch} failed: MongoDB unreachable at "
                                  f"mongodb://cep:***@127.0.0.1:{port}/?authSource=admin "
                                  "during "), down.stderr
    assert len(down.stderr.strip().splitlines()) == 1, down.stderr
    assert outage["commits_while_down"] == outage["commits_after_failure"]


def test_after_mongodb_is_back_the_restart_gives_the_uninterrupted_events(outage):
    resumed = outage["resumed"]
    assert resumed.returncode == 0, resumed.stderr
    module = compile_file(RULE)
    expected = output_records(run_reference(
        module, load_inputs(module, [str(INPUT)], None).tables))
    assert events(Path(f"{outage['run']}.jsonl")) == expected


def test_the_password_is_never_printed_logged_or_stored(outage):
    for step in ("failed", "while_down", "resumed"):
        for stream in (outage[step].stdout, outage[step].stderr):
            assert not any(s in stream for s in SECRETS), step
    # every file of the runs: checkpoint, parts, metrics, output, captured output (the
    # server's own data directory holds its users, which is its business)
    tmp = outage["tmp"]
    leaks = [str(path) for path in tmp.rglob("*")
             if path.is_file() and path.relative_to(tmp).parts[0] != "db"
             and any(s.encode() in path.read_bytes() for s in SECRETS)]
    assert not leaks
    assert not any(s in read(SPARK_LOG) for s in SECRETS)


def test_a_wrong_password_from_the_environment_fails_fast_without_printing_it(
        outage, tmp_path):
    server = outage["server"]
    uri = server.uri.replace(quote(PASSWORD, safe=""), quote("wr0ng:" + PASSWORD, safe=""))
    started = time.monotonic()
    result = finish(cep_run(tmp_path / "run", "--mongo-timeout", "2"), tmp_path / "wrong",
                    env={"CEP_MONGO_URI": uri})
    assert result.returncode == 1
    assert time.monotonic() - started < 60
    assert result.stderr.startswith("cep: batch 0 failed: MongoDB put_key_map(version=0) "
                                    "failed at mongodb://cep:***@127.0.0.1:"), result.stderr
    assert "authentication failed" in result.stderr.lower()
    assert not any(s in result.stderr + result.stdout for s in (*SECRETS, "wr0ng"))
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A SecantusDB that speaks TLS only, with a self-signed certificate for 127.0.0.1."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    tmp = tmp_path_factory.mktemp("tls")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    server = SecantusServer(tmp / "db", tls=(cert, key)).start()
    yield server
    server.stop(crash=True)


def test_tls_is_configured_by_the_uri_alone(tls_server):
    """``tls=true&tlsCAFile=…`` in the URI is all it takes; the same server without TLS
    in the URI is unreachable (the store adds no TLS options of its own)."""
    with StateStore(tls_server.uri, run_id="tls", connect_timeout_ms=2000,
                    server_selection_timeout_ms=2000) as store:
        store.put_states(0, {"k": b"state"})
        assert store.get_states(0, ["k"]) == {"k": b"state"}
        store.drop_run()
    plain = tls_server.uri.partition("?")[0]
    with StateStore(plain, run_id="tls", connect_timeout_ms=1000,
                    server_selection_timeout_ms=1000) as store, \
            pytest.raises(StoreError) as info:
        store.get_key_map(0)
    assert isinstance(info.value, MongoUnavailableError)


# -- slow: repeated outages in a longer run ------------------------------------------

SLOW_SOURCE = "tweets:n=20000"
SLOW_OPTIONS = ("--batch-size", "2000", "--threshold", "1", "--mongo-timeout", "2")


@pytest.mark.slow
def test_repeated_crashes_of_mongodb_give_the_events_of_an_uninterrupted_run(tmp_path):
    """The server crashes twice: inside a batch (an engine's import or the router fails)
    and just after a batch's output (the driver's Balancer or gc fails). Each time cep
    stops with the one line and the server comes back on its data."""
    server = SecantusServer(tmp_path / "db").start()
    try:
        uninterrupted = finish(cep_run(tmp_path / "uninterrupted", *SLOW_OPTIONS,
                                       "--mongo-uri", server.uri, source=SLOW_SOURCE),
                               tmp_path / "uninterrupted")
        assert uninterrupted.returncode == 0, uninterrupted.stderr
        expected = events(Path(f"{tmp_path}/uninterrupted.jsonl"))
        run = tmp_path / "run"
        command = cep_run(run, *SLOW_OPTIONS, "--mongo-uri", server.uri, source=SLOW_SOURCE)
        for name, ready in (("in-batch-3", lambda: in_flight(run, 3)),
                            ("after-output-6",
                             lambda: appended(run, 6))):
            proc = start(command, tmp_path / name)
            wait_until(ready, proc, name)
            server.stop(crash=True)
            try:
                proc.wait(timeout=FAIL_WITHIN)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                pytest.fail(f"{name}: cep did not stop within {FAIL_WITHIN} s")
            stderr = read(f"{tmp_path}/{name}.err")
            assert proc.returncode == 1, stderr
            assert re.fullmatch(r"cep: batch \d+ failed: MongoDB unreachable at mongodb://"
                                r"127\.0\.0\.1:\d+/ during .* is intact: run the same "
                                r"command again once MongoDB is back\)\n", stderr), stderr
            server.start()
        final = finish(command, tmp_path / "final")
        assert final.returncode == 0, final.stderr
        assert events(Path(f"{run}.jsonl")) == expected
    finally:
        server.stop(crash=True)
