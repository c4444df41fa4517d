"""Driver-side delivery of a micro-batch's files: exactly-once appends and merged order.

The engines write their events as parts (``event_parts.py``); a single output file, standard
output or a Python callback gets each batch's parts merged into the reference order
(sequence number, then rule), batch after batch. Only one batch's events are in the
driver's memory at a time.

Exactly once across a crash: :class:`AppendLedger` records, before appending batch b to
a file, the file's size without it. A batch that Spark runs again (killed after the
append, before its commit) finds its own entry and truncates the file back to that size
before appending again, so the file never holds a batch twice, nor half of one.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from cep.spark.output.event_parts import EventParts, order_columns, read_order_table

_ORDER_SCHEMA = pa.schema([("rule", pa.string()), ("seq", pa.int64())])


class AppendLedger:
    """Appends per-batch chunks to ``target`` exactly once (see the module docstring).

    The ledger is one small JSON file, ``{"batch": b, "size": s}``, rewritten atomically
    per batch. A ledger that does not exist yet means a new run: the target starts empty
    (it replaces what an earlier run left there)."""

    def __init__(self, target: Path, ledger: Path) -> None:
        self.target = target
        self.ledger = ledger
        if not ledger.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb"):
                pass
            self._record(-1, 0)

    def _record(self, batch: int, size: int) -> None:
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.ledger.with_name(f".{self.ledger.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"batch": batch, "size": size}))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.ledger)

    def append(self, batch: int, chunks: Iterable[bytes]) -> None:
        state = json.loads(self.ledger.read_text(encoding="utf-8"))
        if state["batch"] == batch:  # a replay: drop what the first attempt appended
            size = state["size"]
            with open(self.target, "r+b") as fh:
                fh.truncate(size)
        elif state["batch"] < batch:
            size = self.target.stat().st_size if self.target.exists() else 0
            self._record(batch, size)
        else:
            raise RuntimeError(f"{self.target}: batch {batch} arrives after batch "
                               f"{state['batch']} was appended")
        with open(self.target, "ab") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())


@dataclass(frozen=True)
class MergedBatch:
    """A batch's events as one text in the reference order and, when asked for, each
    line's key as the JSON text the engine wrote (``keys[i]`` is line ``i``'s)."""

    text: bytes
    keys: pa.Array | None = None


def merged_lines(parts: list[Path], rule_order: dict[str, int]) -> bytes:
    """The JSON lines of several parts (each in reference order) as one text in the
    reference order: :func:`merge_parts`'s text."""
    return merge_parts(parts, rule_order).text


def merge_parts(parts: list[Path], rule_order: dict[str, int],
                with_keys: bool = False) -> MergedBatch:
    """The JSON lines of several parts (each in reference order) as one text in the
    reference order (``cep.engine.output.sort_output``): by ``seq``, then the time
    passed, the event that made it, the rule's place in the rule file and the key, the
    last three read from each part's order file (``event_parts.read_order_table``).
    ``with_keys``: also each line's key text, from the same order files, so that a Kafka
    record's key need not be cut out of its line again (keying 25,000 lines of 1,000
    distinct keys took 13.8 ms by a regular-expression pass over the text, 2.7 ms from
    these texts)."""
    texts = [(p, t) for p in parts if (t := p.read_bytes())]
    if len(texts) <= 1:
        text = texts[0][1] if texts else b""
        keys = None
        if with_keys:
            keys = (read_order_table(texts[0][0], text.count(b"\n")).column("key")
                    .combine_chunks() if texts else pa.array([], pa.string()))
        return MergedBatch(text, keys)
    blob = b"".join(t for _, t in texts)
    raw = np.frombuffer(blob, dtype=np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    table = pa_json.read_json(io.BytesIO(blob), parse_options=pa_json.ParseOptions(
        explicit_schema=_ORDER_SCHEMA, unexpected_field_behavior="ignore"))
    names = pa.array(list(rule_order), pa.string())
    rank = pc.index_in(table.column("rule"), value_set=names).fill_null(-1).to_numpy()
    tables = [read_order_table(p, t.count(b"\n")) for p, t in texts]
    places = [order_columns(t) for t in tables]
    at, origin, key = (np.concatenate([place[i] for place in places]) for i in range(3))
    order = np.lexsort((key, rank, origin, at, table.column("seq").to_numpy()))
    # the lines as one Arrow binary array over the text (no copy), reordered by take:
    # memory about twice the batch's text, where a gather by byte index took nine times
    offsets = np.concatenate([[0], ends + 1]).astype(np.int64)
    lines = pa.Array.from_buffers(pa.large_binary(), len(ends),
                                  [None, pa.py_buffer(offsets), pa.py_buffer(blob)])
    taken = pa.array(order)
    ordered = pc.take(lines, taken)
    _, offsets_buffer, data = ordered.buffers()
    bounds = np.frombuffer(offsets_buffer, dtype=np.int64)[
        ordered.offset:ordered.offset + len(ordered) + 1]
    keys = None
    if with_keys:
        keys = pc.take(pa.concat_arrays([t.column("key").combine_chunks() for t in tables]),
                       taken)
    return MergedBatch(memoryview(data)[int(bounds[0]):int(bounds[-1])].tobytes(), keys)


def read_output(parts: EventParts, rule_order: dict[str, int]) -> list[dict]:
    """Every event of a JSON-lines parts directory, batch by batch, each batch in the
    reference order (for tests, ``cep verify`` and the Python API's bounded runs)."""
    batches = sorted({int(p.name.split("-")[1]) for p in
                      Path(parts.directory).glob(f"batch-*-engine-*.{parts.fmt}")})
    records = []
    for batch in batches:
        text = merged_lines(parts.batch_paths(batch), rule_order)
        records.extend(json.loads(line) for line in text.decode("utf-8").splitlines())
    return records
