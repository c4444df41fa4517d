"""The live view in a real browser: headless Chromium opens the page that ``cep run
--follow --ui`` serves while it goes on, sees the throughput chart and the engines'
loads appear and grow as files land (no reload: the page polls), and shows a key that is
markup as text.

Skipped only where Chromium or its driver is missing (CI installs Debian's, .ci/run).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.browser import chromium, missing_browser
from support.faults import ROOT, kill_group, land, start

pytestmark = pytest.mark.skipif(missing_browser() is not None,
                                reason=missing_browser() or "")

RULE = ROOT / "rules" / "sensor_average.epl"
READINGS = (ROOT / "tests" / "data" / "readings.jsonl").read_text().splitlines(keepends=True)
PLANTED_KEY = "<img src=x onerror=window.__cepXss=1>"
PLANTED = json.dumps({"sensor": PLANTED_KEY, "ts": "2026-03-01T12:30:00.000Z",
                      "temp": 45.0, "ok": True}) + "\n"
MALFORMED = '{"sensor": "<script>window.__cepXss=2</script>", "ts": "x", "ok": true}\n'
WAIT_S = 400  # a followed run's batches on a loaded 2-core machine


def _page(driver) -> dict:
    """What the page shows now, read from its DOM."""
    return driver.execute_script("""
        const bars = [...document.querySelectorAll('#chart-engine-totals rect')];
        return {
          throughput: Number(document.getElementById('chart-throughput').dataset.points || 0),
          engineSeries: Number(document.getElementById('chart-engines').dataset.points || 0),
          engineTotal: bars.reduce((s, r) => s + Number(r.getAttribute('data-value')), 0),
          engineBars: bars.length,
          eventsIn: document.querySelector('#kpi-events-in .value')?.textContent || '',
          text: document.body.innerText,
          images: document.querySelectorAll('img').length,
          scripts: document.querySelectorAll('script').length,
          xss: window.__cepXss === undefined ? null : window.__cepXss,
        };""")


def _address(proc, logs: Path) -> str:
    """The page's address: the first thing ``cep run --ui`` prints."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = re.search(r"live view at (http://\S+)", logs.read_text(errors="replace"))
        if found:
            return found.group(1)
        if proc.poll() is not None:
            pytest.fail(f"the run ended (exit {proc.returncode}) before it served its page")
        time.sleep(0.2)
    pytest.fail(f"cep run --ui printed no address within {WAIT_S} s")


def _wait_page(driver, proc, condition, what: str) -> dict:
    deadline = time.monotonic() + WAIT_S
    while True:
        shown = _page(driver)
        if condition(shown):
            return shown
        if proc.poll() is not None:
            pytest.fail(f"the run ended (exit {proc.returncode}) before the page showed {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"the page did not show {what} within {WAIT_S} s: {shown}")
        time.sleep(0.5)


def test_the_page_follows_a_live_run_and_shows_markup_as_text(tmp_path):
    folder, run = tmp_path / "in", tmp_path / "run"
    folder.mkdir()
    run.mkdir()
    land(folder, "a.jsonl", READINGS[:20])
    proc = start([sys.executable, "-m", "cep.cli", "run", str(RULE), "--input", str(folder),
                  "--batch-size", "15", "--engines", "2", "--master", "local[2]", "--quiet",
                  "--follow", "--trigger-interval", "0.3", "--checkpoint", str(run),
                  "--output", f"{run}.jsonl", "--ui", "127.0.0.1:0"], tmp_path / "follow")
    driver = None
    try:
        # the page is the run's own (--ui), on a port the OS chose
        driver = chromium(tmp_path / "profile")
        driver.get(_address(proc, tmp_path / "follow.err"))
        first = _wait_page(driver, proc,
                           lambda p: p["throughput"] >= 2 and p["engineBars"] == 2,
                           "the first batch")
        assert first["engineTotal"] > 0
        land(folder, "b.jsonl", [*READINGS[20:45], MALFORMED])
        land(folder, "c.jsonl", [*READINGS[45:], PLANTED])
        shown = _wait_page(
            driver, proc,
            lambda p: p["engineTotal"] == len(READINGS) + 1 and PLANTED_KEY in p["text"],
            "every file's events and the planted key")
        assert shown["throughput"] > first["throughput"], "the chart grew, no reload"
        assert shown["engineSeries"] > first["engineSeries"]
        assert shown["engineTotal"] > first["engineTotal"]
        assert shown["eventsIn"] == str(len(READINGS) + 1)
        # markup from the input is text: no element made of it, nothing ran
        assert "<script>window.__cepXss=2</script>" in shown["text"]
        assert shown["images"] == 0 and shown["xss"] is None
        assert shown["scripts"] == 1, "only the page's own script"
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        if driver is not None:
            driver.quit()
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)  # the batch in flight commits, then it ends
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                kill_group(proc)
