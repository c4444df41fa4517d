"""The latest few complex events of each rule, for a live view of a run.

The events themselves never travel to the driver (the engines write them as parts), so
each engine puts its own last few events per rule into its stats row, and the driver
keeps the last few of those per rule in the batch's metrics (``latest_events``). The
numbers are fixed and every line is cut to a fixed length, so the metrics and the
driver's memory stay the same size whatever the batch or the events.
"""

from __future__ import annotations

import pandas as pd

from cep.spark.event_parts import event_lines

LATEST_KEPT = 3  # events per rule
LINE_CHARS = 1000  # an event's JSON line is cut here (a tweet's text can be long)


def engine_latest(frame: pd.DataFrame) -> dict[str, list]:
    """An engine's last LATEST_KEPT events per rule (by sequence number), as
    ``{rule: [[seq, line], …]}`` in the form the part files hold them."""
    if frame.empty:
        return {}
    out: dict[str, list] = {}
    for rule, rows in frame.groupby("rule", sort=False):
        tail = rows.nlargest(LATEST_KEPT, "seq")
        lines = event_lines(tail).splitlines()  # ascending seq
        out[str(rule)] = [[int(seq), _cut(line)] for seq, line
                          in zip(sorted(tail["seq"].tolist()), lines, strict=True)]
    return out


def merge_latest(stats: list[dict]) -> dict[str, list[str]]:
    """The batch's last LATEST_KEPT events per rule over every engine's stats row."""
    found: dict[str, list] = {}
    for info in stats:
        for rule, pairs in info.get("latest", {}).items():
            found.setdefault(rule, []).extend(pairs)
    return {rule: [line for _, line in sorted(pairs)[-LATEST_KEPT:]]
            for rule, pairs in found.items()}


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
