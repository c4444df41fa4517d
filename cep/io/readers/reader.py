"""What every format reader shares: the stream's fields, rejecting a record with its
reason, accepting converted columns, and the accepted rows of a range (:class:`Piece`).

A record is identified everywhere by its offset in its file: the byte offset of its
line (JSON lines, CSV) or its 0-based row index (Parquet). Each format's reader
(:mod:`~cep.io.readers.jsonl`, :mod:`~cep.io.readers.csv_lines`,
:mod:`~cep.io.readers.parquet`) subclasses :class:`Reader` and implements
:meth:`Reader.read_records`; :func:`cep.io.readers.ranges.read_range` picks one.

Where a field is read from
    A field's own name, or the paths of its ``FROM`` clause (``user string FROM
    'user.screen_name', 'user'``): the first path with a value wins, a dot descends into
    a nested JSON object (see :mod:`cep.io.fieldpaths`). CSV reads each path's first key
    as a column name; Parquet follows struct columns like JSON objects. A record with
    several problems is reported for the first field in schema order.

Record size
    A record larger than ``max_record_bytes`` (default :data:`MAX_RECORD_BYTES`, 1 MiB)
    is a ``too_large`` dead letter: a JSON or CSV line by its bytes (without the newline),
    a Parquet row by the bytes of its string values. An over-long line is read past
    in chunks, never held whole (:mod:`cep.io.lines`), so one line of gigabytes costs no
    more memory than a chunk; real events are a few hundred bytes, and the bound keeps
    one huge text field from swelling every window that holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress

import numpy as np
import pyarrow as pa

from cep.engine.table import DTYPES
from cep.io import fieldpaths
from cep.io.deadletter import DeadLetter
from cep.io.lines import HEAD_BYTES
from cep.io.readers.convert import FIELD_TYPES, Column, convert, placeholders
from grammar import ir
from grammar.format_syntax import to_strptime

MAX_RECORD_BYTES = 1 << 20  # default bound on one record (see "Record size" above)


@dataclass
class Piece:
    """Accepted rows of one range: their offsets in the file and converted columns."""

    offsets: np.ndarray
    values: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray]


def _empty_piece(fields: list[tuple[str, str]]) -> Piece:
    return Piece(
        np.zeros(0, dtype=np.int64),
        {name: np.empty(0, dtype=DTYPES[ftype]) for name, ftype in fields},
        {name: np.zeros(0, dtype=bool) for name, _ in fields},
    )


def _concat(pieces: list[Piece], fields: list[tuple[str, str]]) -> Piece:
    if not pieces:
        return _empty_piece(fields)
    if len(pieces) == 1:
        return pieces[0]
    names = [name for name, _ in fields]
    return Piece(
        np.concatenate([p.offsets for p in pieces]),
        {n: np.concatenate([p.values[n] for p in pieces]) for n in names},
        {n: np.concatenate([p.nulls[n] for p in pieces]) for n in names},
    )


def utf8_ok(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def utf8_error(line: bytes) -> int | None:
    """Where a line stops being UTF-8 (None if it is UTF-8)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start
    return None


def line_bounds(chunk: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk as bytes, and where each of its lines starts and ends (before ``\\n``)."""
    buf = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(buf == ord("\n"))
    if not chunk.endswith(b"\n"):
        ends = np.append(ends, len(chunk))
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    return buf, starts, ends


def text_of(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


class Reader:
    """Reads byte (or row) ranges of files of one stream, sending rejects to the dead
    letter. A record is identified everywhere by its offset in its file."""

    def __init__(self, stream: ir.StreamDef, dead: DeadLetter,
                 max_record_bytes: int = MAX_RECORD_BYTES,
                 unread: frozenset[str] = frozenset()) -> None:
        """``unread``: fields that are checked (a bad value still rejects its record)
        but left out of the rows read, since no rule reads them: a string column is
        then never made into Python objects (``grammar.field_reads.reading_module``)."""
        if max_record_bytes < 1:
            raise ValueError(f"max_record_bytes must be positive, got {max_record_bytes}")
        self.max_record_bytes = max_record_bytes
        self.fields = [(name, ftype.lower()) for name, ftype in stream.fields]
        self.unread = unread
        self.out_fields = [(name, ftype) for name, ftype in self.fields if name not in unread]
        for name, ftype in self.fields:
            if ftype not in FIELD_TYPES:
                raise ValueError(f"field '{name}' has unknown type {ftype!r}")
        names = [name for name, _ in self.fields]
        if stream.timestamp is not None and stream.timestamp not in names:
            raise ValueError(f"TIMESTAMP field '{stream.timestamp}' is not in the schema")
        self.paths = fieldpaths.field_paths(stream)
        for f in self.paths:
            if f.format is not None and f.type != "timestamp":
                raise ValueError(f"field '{f.name}': FORMAT is for timestamp fields")
            if f.format is not None:
                to_strptime(f.format)  # ValueError naming what is wrong
        self.timestamp = stream.timestamp
        self.dead = dead
        self.pieces: list[Piece] = []
        self.source = ""

    # -------------------------------------------------------------- shared plumbing

    def reject(self, offset: int, kind: str, reason: str, record: bytes | str) -> None:
        text = text_of(record) if isinstance(record, bytes) else record
        self.dead.add(self.source, int(offset), kind, reason, text)

    def reject_too_large(self, offset: int, size: int, record: bytes | str) -> None:
        """Dead-letter a record over ``max_record_bytes`` (``record`` may be its head)."""
        reason = f"record of {size} bytes is over the limit of {self.max_record_bytes} bytes"
        self.reject(offset, "too_large", reason, record[:HEAD_BYTES])

    def accept_columns(
        self,
        cols: dict[str, Column],
        offsets: np.ndarray,
        raw: Callable[[int], bytes | str],
        undecided: np.ndarray | None = None,
    ) -> None:
        """Emit rows without errors; reject the others for their first field's error.

        ``undecided`` rows are left to the caller (JSON rows re-read line by line, Parquet
        rows already rejected as too large).
        """
        n = len(offsets)
        first = np.full(n, len(self.fields))  # index of the first failing field per row
        why: dict[int, tuple[str, str]] = {}
        for fi, (name, _) in enumerate(self.fields):
            col = cols[name]
            if name == self.timestamp:
                nulls = np.flatnonzero(col.null)
                reason = f"field '{name}': the TIMESTAMP field is missing or null"
                col.errors.append((nulls, "null_timestamp", [reason] * len(nulls)))
            for idx, kind, reasons in col.errors:
                for i, r in zip(idx.tolist(), reasons, strict=True):
                    if first[i] > fi:
                        first[i] = fi
                        why[i] = (kind, r)
        bad = first < len(self.fields)
        if undecided is not None:
            bad &= ~undecided
        for i in np.flatnonzero(bad).tolist():
            self.reject(offsets[i], *why[i], raw(i))
        keep = ~bad if undecided is None else ~bad & ~undecided
        self.pieces.append(
            Piece(
                offsets[keep],
                {name: cols[name].values[keep] for name, _ in self.out_fields},
                {name: cols[name].null[keep] for name, _ in self.out_fields},
            )
        )

    def first_present(self, f: fieldpaths.FieldPaths, arrays: list[pa.Array | None], n: int,
                      text_cells: bool, objects: np.ndarray | None = None) -> Column:
        """Field ``f`` from the arrays of its paths (None: a path the data lacks): in each
        row, the first path with a value gives the value or the error; none gives NULL.
        ``objects``: rows whose winning path holds a struct are marked there instead."""
        if len(arrays) == 1 and arrays[0] is not None and not (
                objects is not None and pa.types.is_struct(arrays[0].type)):
            return convert(arrays[0], f.type, f.name, text_cells, f.format,
                           values=f.name not in self.unread)  # one path: its column
        out = Column(placeholders(f.type, n), np.ones(n, bool))
        for arr in arrays:
            if arr is None:
                continue
            if objects is not None and pa.types.is_struct(arr.type):
                here = out.null & arr.is_valid().to_numpy(zero_copy_only=False)
                objects |= here
                out.null &= ~here
                continue
            col = convert(arr, f.type, f.name, text_cells, f.format,
                          values=f.name not in self.unread)
            take = out.null & ~col.null
            out.values[take] = col.values[take]
            for idx, kind, reasons in col.errors:
                keep = take[idx]
                if keep.any():
                    out.errors.append((idx[keep], kind, list(compress(reasons, keep))))
            out.null &= ~take
        return out

    def columns_in(self, names: list[str]) -> list[str]:
        """The columns of a CSV header or Parquet file that some field's paths start at."""
        wanted = dict.fromkeys(c for f in self.paths for c in f.columns)
        return [c for c in wanted if c in names]

    # -------------------------------------------------------------- one range

    def read(self, path: str, start: int, end: int, final: bool) -> Piece:
        """The accepted rows of one range of one file, in file order."""
        self.source, self.pieces = path, []
        self.read_records(path, start, end, final)
        piece = _concat([p for p in self.pieces if len(p.offsets)], self.out_fields)
        if (np.diff(piece.offsets) < 0).any():  # rows re-read line by line come back late
            order = np.argsort(piece.offsets, kind="stable")
            piece = Piece(
                piece.offsets[order],
                {n: v[order] for n, v in piece.values.items()},
                {n: v[order] for n, v in piece.nulls.items()},
            )
        return piece

    def read_records(self, path: str, start: int, end: int, final: bool) -> None:
        """Accept or reject every record of the range (each format's reader)."""
        raise NotImplementedError
