"""When and where figures were measured: every result file of cep's benches (``cep
bench --json``, ``bench/*.py``) records the date, the machine and its load averages,
since figures taken on a shared machine move with what else runs on it."""

from __future__ import annotations

import datetime
import os
import platform
from typing import Any


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """The date (UTC), the machine, its CPUs and Python, as every result file has them."""
    return {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()} {platform.system()} {os.cpu_count()} CPUs, "
                       f"Python {platform.python_version()}",
            "cpus": os.cpu_count(), "python": platform.python_version()}
