"""Where complex events go: JSON lines, Parquet or the console.

Records are dicts in output order: ``rule``, ``key``, ``seq``, ``ts``, then the rule's
columns. JSON lines keep each rule's own columns; Parquet needs one table, so it gets the
union of all columns (NULL where a rule has no such column).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

FORMATS = ("jsonl", "parquet", "console")


def write_records(records: list[dict], path: str | None, fmt: str) -> None:
    """Write events; ``path`` None means standard output (JSON lines)."""
    if fmt == "console" or path is None:
        sys.stdout.write("".join(_line(r) for r in records))
        sys.stdout.flush()
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        frame = pd.DataFrame.from_records(records) if records else pd.DataFrame(
            columns=["rule", "key", "seq", "ts"])
        if "key" in frame and frame["key"].map(type).nunique() > 1:
            frame["key"] = frame["key"].map(json.dumps)  # mixed key types: keep them exact
        frame.to_parquet(target, index=False)
        return
    tmp = target.with_name("." + target.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(_line(record))
    tmp.replace(target)


def write_lines(lines: str, path: str | None) -> None:
    """Write events already formatted as JSON lines (``cep.engine.output.output_lines``)
    to ``path``, or to standard output when ``path`` is None; a file is written whole
    under a temporary name and renamed, as :func:`write_records` does."""
    if path is None:
        sys.stdout.write(lines)
        sys.stdout.flush()
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name("." + target.name + ".tmp")
    tmp.write_text(lines, encoding="utf-8")
    tmp.replace(target)


def _line(record: dict) -> str:
    """One event as the Spark runtime writes it: compact JSON, keys in record order."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_metrics(metrics: list[dict], path: str) -> None:
    """Per-batch metrics as JSON lines."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(m) + "\n" for m in metrics), encoding="utf-8")
