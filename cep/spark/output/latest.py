"""The latest few complex events of each rule, for a live view of a run.

The events themselves never travel to the driver (the engines write them as parts), so
each engine puts its own last few events per rule into its stats row, and the driver
keeps the last few of those per rule in the batch's metrics (``latest_events``). The
numbers are fixed and every line is cut to a fixed length, so the metrics and the
driver's memory stay the same size whatever the batch or the events.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cep.engine.json_rows import event_lines_text

LATEST_KEPT = 3  # events per rule
LINE_CHARS = 1000  # an event's JSON line is cut here (a tweet's text can be long)


def engine_latest(frame: pd.DataFrame) -> dict[str, list]:
    """An engine's last LATEST_KEPT events per rule (by sequence number; of events that
    tie on it, the first in the frame), as ``{rule: [[seq, line], …]}`` in ascending seq,
    in the form the part files hold them. Chosen with one sort over the whole frame and
    written with one line build: a pandas groupby per rule cost more than the rule's
    own work in a small batch (``bench/bench_batch_floor.py``)."""
    if frame.empty:
        return {}
    codes, rules = pd.factorize(frame["rule"].to_numpy(dtype=object))
    seq = frame["seq"].to_numpy(dtype=np.int64)
    n = len(seq)
    newest = np.lexsort((np.arange(n), -seq, codes))  # per rule: newest first
    sizes = np.bincount(codes, minlength=len(rules))
    starts = np.cumsum(sizes) - sizes
    grouped = codes[newest]
    kept = newest[np.arange(n) - starts[grouped] < LATEST_KEPT]
    rows = kept[np.lexsort((kept, seq[kept], codes[kept]))]  # per rule: ascending seq
    lines = event_lines_text(*(frame[c].to_numpy()[rows] for c in
                               ("rule", "key", "seq", "ts", "ts_null", "payload"))
                             ).splitlines()
    out: dict[str, list] = {}
    for code, s, line in zip(codes[rows].tolist(), seq[rows].tolist(), lines, strict=True):
        out.setdefault(str(rules[code]), []).append([int(s), _cut(line)])
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
