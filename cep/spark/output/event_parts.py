"""Complex events leave the engines as files, one part per (micro-batch, engine).

Each engine task writes its own events when it has computed them, so no event passes
through the driver on its way to a directory output. A part is named by batch and
engine and written to a temporary name, then renamed over any earlier attempt: a batch
that Spark runs again after a crash (same offsets, same state, so the same events)
rewrites the same part whole. Inside a part, lines are in the reference order
(``cep.engine.output.sort_output``); beside each part a small Arrow file (``.order``)
holds each line's place among the events of the same sequence number (``at``,
``origin``, the key's JSON text), which the lines themselves do not show, so that the
driver merges the engines' parts into the reference order (``delivery.merged_lines``):
timers of many keys fire at one input event, on whichever engines hold them.

Formats: ``jsonl`` (one JSON object per event: ``rule``, ``key``, ``seq``, ``ts``, then
the rule's columns) and ``parquet`` (the same records as a table whose columns are the
union of the rules' columns, typed as Arrow infers them from the JSON values; a column
that is NULL in every event of a part is typed ``null`` in that part).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from cep.engine.json_rows import event_lines_text

PART_FORMATS = ("jsonl", "parquet")


@dataclass(frozen=True)
class EventParts:
    """Where and how the engines write their events (pickled into the engine tasks)."""

    directory: str
    fmt: str = "jsonl"

    def path(self, batch: int, engine: int) -> Path:
        return Path(self.directory) / f"batch-{batch:07d}-engine-{engine:03d}.{self.fmt}"

    def batch_paths(self, batch: int) -> list[Path]:
        """The parts of one batch, in engine order."""
        return sorted(Path(self.directory).glob(f"batch-{batch:07d}-engine-*.{self.fmt}"))

    def write(self, batch: int, engine: int, lines: str, order: pa.Table | None = None
              ) -> None:
        """Write one engine's events of one batch (JSON lines text) as its part, and
        ``order`` (:func:`order_table`) beside it; an engine with no events in a batch
        writes nothing (a replay computes the same)."""
        if not lines:
            return
        path = self.path(batch, engine)
        path.parent.mkdir(parents=True, exist_ok=True)
        if order is not None:  # first: a part is only ever seen with its order
            tmp = path.with_name(f".{path.name}.order.{os.getpid()}.tmp")
            with ipc.new_file(str(tmp), order.schema) as writer:
                writer.write_table(order)
            os.replace(tmp, order_path(path))
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        if self.fmt == "jsonl":
            tmp.write_text(lines, encoding="utf-8")
        else:
            pq.write_table(records_table(lines), tmp)
        os.replace(tmp, path)


ORDER_SCHEMA = pa.schema([("at", pa.int64()), ("origin", pa.int64()), ("key", pa.string())])


def order_path(part: Path) -> Path:
    """Where a part's order file is."""
    return part.with_name(part.name + ".order")


def order_table(events: pd.DataFrame) -> pa.Table:
    """The order columns of an engine's events (the frame ``event_lines`` writes)."""
    return pa.table({"at": pa.array(events["at"].to_numpy(np.int64), pa.int64()),
                     "origin": pa.array(events["origin"].to_numpy(np.int64), pa.int64()),
                     "key": pa.array(events["key"].tolist(), pa.string())},
                    schema=ORDER_SCHEMA)


def read_order_table(part: Path, lines: int) -> pa.Table:
    """A part's order file (at, origin, key text per line), checked to fit it."""
    with ipc.open_file(str(order_path(part))) as reader:
        table = reader.read_all()
    if table.schema != ORDER_SCHEMA or table.num_rows != lines:
        raise ValueError(f"{order_path(part)} is not the order of {part.name}")
    return table


def order_columns(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An order table's (at, origin, key text) as arrays to sort by."""
    return (table.column("at").to_numpy(), table.column("origin").to_numpy(),
            np.asarray(table.column("key").to_pylist(), dtype=str))


def records_table(lines: str) -> pa.Table:
    """JSON-lines events as an Arrow table (the union of their fields)."""
    if not lines:
        return pa.table({"rule": pa.array([], pa.string()), "key": pa.array([], pa.string()),
                         "seq": pa.array([], pa.int64()), "ts": pa.array([], pa.string())})
    return pa_json.read_json(io.BytesIO(lines.encode("utf-8")),
                             read_options=pa_json.ReadOptions(block_size=1 << 24))


def event_lines(events: pd.DataFrame) -> str:
    """JSON lines by seq (events of one seq as they come: an engine's events are in the
    reference order already), as :func:`cep.engine.json_rows.event_lines_text` writes
    them (the key and the payload are JSON texts already)."""
    if events.empty:
        return ""
    rows = events.iloc[np.argsort(events["seq"].to_numpy(), kind="stable")]
    return event_lines_text(rows["rule"].to_numpy(dtype=object),
                            rows["key"].to_numpy(dtype=object), rows["seq"].to_numpy(),
                            rows["ts"].to_numpy(), rows["ts_null"].to_numpy(),
                            rows["payload"].to_numpy(dtype=object))
