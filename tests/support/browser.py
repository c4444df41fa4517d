"""Headless Chromium for the live view's tests, driven by selenium through Debian's
chromedriver (never a driver downloaded at run time: CI installs ``chromium`` and
``chromium-driver`` from Debian, see .ci/run)."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage")


def missing_browser() -> str | None:
    """Why no browser test can run here, or None."""
    if shutil.which("chromium") is None:
        return "chromium is not installed (apt-get install chromium chromium-driver)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (apt-get install chromium-driver)"
    return None


def chromium(profile: Path, width: int = 1400, height: int = 1000):
    """A headless Chromium with a fresh profile in ``profile``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
