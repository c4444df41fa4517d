"""The JSON-lines reader: one JSON object per line, read fast and exactly at once.

The range is read in ~8 MB chunks of whole lines (:mod:`cep.io.lines`). A chunk whose
lines all start with ``{`` goes to pyarrow's JSON reader with an explicit schema (int64,
float64, bool, string, structs for nested paths; a timestamp as string or float64, and a
key used both as an object and as a value, after peeking at the chunk's first line), and
the columns are validated with vectorised numpy/arrow code. If pyarrow refuses the chunk
(one bad line is enough), the chunk is split in halves and retried, down to blocks of at
most :data:`PER_LINE_MAX` lines that are parsed one by one with :mod:`json`, so a bad
line costs the speed of a few hundred lines, not of its file. pyarrow reports a missing
key and ``null`` alike, which is right as both are NULL. Rows whose winning path holds
an object where a value belongs are re-read with :mod:`json`, so the reason quotes the
object as written. Both paths hand their values to the same column converters
(:mod:`cep.io.readers.convert`), so a record gets the same value or the same verdict
whichever path read it (tested on randomly corrupted files).

Measured on the shared 2-core development machine: 1,000,000 lines of 6 fields (190 MB;
ISO timestamps, a 15-word text) load in 2.6-3.9 s (260k-380k lines/s), about two thirds
of it inside pyarrow's parser; the same events as CSV in 1.9 s, as Parquet in 1.3 s.
``bench/bench_readers.py`` measures the load rate of each format.

Limitations: ``.json`` means JSON *lines*, not one JSON array; a UTF-8 byte-order mark
makes the first line a dead letter; a JSON key holding a dot cannot be named in a FROM
path. Lines must be UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from cep.io import fieldpaths
from cep.io.lines import Oversized, range_chunks
from cep.io.readers.convert import Column, convert, placeholders, show
from cep.io.readers.reader import Reader, line_bounds, utf8_ok

PER_LINE_MAX = 256  # a failing block of at most this many lines is parsed line by line
FAST_MIN = 32  # smaller blocks go line by line at once (cheaper than a pyarrow call)


def _encodable(v: str) -> bool:
    """False for strings with lone surrogates (``"\\ud800"`` parses but is not Unicode)."""
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"



# JSON kinds each field type accepts, and the arrow type the values are packed in for the
# shared converters (the types the fast path asks pyarrow for).
_JSON_ACCEPTS = {
    "int": {"int": pa.int64(), "float": pa.float64()},
    "long": {"int": pa.int64(), "float": pa.float64()},
    "double": {"int": pa.float64(), "float": pa.float64()},
    "boolean": {"bool": pa.bool_()},
    "string": {"str": pa.string()},
    "timestamp": {"str": pa.string(), "int": pa.float64(), "float": pa.float64()},
}


class JsonLinesReader(Reader):
    """Reads byte ranges of JSON-lines files (see the module notes)."""

    def read_records(self, path: str, start: int, end: int, final: bool) -> None:
        with open(path, "rb") as fh:
            for offset, chunk in range_chunks(fh, start, end, self.max_record_bytes, final):
                if isinstance(chunk, Oversized):
                    self.reject_too_large(offset, chunk.size, chunk.head)
                else:
                    self.json_chunk(chunk, offset)

    def json_chunk(self, chunk: bytes, base: int) -> None:
        """Read one chunk of whole lines starting at file offset ``base``."""
        buf, starts, ends = line_bounds(chunk)
        offsets = base + starts

        def raw(i: int) -> bytes:
            return chunk[starts[i] : ends[i]]

        large = ends - starts > self.max_record_bytes
        # every line starts with "{": no blank or indented lines, no continuation lines
        if (not large.any() and (buf[starts] == ord("{")).all()
                and self.json_fast(chunk, offsets, raw)):
            return
        for i in np.flatnonzero(large).tolist():
            self.reject_too_large(offsets[i], int(ends[i] - starts[i]), raw(i))
        lines = [raw(i) for i in range(len(ends))]
        blank = np.array([not line.strip() for line in lines], dtype=bool)
        self.dead.skip(int((blank & ~large).sum()))
        keep = np.flatnonzero(~blank & ~large)
        self.json_bisect([lines[i] for i in keep.tolist()], offsets[keep])

    def json_bisect(self, lines: list[bytes], offsets: np.ndarray) -> None:
        """Parse non-blank lines fast where pyarrow can, halving around bad lines."""
        if (
            len(lines) >= FAST_MIN
            and all(line[:1] == b"{" for line in lines)
            and self.json_fast(b"\n".join(lines), offsets, lines.__getitem__)
        ):
            return
        if len(lines) <= PER_LINE_MAX:
            self.json_per_line(lines, offsets)
            return
        mid = len(lines) // 2
        self.json_bisect(lines[:mid], offsets[:mid])
        self.json_bisect(lines[mid:], offsets[mid:])

    def json_fast(self, data: bytes, offsets: np.ndarray, raw: Callable[[int], bytes]) -> bool:
        """Parse lines that all start with ``{`` with pyarrow; False to fall back.

        Succeeds only when pyarrow accepts the block and returns one row per line (a line
        holding two objects would otherwise shift every later row). Rows where a field's
        path holds an object are left to the line-by-line path, which names the value.
        """
        if not utf8_ok(data):
            return False
        try:
            first = json.loads(data[: data.find(b"\n")] if b"\n" in data else data)
        except ValueError:
            first = None
        try:
            table = pa_json.read_json(
                pa.BufferReader(data),
                read_options=pa_json.ReadOptions(block_size=1 << 22),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=fieldpaths.arrow_schema(self.paths, first),
                    unexpected_field_behavior="ignore",
                ),
            )
        except (pa.ArrowInvalid, UnicodeDecodeError):
            return False
        n = len(offsets)
        if table.num_rows != n:
            return False
        undecided = np.zeros(n, dtype=bool)
        cols = {}
        for f in self.paths:
            arrays = [fieldpaths.select(table, keys) for keys in f.paths]
            cols[f.name] = self.first_present(f, arrays, n, text_cells=False, objects=undecided)
        self.accept_columns(cols, offsets, raw, undecided)
        if undecided.any():
            idx = np.flatnonzero(undecided).tolist()
            self.json_per_line([raw(i) for i in idx], offsets[idx])
        return True

    def json_per_line(self, lines: list[bytes], offsets: np.ndarray) -> None:
        """The reference path: :func:`json.loads` per line, then the shared converters."""
        objs: list[dict[str, Any]] = []
        obj_offsets: list[int] = []
        obj_raw: list[bytes] = []
        for raw, offset in zip(lines, offsets.tolist(), strict=True):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                self.reject(offset, "invalid_utf8", f"invalid UTF-8 at byte {err.start}", raw)
                continue
            if not text.strip():
                self.dead.skip()
                continue
            try:
                obj = json.loads(text)
            except ValueError as err:
                self.reject(offset, "not_json", f"not JSON: {_json_error(err)}", raw)
                continue
            if not isinstance(obj, dict):
                self.reject(offset, "not_object", f"not a JSON object (got {_json_kind(obj)})", raw)
                continue
            objs.append(obj)
            obj_offsets.append(offset)
            obj_raw.append(raw)
        cols = {f.name: self.json_values(objs, f) for f in self.paths}
        self.accept_columns(cols, np.array(obj_offsets, dtype=np.int64), obj_raw.__getitem__)

    def json_values(self, objs: list[dict[str, Any]], f: fieldpaths.FieldPaths) -> Column:
        """One field of parsed JSON objects: the first of its paths with a value, JSON
        kinds checked here, values converted by the shared converters after packing them
        in the arrow types the fast path uses."""
        name, ftype = f.name, f.type
        n = len(objs)
        accepts = _JSON_ACCEPTS[ftype]
        col = Column(placeholders(ftype, n), np.zeros(n, bool))
        groups: dict[pa.DataType, tuple[list[int], list[Any]]] = {}
        problems: dict[str, tuple[list[int], list[str]]] = {}

        def problem(kind: str, i: int, reason: str) -> None:
            rows, reasons = problems.setdefault(kind, ([], []))
            rows.append(i)
            reasons.append(reason)

        for i, obj in enumerate(objs):
            v = next((v for keys in f.paths
                      if (v := fieldpaths.lookup(obj, keys)) is not None
                      and v is not fieldpaths.ABSENT), None)
            if v is None:
                col.null[i] = True
                continue
            target = accepts.get("bool" if isinstance(v, bool) else type(v).__name__)
            if target is None:
                got = f"{_json_kind(v)} {show(v)}"
                problem("wrong_type", i, f"field '{name}': expected {ftype}, got {got}")
                continue
            if isinstance(v, str) and not _encodable(v):
                problem("invalid_utf8", i, f"field '{name}': string with a lone surrogate")
                continue
            if isinstance(v, int) and not isinstance(v, bool):
                original = v
                try:
                    v = float(v) if target == pa.float64() else v
                except OverflowError:
                    v = None
                if v is None or (isinstance(v, int) and not -(2**63) <= v < 2**63):
                    shown = show(original)
                    problem("out_of_range", i, f"field '{name}': {shown} out of range for {ftype}")
                    continue
            rows, values = groups.setdefault(target, ([], []))
            rows.append(i)
            values.append(v)
        for kind, (rows, reasons) in problems.items():
            col.errors.append((np.array(rows), kind, reasons))
        for target, (rows, values) in groups.items():
            sub = convert(pa.array(values, type=target), ftype, name, False, f.format)
            idx = np.array(rows)
            col.values[idx] = sub.values
            for sub_idx, kind, reasons in sub.errors:
                col.errors.append((idx[sub_idx], kind, reasons))
        return col


def _json_error(err: ValueError) -> str:
    """The parser's complaint, placed in the record: ``json``'s own "line 1 column 115"
    counts lines of the one record it was given, which reads as the file's first line."""
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg} at character {err.pos + 1} of the record"
    return str(err)
