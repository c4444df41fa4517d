"""Reading one range of one input file into a typed frame: the entry to the readers.

``read_range(path, kind, start, end, stream, dead)`` reads the records of one byte range
of a JSON-lines or CSV file (see :mod:`cep.io.lines` for which lines a range holds) or
one row range of a Parquet file, so executors can read a big file as many
micro-batches; the input log (:mod:`cep.io.inputlog`) says which ranges a run reads and
:func:`cep.io.inputs.read_segment` calls this for both runners. Every input line is
accounted for: it is an event, a dead letter (with a reason and its byte offset, see
:mod:`cep.io.deadletter`) or a blank line counted in ``dead.skipped``; cutting a file
into ranges changes none of that.

One reader per format, each beside the typed conversion they share
(:mod:`cep.io.readers.convert`): :mod:`~cep.io.readers.jsonl`,
:mod:`~cep.io.readers.csv_lines`, :mod:`~cep.io.readers.parquet`; what they share in
accepting and rejecting records is :mod:`cep.io.readers.reader`.

Representation (what the engine expects; every column is numpy-backed)
    ``offset``      int64: the byte offset of the record's first byte in its file
                    (Parquet: its 0-based row index)
    int, long       int64 (``int`` values are checked to fit 32 bits)
    double          float64
    boolean         bool
    string          object, Python ``str`` (not pandas' string dtype)
    timestamp       int64 microseconds since the Unix epoch, UTC
    ``<f>__null``   bool, present only when field ``f`` has at least one null (JSON
                    ``null`` or a missing key, an empty unquoted CSV cell or a column the
                    header lacks, a Parquet null or missing column: missing is NULL, as
                    Spark, Flink and Esper read it); the value slot then holds a
                    placeholder: 0, 0.0, False, "" or 0. Each mask follows its field.
                    The TIMESTAMP field is never null (records where it is missing or
                    null are rejected, ``null_timestamp``).

Extra fields/columns are ignored. No compressed inputs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cep.engine.table import DTYPES, NULL_SUFFIX
from cep.io.deadletter import DeadLetter
from cep.io.readers.csv_lines import CsvReader
from cep.io.readers.jsonl import JsonLinesReader
from cep.io.readers.parquet import ParquetReader
from cep.io.readers.reader import MAX_RECORD_BYTES, Piece, Reader
from grammar import ir

READERS: dict[str, type[Reader]] = {
    "json": JsonLinesReader,
    "csv": CsvReader,
    "parquet": ParquetReader,
}


def read_range(path: str, fmt: str, start: int, end: int, stream: ir.StreamDef,
               dead: DeadLetter, *, max_record_bytes: int = MAX_RECORD_BYTES,
               final: bool = True, unread: frozenset[str] = frozenset()) -> pd.DataFrame:
    """Read, validate and type the records of one range of one file.

    JSON lines and CSV: ``[start, end)`` is a byte range, and the records are the lines
    whose first byte lies in it (see :mod:`cep.io.lines`: a line starting before ``end``
    is read to its end, a range starting mid-line begins at the next line), so any cut
    of a file into consecutive ranges reads each line once. ``final=False`` leaves out
    an unterminated last line (a writer may still be appending to it). The CSV header
    is the file's first line, read separately when ``start > 0``. Parquet: ``start``
    and ``end`` are row indices, and only the row groups holding them are read.

    The frame (see the module notes) starts with ``offset`` (int64): the byte offset of
    each record's first byte in the file, or its 0-based row index for Parquet; rows
    are in file order. Rejected records go to ``dead`` under the same offsets, identical
    whatever the cut; records over ``max_record_bytes`` among them. ``unread`` fields
    are checked as every other (a bad value rejects its record) but left out of the
    frame (see :class:`~cep.io.readers.reader.Reader`).
    """
    reader_class = READERS.get(fmt)
    if reader_class is None:
        raise ValueError(f"unknown input format {fmt!r}; use json, csv or parquet")
    reader = reader_class(stream, dead, max_record_bytes, unread)
    piece = reader.read(path, start, end, final)
    return _frame(piece, reader.out_fields)


def _frame(piece: Piece, fields: list[tuple[str, str]]) -> pd.DataFrame:
    """The typed DataFrame of ``piece``: ``offset``, then each field followed by its
    ``__null`` mask when it has a null."""
    columns = {"offset": pd.Series(piece.offsets, dtype=np.int64, copy=False)}
    for name, ftype in fields:
        dtype = DTYPES[ftype]
        values, nulls = piece.values[name].astype(dtype, copy=False), piece.nulls[name]
        columns[name] = pd.Series(values, dtype=dtype, copy=False)
        if nulls.any():
            columns[name + NULL_SUFFIX] = pd.Series(nulls, copy=False)
    return pd.DataFrame(columns, copy=False)
