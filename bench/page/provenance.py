"""When and where a result file's figures were measured, as the file records it.

A file that lacks a date or a machine is shown as "not recorded": nothing is guessed.
Benches keep those fields under different names and at different depths (the file, one
part of it, a ``meta`` object), so each is looked up in a list of names, most specific
part first.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from page.figures import num

NOT_RECORDED = "not recorded"

# where a result file (or one part of it) may record when and where it was measured
DATE_KEYS = ("date", "measured_at", "measured", "timestamp", "when", "started_at")
MACHINE_KEYS = ("machine", "host", "hostname", "platform", "cpu_model")
CPU_KEYS = ("cpus", "cpu_count")
PYTHON_KEYS = ("python", "python_version")
LOAD_KEYS = ("load_average_at_start", "load_average", "loadavg")
META_KEYS = ("meta", "provenance", "environment", "env", "setup")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?")


def _first(dicts: list[dict], keys: tuple[str, ...]) -> object:
    for d in dicts:
        for key in keys:
            if d.get(key) not in (None, ""):
                return d[key]
    return None


def _scopes(*parts: object) -> list[dict]:
    """Where to look for provenance: each part (most specific first), then the dicts
    each of them keeps it in (``meta``, ``environment``, …)."""
    scopes = [p for p in parts if isinstance(p, dict)]
    return scopes + [s[k] for s in scopes for k in META_KEYS if isinstance(s.get(k), dict)]


def recorded_date(*parts: object) -> str:
    value = _first(_scopes(*parts), DATE_KEYS)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 1e9:
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, str) and (found := _DATE.search(value)):
        return found.group(0).replace("T", " ")
    return NOT_RECORDED


def recorded_machine(*parts: object) -> str:
    scopes = _scopes(*parts)
    machine, cpus, python = (_first(scopes, k) for k in (MACHINE_KEYS, CPU_KEYS, PYTHON_KEYS))
    if python and machine and str(python) in str(machine):
        python = None  # the machine's description names it already
    extra = ", ".join(x for x in (f"{cpus} CPUs" if cpus else "",
                                  f"Python {python}" if python else "") if x)
    if machine:
        return f"{machine}" + (f" ({extra})" if extra else "")
    return NOT_RECORDED + (f" ({extra})" if extra else "")


def recorded_load(*parts: object) -> str | None:
    """The load average the file records, saying when if it says (at the start)."""
    for scope in _scopes(*parts):
        for key in LOAD_KEYS:
            value = scope.get(key)
            if isinstance(value, list):
                value = " / ".join(num(x, 2) for x in value if isinstance(x, int | float))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                value = num(value, 2)
            else:
                continue
            when = " at the start" if key.endswith("_at_start") else ""
            return f"load average{when}: {value}" if value else None
    return None


def provenance(*parts: object) -> str:
    """One line: when and where the figures were measured, as the file records it."""
    line = f"Measured: {recorded_date(*parts)}; machine: {recorded_machine(*parts)}"
    load = recorded_load(*parts)
    return line + (f"; {load}" if load else "") + "."

