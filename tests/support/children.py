"""Waiting on processes a test starts (``support.children``): their first line of output,
their exit, a pid's end.

Each wait ends as soon as its condition holds; its bound is only there to turn a hang
into a failure, so callers give bounds far beyond what a loaded machine takes.
"""

from __future__ import annotations

import selectors
import subprocess
import time
from pathlib import Path

import pytest


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
