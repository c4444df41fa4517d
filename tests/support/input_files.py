"""An input read whole the way a run reads it, for the reader tests (``support.input_files``).

The input log lists the source and cuts it into segments (``cep.io.inputlog``), and
``cep.io.inputs.read_segment`` (the one reader of both runners) reads each segment; the
frames are joined in log order. Columns: ``offset``, each field followed by its null mask
where some segment has a null, then ``seq`` (the event's sequence number: for the first
file of a source, whose segment is ordinal 0, its offset).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from cep.engine.table import NULL_SUFFIX
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import InputLog
from cep.io.inputs import read_segment
from cep.io.readers.reader import MAX_RECORD_BYTES
from grammar import ir


def read_input(source: str | Path, fields: Sequence[tuple[str, str]] | ir.StreamDef,
               timestamp: str | None = None, dead: DeadLetter | None = None, *,
               max_record_bytes: int = MAX_RECORD_BYTES) -> pd.DataFrame:
    """The events of ``source`` (a file, directory or glob) as one typed frame.

    ``fields`` is the stream, or its schema as ``(name, type)`` pairs with ``timestamp``
    its TIMESTAMP field. Bad records go to ``dead``."""
    stream = (fields if isinstance(fields, ir.StreamDef)
              else ir.StreamDef("events", tuple(fields), timestamp))
    log = InputLog(None, {stream.name: str(source)}, follow=False)
    log.discover(first=True)
    dead = dead if dead is not None else DeadLetter(None)
    frames = [read_segment(segment, segment.start, segment.end, stream, dead,
                           max_record_bytes)[0]
              for segment in (log.segments[o] for o in sorted(log.segments))]
    return frames[0] if len(frames) == 1 else join_frames(frames, stream)


def join_frames(frames: list[pd.DataFrame], stream: ir.StreamDef) -> pd.DataFrame:
    """Frames of segments or ranges as one: a null mask absent from one is all False there."""
    columns = ["offset"]
    for name, _ in stream.fields:
        columns.append(name)
        if any(name + NULL_SUFFIX in f for f in frames):
            columns.append(name + NULL_SUFFIX)
    if any("seq" in f for f in frames):
        columns.append("seq")
    filled = [f.assign(**{c: np.zeros(len(f), dtype=bool) for c in columns if c not in f})
              for f in frames]
    return pd.concat([f[columns] for f in filled], ignore_index=True)
