"""Processes a test starts (``support.children``): the command line that gives a child
the default actions of the signals a test sends it, and waits on their first line of
output, their exit, a pid's end.

Each wait ends as soon as its condition holds; its bound is only there to turn a hang
into a failure, so callers give bounds far beyond what a loaded machine takes.
"""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The signals tests send their children. A child inherits an ignored signal across
# exec: a suite started as a background job (`... &` in a script, many CI runners and
# schedulers) has SIGINT ignored, and the child of a test that relied on the inherited
# disposition never saw the Ctrl-C the test sent.
SENT_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# Runs in a fresh interpreter, resets SENT_SIGNALS to their default action and execs the
# command in its place (same pid, so the test signals the process it means). A wrapper
# rather than ``preexec_fn``: that runs Python between fork and exec, which may deadlock
# when the test process has threads (Spark's, a server's).
_DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    f"for number in {tuple(int(s) for s in SENT_SIGNALS)}:\n"
    "    signal.signal(number, signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def default_signals(command: list[str]) -> list[str]:
    """``command`` started with SIGINT and SIGTERM at their default action, as from a
    terminal, whatever the test process inherited: a Python child then turns SIGINT into
    ``KeyboardInterrupt`` and SIGTERM ends it (unless it installs handlers of its own)."""
    return [sys.executable, "-I", "-S", "-c", _DEFAULT_SIGNALS, *command]


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout: float) -> float:
    """Seconds until ``pid`` is gone; fails the test after ``timeout``."""
    start = time.monotonic()
    while alive(pid):
        if time.monotonic() - start > timeout:
            pytest.fail(f"process {pid} still alive after {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - start


def first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """``proc``'s first line of output ('' if it ended without one); a process that says
    nothing within ``timeout`` is killed and fails the test."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            proc.kill()
            pytest.fail(f"process {proc.pid} printed nothing within {timeout} s")
    return proc.stdout.readline()


def wait_exit(proc: subprocess.Popen[str], timeout: float) -> float:
    """Seconds until ``proc`` exits; a process still running after ``timeout`` is killed
    and fails the test."""
    start = time.monotonic()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"process {proc.pid} still running after {timeout} s")
    return time.monotonic() - start
