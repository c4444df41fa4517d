"""How cep writes a figure in every table it prints (``cep simulate``, ``cep verify``,
``cep bench``, the summary of ``cep run``): one format per kind of figure, so that the
same measure reads alike wherever it appears.

* counts (events, keys, bytes, rebalances, tweets per second): whole, with thousands
  separators, ``1,706,839``;
* percentages: one decimal and ``%``, ``25.1%``;
* seconds: ``s`` after the number, ``12.3s``; milliseconds ``ms``, ``0.12ms``;
* ratios: two decimals and ``x``, ``1.06x``;
* a figure that does not exist: ``-``.

And one header word per measure (:data:`HEADERS`), used by every table that shows it.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The header of each measure that more than one table shows.
HEADERS = {
    "strategy": "strategy",
    "engines": "engines",
    "events": "events",
    "avg_rstd": "avg RSTD",
    "max_rstd": "max RSTD",
    "avg_rstd_lower_bound": "avg RSTD bound",
    "cpu_rstd": "CPU RSTD",
    "rebalances": "rebalances",
    "keys_moved": "keys moved",
    "keys_per_rebalance": "keys/rebal",
    "events_moved": "events moved",
    "state_bytes": "state bytes",
    "makespan": "makespan",
    "run_time": "run time",
    "equal_to_kg": "= KG",
}

MISSING = "-"


def count(value: float | None) -> str:
    """A whole number with thousands separators (a float is rounded): ``1,706,839``."""
    return MISSING if value is None else f"{round(value):,}"


def pct(value: float | None, digits: int = 1) -> str:
    """A percentage: ``25.1%``."""
    return MISSING if value is None else f"{value:,.{digits}f}%"


def seconds(value: float | None, digits: int = 1) -> str:
    """A duration in seconds: ``12.3s``."""
    return MISSING if value is None else f"{value:,.{digits}f}s"


def millis(value: float | None, digits: int = 2) -> str:
    """A duration in milliseconds: ``0.12ms``."""
    return MISSING if value is None else f"{value:,.{digits}f}ms"


def ratio(value: float | None, digits: int = 2) -> str:
    """How many times another figure: ``1.06x``."""
    return MISSING if value is None else f"{value:,.{digits}f}x"


def number(value: float | None) -> str:
    """A figure that is usually whole but may not be (rebalances per round over several
    rounds): a count when whole, else one decimal."""
    if value is None:
        return MISSING
    return count(value) if float(value).is_integer() else f"{value:,.1f}"


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells (the first one the header) as columns two spaces apart: the first
    column, the row's name, aligned left, the figures right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                  for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows)
