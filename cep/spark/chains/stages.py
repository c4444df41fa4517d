"""INSERT INTO chains on Spark: stage s of micro-batch B+1 reads what stage s-1 made in B.

One query runs every stage: each stage has N engines of its own
(``splitter.engine_labels.stage_labels``), all grouped by the one stateful operator. In
micro-batch B, engine e of stage s (s < last) writes the rows of its inserting rules, the
*chain rows* (``rule``, ``seq`` and the row's JSON ``values``: what
``cep.engine.insert_into.complex_events`` decodes), as one Arrow IPC file
``chain/batch-B/stage-(s+1)/engine-e.arrow``. The source plans batch B+1 only after B
committed, so those files are final then: one task of batch B+1 per later stage reads
them all, decodes the complex events, runs the stage's stateless rules and routes the
rows to the stage's engines by key grouping on the stage's key, exactly as stage 0's
tasks do with input records.

Why it equals the reference, which runs every stage within one batch: per key, a stage
sees its events in (seq, __sub) order either way, because batch B's chain rows all have
seqs below batch B+1's. Stage s therefore processes, in micro-batch B, the events whose
input records were read in micro-batch B-s (their *origin* batch); its output part is
named by that origin batch, so a batch's parts hold exactly the reference's events for
its records, and the driver delivers origin batch b once the last stage has run it, in
micro-batch b + stages - 1 (one micro-batch of latency per extra stage).

Replays: a replayed batch (same offsets, same state) writes the same files under the same
names (temporary name, then rename), and chain files of batch B are deleted only when
batch B+1, their only reader, has committed. The files are data only (Arrow), never
pickles: they rest on disk across restarts.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from cep.engine.clock import Watermark
from cep.engine.insert_into import complex_events
from cep.engine.table import Table, concat, take
from cep.spark.chains.check import ChainError
from grammar import ir

# a chain row: what insert_into decodes, with its place in the reference order (``at``,
# ``origin``, and the key as JSON text: ``cep.engine.output.sort_output``)
_SCHEMA = pa.schema([("rule", pa.string()), ("seq", pa.int64()), ("values", pa.string()),
                     ("at", pa.int64()), ("origin", pa.int64()), ("key", pa.string())])


def split_rows(module: ir.CompiledModule, rows: Table) -> tuple[Table, Table]:
    """An engine's output rows as (chain rows for the next stage, rows that are output)."""
    if not rows or not len(rows["seq"]):
        return {}, rows
    inserting = np.isin(rows["rule"], np.array(list(module.inserting_rules()), dtype=object))
    return take(rows, inserting), take(rows, ~inserting)


@dataclass(frozen=True)
class ChainParts:
    """Where engines leave chain rows for the next stage (pickled into the tasks)."""

    directory: str

    def _folder(self, batch: int, stage: int) -> Path:
        return Path(self.directory) / f"batch-{batch:07d}" / f"stage-{stage}"

    def write(self, batch: int, stage: int, engine: int, rows: Table) -> None:
        """Engine ``engine``'s chain rows of micro-batch ``batch`` for ``stage`` (none:
        no file, which a replay computes the same)."""
        if not rows or not len(rows["seq"]):
            return
        path = self._folder(batch, stage) / f"engine-{engine:03d}.arrow"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = {**rows, "key": np.array([json.dumps(k) for k in rows["key"].tolist()],
                                        dtype=object)}
        table = pa.table({name: pa.array(rows[name], field.type)
                          for name, field in zip(_SCHEMA.names, _SCHEMA, strict=True)},
                         schema=_SCHEMA)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with ipc.new_file(str(tmp), _SCHEMA) as writer:
            writer.write_table(table)
        os.replace(tmp, path)

    def read(self, batch: int, stage: int) -> Table:
        """Every engine's chain rows of ``batch`` for ``stage``, in engine order."""
        folder = self._folder(batch, stage)
        paths = sorted(folder.glob("engine-*.arrow")) if folder.is_dir() else []
        tables = []
        for path in paths:
            with ipc.open_file(str(path)) as reader:
                table = reader.read_all()
            if table.schema != _SCHEMA:
                raise ChainError(f"{path} is not a chain part of this cep")
            columns = {name: table.column(name).combine_chunks().to_numpy(
                zero_copy_only=False) for name in _SCHEMA.names}
            keys = np.empty(len(columns["key"]), dtype=object)
            keys[:] = [json.loads(k) for k in columns["key"].tolist()]
            tables.append({**columns, "key": keys})
        return concat(tables)

    def write_watermark(self, batch: int, stage: int, watermark: Watermark) -> None:
        """The watermark through micro-batch ``batch``'s input, for ``stage``, which
        processes that input's complex events in the next micro-batch (every engine of
        the stage before computes the same one: each writes it, the last rename wins)."""
        path = self._folder(batch, stage) / "watermark.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(watermark.plain()), encoding="utf-8")
        os.replace(tmp, path)

    def watermark(self, batch: int, stage: int) -> dict | None:
        """What :meth:`write_watermark` left for ``stage`` in ``batch - 1`` (plain
        values; None in the first batch)."""
        if not batch:
            return None
        path = self._folder(batch - 1, stage) / "watermark.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ChainError(f"{path}: the watermark of the stage before is missing or "
                             f"unreadable ({err})") from err

    def events(self, module: ir.CompiledModule, batch: int, stage: int) -> dict[str, Table]:
        """The complex events ``stage`` consumes in micro-batch ``batch`` (what the stage
        before it made in ``batch - 1``), per stream."""
        return complex_events(module, self.read(batch - 1, stage)) if batch else {}

    def drop_through(self, batch: int) -> None:
        """Delete the chain rows of micro-batches up to ``batch`` (their readers have
        committed)."""
        root = Path(self.directory)
        if not root.is_dir():
            return
        for folder in root.glob("batch-*"):
            if int(folder.name.split("-")[1]) <= batch:
                shutil.rmtree(folder, ignore_errors=True)


def drained(offsets_file: Path, lag: int) -> bool:
    """Whether the batch logged in Spark's ``offsets_file`` ends with the later stages
    drained: its source offset (the file's last line) counts ``lag`` batches that read
    no input, so no chain rows or undelivered events are left."""
    last = offsets_file.read_text(encoding="utf-8").strip().splitlines()[-1]
    return json.loads(last).get("idle", 0) >= lag
