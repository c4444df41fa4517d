"""A figure read out of a result file and written for a Markdown table.

The result files are written by different benches and have no common layout, so every
figure is read with :func:`at`, which gives None for a field that is not there, and the
writers below leave such a cell empty.
"""

from __future__ import annotations

from collections.abc import Iterable


def at(data: object, *path: str | int) -> object:
    """``data[path[0]][path[1]]…``, or None where a step is missing."""
    for step in path:
        if isinstance(data, dict):
            data = data.get(step if isinstance(step, str) else str(step))
        elif isinstance(data, list) and isinstance(step, int) and -len(data) <= step < len(data):
            data = data[step]
        else:
            return None
    return data


def num(value: object, digits: int = 0, suffix: str = "") -> str:
    """A figure for a table: thousands separated, ``digits`` decimals; empty if absent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    text = f"{value:,.{digits}f}" if digits or isinstance(value, float) else f"{value:,}"
    return text + suffix


def pct(value: object, digits: int = 1) -> str:
    return num(value, digits, "%") if isinstance(value, int | float) else ""


def ratio(value: object) -> str:
    return num(value, 2, "×") if isinstance(value, int | float) else ""


def yes_no(value: object) -> str:
    return {True: "yes", False: "no"}.get(value, "") if isinstance(value, bool) else ""


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A Markdown table; a figure-like header is right-aligned."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)

