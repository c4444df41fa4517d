"""Reading input events (JSON lines, CSV, Parquet) into typed frames, bad records aside.

``read_range(path, fmt, start, end, stream, dead)`` reads the records of one byte range
of one file (Parquet: one row range; see :mod:`cep.io.lines` for which lines a range
holds), so executors can read a big file as many micro-batches; ``read_events(paths,
stream, None, dead_letter)`` reads whole files with the same code. Every input line is
accounted for: it is an event, a dead letter (with a reason and its byte offset, see
:mod:`cep.io.deadletter`) or a blank line counted in ``dead_letter.skipped``; cutting a
file into ranges changes none of that.

Representation (what the engine expects; every column is numpy-backed)
    ``offset``      int64: the byte offset of the record's first byte in its file
                    (Parquet: its 0-based row index). ``read_events`` adds, before it,
                    ``seq`` (0..n-1, the accepted records in file order, then offset
                    order) and ``file_index`` (the file's place in the expanded paths).
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

Where a field is read from
    A field's own name, or the paths of its ``FROM`` clause (``user string FROM
    'user.screen_name', 'user'``): the first path with a value wins, a dot descends into
    a nested JSON object (see :mod:`cep.io.fieldpaths`). CSV reads each path's first key
    as a column name; Parquet follows struct columns like JSON objects.

Accepted values (anything else is a dead letter naming the field and the value)
    int/long    JSON integers, or numbers with an integral value (``3.0``); CSV
                ``[+-]digits[.0…]``; in range (int: 32-bit, long: 64-bit)
    double      JSON numbers (also the ``NaN``/``Infinity`` extension both JSON parsers
                accept); CSV decimal/scientific notation
    boolean     JSON ``true``/``false``; CSV ``true``/``false``/``1``/``0`` (any case)
    string      JSON strings; any CSV cell (``""`` quoted is the empty string)
    timestamp   ISO-8601 strings as Arrow parses them: ``YYYY-MM-DD[(T| )hh[:mm[:ss
                [.ffffff]]]][Z|±hh[:mm]]`` (naive = UTC; surrounding whitespace ignored;
                digits past microseconds truncated; lower-case ``z`` is not a zone),
                numbers = epoch *milliseconds* (Esper's convention; a numeric string
                counts as a number), converted as ``rint(ms * 1000.0)``, or Twitter's
                ``created_at`` (``Wed Oct 10 20:19:24 +0000 2018``); Parquet
                timestamp/date columns as they are (naive = UTC). A field's ``FORMAT``
                narrows this to epoch seconds/milliseconds/microseconds, ISO-8601 or a
                Java/strptime pattern (see :mod:`cep.io.timeformat`).
    Extra fields/columns are ignored. Lines must be UTF-8.

How JSON lines are read, and why it is fast and exact at the same time
    The range is read in ~8 MB chunks of whole lines. A chunk whose lines all start with
    ``{`` goes to pyarrow's JSON reader with an explicit schema (int64, float64, bool,
    string, structs for nested paths; a timestamp as string or float64, and a key used
    both as an object and as a value, after peeking at the chunk's first line),
    and the columns are validated with vectorised numpy/arrow code. If pyarrow refuses
    the chunk (one bad line is enough), the chunk is split in halves and retried, down
    to blocks of at most 256 lines that are parsed one by one with :mod:`json`, so a bad
    line costs the speed of a few hundred lines, not of its file. pyarrow reports a
    missing key and ``null`` alike, which is right as both are NULL. Rows whose winning
    path holds an object where a value belongs are re-read with :mod:`json`, so the
    reason quotes the object as written. Both paths hand their
    values to the same column converters, so a record gets the same value or the same
    verdict whichever path read it (tested on randomly corrupted files). A record with
    several problems is reported for the first field in schema order.
    Measured on the shared 2-core development machine: 1,000,000 lines of 6 fields
    (190 MB; ISO timestamps, a 15-word text) load in 2.6-3.9 s (260k-380k lines/s), about
    two thirds of it inside pyarrow's parser; the same events as CSV in 1.9 s, as Parquet
    in 1.3 s. ``tests/io/test_sources.py::test_load_rate`` prints the rate for 100k lines,
    ``test_load_rate_1m`` (``-m slow``) for a million.

Record size
    A record larger than ``max_record_bytes`` (default :data:`MAX_RECORD_BYTES`, 1 MiB)
    is a ``too_large`` dead letter: a JSON or CSV line by its bytes (without the newline),
    a Parquet row by the bytes of its string values. An over-long JSON line is read past
    in chunks, never held whole, so one line of gigabytes costs no more memory than a
    chunk; real events are a few hundred bytes, and the bound keeps one huge text field
    from swelling every window that holds it.

CSV is read in the same chunks of lines and goes through pyarrow's CSV reader (all
columns as strings, then the same converters); the header is the file's first line,
read on its own by a range that starts later. A CSV record is one line: a range reader
cannot tell where a quoted value spanning lines begins, so a line with an odd number of
``"`` (one that opens or closes such a value, or holds a stray quote) is a ``bad_row``
dead letter, and the lines between an opening and a closing one are read as rows of
their own (usually ``bad_row`` for their number of cells). Chunks whose rows pyarrow
does not map one to one onto lines are re-read line by line with :mod:`csv`.
Parquet is typed already; values are still checked (an int field stored as int64 must
fit 32 bits, a double column feeding an int field must hold integers). It is read in
batches of :data:`PARQUET_BATCH_ROWS` rows from the row groups that hold the range.

Limitations: no compressed inputs; ``.json`` means JSON *lines*, not one JSON array; a
UTF-8 byte-order mark makes the first line a dead letter; in the CSV line-by-line path
a quoted empty string ``""`` reads as null like an empty cell; a JSON key holding a dot
cannot be named in a FROM path.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from cep.engine.table import DTYPES
from cep.io import fieldpaths, timeformat
from cep.io.deadletter import DeadLetter
from cep.io.lines import HEAD_BYTES, TAIL_BYTES, Oversized, range_chunks
from cep.io.timeformat import EPOCH_SCALE
from cep.lang import ir

FIELD_TYPES = ("int", "long", "double", "boolean", "string", "timestamp")
NULL_SUFFIX = "__null"
PER_LINE_MAX = 256  # a failing block of at most this many lines is parsed line by line
FAST_MIN = 32  # smaller blocks go line by line at once (cheaper than a pyarrow call)
SHOW_LIMIT = 80  # offending values are quoted in reasons up to this many characters
MAX_RECORD_BYTES = 1 << 20  # default bound on one record (see "Record size" above)
PARQUET_BATCH_ROWS = 1 << 16  # Parquet rows are converted in batches of this many
_WHOLE = 2**63 - 1  # the end of a range that reads a file to its end

_FORMATS = {
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_FMT_ALIASES = {
    "json": "json",
    "jsonl": "json",
    "ndjson": "json",
    "csv": "csv",
    "parquet": "parquet",
}
_PLACEHOLDER: dict[str, Any] = {
    "int": 0,
    "long": 0,
    "timestamp": 0,
    "double": 0.0,
    "boolean": False,
    "string": "",
}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_TWO63 = 2.0**63
_INT_RE = r"^[+-]?[0-9]+(\.0*)?$"
_FLOAT_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_TRUE, _FALSE = ("true", "1"), ("false", "0")
_TS_NAIVE, _TS_UTC = pa.timestamp("us"), pa.timestamp("us", tz="UTC")
_SUBMICRO = r"(\.[0-9]{6})[0-9]+"  # fraction digits past microseconds (cut)
_ISO_PREFIX = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TWITTER = re.compile(timeformat.TWITTER_RE)
ISO_LEAF = 64  # failing ISO groups are halved down to this size, then tried one by one

Schema = Sequence[tuple[str, str]]


# ---------------------------------------------------------------- column conversion


def _show(value: Any) -> str:
    """A value as it would appear in the input, cut to :data:`SHOW_LIMIT` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHOW_LIMIT else text[: SHOW_LIMIT - 3] + "..."


def _kind(t: pa.DataType) -> str:
    """The JSON-ish name of an arrow type, for "got <kind>" in reasons."""
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return "number"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    return str(t)


@dataclass
class _Column:
    """A converted column: values (placeholders where null or bad), nulls, and errors.

    ``errors`` holds ``(row indices, kind, reasons)`` groups; a row appears at most once.
    """

    values: np.ndarray
    null: np.ndarray
    errors: list[tuple[np.ndarray, str, list[str]]] = field(default_factory=list)

    def fail(self, mask: np.ndarray, kind: str, reason: Callable[[Any], str], raw: pa.Array):
        """Mark the rows of ``mask`` bad with ``reason(value)``, ``raw`` giving the values."""
        idx = np.flatnonzero(mask)
        if len(idx):
            values = raw.take(pa.array(idx)).to_pylist()
            self.errors.append((idx, kind, [reason(v) for v in values]))


def _strings(arr: pa.Array) -> pa.Array:
    """Dictionary/large/view string columns as plain ``string``."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.string())
    return arr


def _regex_mask(arr: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(arr, pattern).fill_null(False).to_numpy(zero_copy_only=False)


def _convert(arr: pa.Array, ftype: str, name: str, text_cells: bool,
             fmt: str | None = None) -> _Column:
    """Convert one arrow column to the engine representation of ``ftype``.

    ``text_cells``: strings are cells of a text format (CSV) to be parsed as the field's
    type; otherwise (JSON, Parquet) a string is only a string or a timestamp. ``fmt``:
    a timestamp's declared format.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = _strings(arr)
    n = len(arr)
    null = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else np.zeros(n, bool)
    col = _Column(np.full(n, _PLACEHOLDER[ftype], dtype=DTYPES[ftype]), null)
    t = arr.type
    is_text = pa.types.is_string(t) and text_cells
    if ftype in ("int", "long"):
        _to_int(arr, col, name, ftype, is_text)
    elif ftype == "double":
        _to_double(arr, col, name, is_text)
    elif ftype == "boolean":
        _to_bool(arr, col, name, is_text)
    elif ftype == "string" and pa.types.is_string(t):
        col.values = arr.fill_null("").to_numpy(zero_copy_only=False).astype(object, copy=False)
    elif ftype == "timestamp":
        _to_timestamp(arr, col, name, fmt)
    else:
        _wrong_type(arr, col, name, ftype)
    return col


def _wrong_type(arr: pa.Array, col: _Column, name: str, ftype: str) -> None:
    kind = _kind(arr.type)
    col.fail(
        ~col.null,
        "wrong_type",
        lambda v: f"field '{name}': expected {ftype}, got {kind} {_show(v)}",
        arr,
    )


def _to_int(arr: pa.Array, col: _Column, name: str, ftype: str, is_text: bool) -> None:
    t, ok = arr.type, ~col.null
    if pa.types.is_integer(t):
        if t == pa.uint64():
            big = pc.greater(arr, 2**63 - 1).fill_null(False).to_numpy(zero_copy_only=False)
            col.fail(
                big, "out_of_range", lambda v: f"field '{name}': {v} out of range for {ftype}", arr
            )
            ok &= ~big
        values = arr.fill_null(0).to_numpy().astype(np.int64)  # big uint64s wrap; rejected
    elif pa.types.is_floating(t):
        f = arr.cast(pa.float64()).fill_null(0.0).to_numpy()
        with np.errstate(invalid="ignore"):
            integral = np.isfinite(f) & (np.floor(f) == f)
        frac = ok & ~integral
        col.fail(
            frac,
            "wrong_type",
            lambda v: f"field '{name}': expected {ftype}, got non-integral number {_show(v)}",
            arr,
        )
        big = ok & integral & ((f < -_TWO63) | (f >= _TWO63))
        col.fail(
            big,
            "out_of_range",
            lambda v: f"field '{name}': {_show(v)} out of range for {ftype}",
            arr,
        )
        ok &= integral & ~big
        values = np.where(ok, f, 0.0).astype(np.int64)
    elif is_text:
        s = pc.utf8_trim_whitespace(arr)
        match = _regex_mask(s, _INT_RE)
        col.fail(
            ok & ~match,
            "wrong_type",
            lambda v: f"field '{name}': expected {ftype}, got {_show(v)}",
            arr,
        )
        ok &= match
        digits = pc.replace_substring_regex(s.filter(pa.array(ok)), r"^\+|\.0*$", "")
        values = np.zeros(len(arr), dtype=np.int64)
        try:
            values[ok] = pc.cast(digits, pa.int64()).to_numpy()
        except pa.ArrowInvalid:  # beyond int64: find which, in Python (rare)
            ints = [int(d) for d in digits.to_pylist()]
            fits = np.array([-(2**63) <= i < 2**63 for i in ints], dtype=bool)
            big = np.zeros(len(arr), dtype=bool)
            big[np.flatnonzero(ok)[~fits]] = True
            col.fail(
                big,
                "out_of_range",
                lambda v: f"field '{name}': {_show(v)} out of range for {ftype}",
                arr,
            )
            values[ok] = [i if f else 0 for i, f in zip(ints, fits, strict=True)]
            ok &= ~big
    else:
        _wrong_type(arr, col, name, ftype)
        return
    if ftype == "int":
        wide = ok & ((values < _INT32_MIN) | (values > _INT32_MAX))
        col.fail(
            wide,
            "out_of_range",
            lambda v: f"field '{name}': {_show(v)} out of range for int (32-bit)",
            arr,
        )
        ok &= ~wide
    col.values = np.where(ok, values, 0)


def _to_double(arr: pa.Array, col: _Column, name: str, is_text: bool) -> None:
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        col.values = arr.cast(pa.float64()).fill_null(0.0).to_numpy()
    elif is_text:
        s = pc.utf8_trim_whitespace(arr)
        match = _regex_mask(s, _FLOAT_RE)
        col.fail(
            ~col.null & ~match,
            "wrong_type",
            lambda v: f"field '{name}': expected double, got {_show(v)}",
            arr,
        )
        col.values[match] = pc.cast(s.filter(pa.array(match)), pa.float64()).to_numpy()
    else:
        _wrong_type(arr, col, name, "double")


def _to_bool(arr: pa.Array, col: _Column, name: str, is_text: bool) -> None:
    if pa.types.is_boolean(arr.type):
        col.values = arr.fill_null(False).to_numpy(zero_copy_only=False)
    elif is_text:
        s = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
        true = pc.is_in(s, pa.array(_TRUE)).fill_null(False).to_numpy(zero_copy_only=False)
        false = pc.is_in(s, pa.array(_FALSE)).fill_null(False).to_numpy(zero_copy_only=False)
        col.fail(
            ~col.null & ~true & ~false,
            "wrong_type",
            lambda v: f"field '{name}': expected boolean (true/false/1/0), got {_show(v)}",
            arr,
        )
        col.values = true
    else:
        _wrong_type(arr, col, name, "boolean")


def _epoch_to_us(v: np.ndarray, unit: str, ok: np.ndarray, col: _Column, name: str,
                 raw: pa.Array) -> None:
    """Epoch numbers in ``unit`` (float64) → µs for rows ``ok``; non-finite/overflow → bad."""
    with np.errstate(invalid="ignore", over="ignore"):
        us = np.rint(v * float(EPOCH_SCALE[unit]))
        finite = np.isfinite(us)
        fits = finite & (us >= -_TWO63) & (us < _TWO63)
    col.fail(
        ok & ~finite,
        "bad_timestamp",
        lambda x: f"field '{name}': timestamp must be finite, got {_show(x)}",
        raw,
    )
    col.fail(
        ok & finite & ~fits,
        "out_of_range",
        lambda x: f"field '{name}': timestamp {_show(x)} {unit[6:]} out of range",
        raw,
    )
    keep = ok & fits
    col.values[keep] = us[keep].astype(np.int64)


def _iso_cast(s: pa.Array, zoned: bool = False) -> np.ndarray | None:
    """µs of ISO-8601 strings if arrow parses all of them (all naive or all zoned).

    ``zoned``: try the zoned parse first (a failing cast is ~50x slower than a good one).
    """
    for ts_type in (_TS_UTC, _TS_NAIVE) if zoned else (_TS_NAIVE, _TS_UTC):
        try:
            return pc.cast(s, ts_type).cast(pa.int64()).fill_null(0).to_numpy()
        except pa.ArrowInvalid:
            continue
    return None


def _parse_iso(s: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """ISO-8601 strings (no nulls) → (µs since epoch UTC, parsed?), one string at a time
    in effect: the value of a string is ``arrow_cast(normalise(s))`` whatever else is in
    the batch, where ``normalise`` strips whitespace and cuts digits past microseconds
    (the identity on every string arrow accepts, so trying the raw strings first is
    only a shortcut). Groups that fail are halved until the bad strings are isolated."""
    us = np.zeros(len(s), dtype=np.int64)
    good = np.zeros(len(s), dtype=bool)
    s = pc.replace_substring_regex(pc.utf8_trim_whitespace(s), _SUBMICRO, r"\1")
    _iso_rows(s, np.arange(len(s)), us, good)
    return us, good


def _iso_rows(s: pa.Array, idx: np.ndarray, us: np.ndarray, good: np.ndarray) -> None:
    values = _iso_cast(s)
    if values is not None:
        us[idx], good[idx] = values, True
        return
    if len(s) > ISO_LEAF:
        mid = len(s) // 2
        _iso_rows(s.slice(0, mid), idx[:mid], us, good)
        _iso_rows(s.slice(mid), idx[mid:], us, good)
        return
    for i, text in zip(idx.tolist(), s.to_pylist(), strict=True):
        # arrow accepts nothing that does not start YYYY-MM-DD: skip garbage cheaply
        if _ISO_PREFIX.match(text) and (v := _iso_cast(pa.array([text]))) is not None:
            us[i], good[i] = v[0], True


def _to_timestamp(arr: pa.Array, col: _Column, name: str, fmt: str | None) -> None:
    """Timestamps as declared by ``fmt`` (see :mod:`cep.io.timeformat`; None: ISO-8601
    strings, epoch-millisecond numbers or Twitter's ``created_at``)."""
    t, ok = arr.type, ~col.null
    unit = fmt if fmt in EPOCH_SCALE else "epoch_ms" if fmt is None else None
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        tz = t.tz if pa.types.is_timestamp(t) else None
        us = arr.cast(pa.timestamp("us", tz=tz), safe=False).cast(pa.int64())
        col.values = us.fill_null(0).to_numpy()
    elif (pa.types.is_integer(t) or pa.types.is_floating(t)) and unit is None:
        col.fail(ok, "bad_timestamp",
                 lambda v: f"field '{name}': expected a timestamp string in format "
                           f"'{fmt}', got number {_show(v)}", arr)
    elif pa.types.is_integer(t):
        v = arr.cast(pa.int64()).fill_null(0).to_numpy()
        big = ok & (np.abs(v) > (2**63 - 1) // EPOCH_SCALE[unit])
        col.fail(
            big,
            "out_of_range",
            lambda x: f"field '{name}': timestamp {_show(x)} {unit[6:]} out of range",
            arr,
        )
        col.values = np.where(ok & ~big, v, 0) * EPOCH_SCALE[unit]
    elif pa.types.is_floating(t):
        _epoch_to_us(arr.cast(pa.float64()).fill_null(0.0).to_numpy(), unit, ok, col, name, arr)
    elif pa.types.is_string(t):
        _string_timestamps(arr, col, name, fmt, unit)
    else:
        _wrong_type(arr, col, name, "timestamp")


def _string_timestamps(arr: pa.Array, col: _Column, name: str, fmt: str | None,
                       unit: str | None) -> None:
    idx = np.flatnonzero(~col.null)
    twitter_first = fmt is None and len(idx) and _TWITTER.match(arr[int(idx[0])].as_py())
    if fmt in (None, "iso") and not twitter_first:
        # fast path: a column of one shape (all naive, or all ending in Z) casts at once
        pending = []
        z = pc.ends_with(arr, "Z").fill_null(False).to_numpy(zero_copy_only=False)
        for group, zoned in ((~col.null & z, True), (~col.null & ~z, False)):
            rows = np.flatnonzero(group)
            values = _iso_cast(arr.take(rows), zoned) if len(rows) else None
            if values is not None:
                col.values[rows] = values
            elif len(rows):
                pending.append(rows)
        idx = np.sort(np.concatenate(pending)) if pending else idx[:0]
    if not len(idx):
        return
    sub = arr.take(idx)
    trimmed = pc.utf8_trim_whitespace(sub)
    numeric = _regex_mask(trimmed, _FLOAT_RE) if unit else np.zeros(len(idx), dtype=bool)
    if numeric.any():  # epoch numbers written as strings
        v = np.zeros(len(arr))
        v[idx[numeric]] = pc.cast(trimmed.filter(pa.array(numeric)), pa.float64()).to_numpy()
        rows = np.zeros(len(arr), dtype=bool)
        rows[idx[numeric]] = True
        _epoch_to_us(v, unit, rows, col, name, arr)
    rest = idx[~numeric]
    if not len(rest) or fmt in EPOCH_SCALE:
        good = np.zeros(len(rest), dtype=bool)
    else:
        strings = sub.filter(pa.array(~numeric))
        if fmt is None:  # ISO-8601, or Twitter's created_at (told apart by its shape)
            us, good = np.zeros(len(rest), dtype=np.int64), np.zeros(len(rest), dtype=bool)
            twitter = _regex_mask(strings, timeformat.TWITTER_RE)
            for mask, parse in ((twitter, lambda s: timeformat.parse(s, timeformat.TWITTER)),
                                (~twitter, _parse_iso)):
                if mask.any():
                    us[mask], good[mask] = parse(strings.filter(pa.array(mask)))
        elif fmt == "iso":
            us, good = _parse_iso(strings)
        else:
            us, good = timeformat.parse(strings, timeformat.to_strptime(fmt))
        col.values[rest] = np.where(good, us, 0)
    bad = np.zeros(len(arr), dtype=bool)
    bad[rest[~good]] = True
    expected = "" if fmt is None else f" (format '{fmt}')"
    col.fail(bad, "bad_timestamp",
             lambda v: f"field '{name}': unparseable timestamp {_show(v)}{expected}", arr)


# ---------------------------------------------------------------- pieces of output


@dataclass
class _Piece:
    """Accepted rows of one range: their offsets in the file and converted columns."""

    offsets: np.ndarray
    values: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray]


def _empty_piece(fields: list[tuple[str, str]]) -> _Piece:
    return _Piece(
        np.zeros(0, dtype=np.int64),
        {name: np.empty(0, dtype=DTYPES[ftype]) for name, ftype in fields},
        {name: np.zeros(0, dtype=bool) for name, _ in fields},
    )


def _concat(pieces: list[_Piece], fields: list[tuple[str, str]]) -> _Piece:
    if not pieces:
        return _empty_piece(fields)
    if len(pieces) == 1:
        return pieces[0]
    names = [name for name, _ in fields]
    return _Piece(
        np.concatenate([p.offsets for p in pieces]),
        {n: np.concatenate([p.values[n] for p in pieces]) for n in names},
        {n: np.concatenate([p.nulls[n] for p in pieces]) for n in names},
    )


def _utf8_ok(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_error(line: bytes) -> int | None:
    """Where a line stops being UTF-8 (None if it is UTF-8)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start
    return None


def _line_bounds(chunk: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk as bytes, and where each of its lines starts and ends (before ``\\n``)."""
    buf = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(buf == ord("\n"))
    if not chunk.endswith(b"\n"):
        ends = np.append(ends, len(chunk))
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    return buf, starts, ends


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


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


def _csv_header(fh: IO[bytes], limit: int) -> list[str]:
    """The column names on a CSV file's first line ([] if that line is over ``limit``)."""
    fh.seek(0)
    head = b""
    while len(head) <= limit and (block := fh.read(TAIL_BYTES)):
        head += block
        if b"\n" in block:
            break
    line = head.split(b"\n", 1)[0]
    if len(line) > limit:
        return []
    return next(csv.reader([_text(line)]), [])


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


class _Reader:
    """Reads byte (or row) ranges of files of one stream, sending rejects to the dead
    letter. A record is identified everywhere by its offset in its file."""

    def __init__(self, stream: ir.StreamDef, dead: DeadLetter,
                 max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        if max_record_bytes < 1:
            raise ValueError(f"max_record_bytes must be positive, got {max_record_bytes}")
        self.max_record_bytes = max_record_bytes
        self.fields = [(name, ftype.lower()) for name, ftype in stream.fields]
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
                timeformat.to_strptime(f.format)  # ValueError naming what is wrong
        self.timestamp = stream.timestamp
        self.dead = dead
        self.pieces: list[_Piece] = []
        self.source = ""

    # -------------------------------------------------------------- shared plumbing

    def reject(self, offset: int, kind: str, reason: str, record: bytes | str) -> None:
        text = _text(record) if isinstance(record, bytes) else record
        self.dead.add(self.source, int(offset), kind, reason, text)

    def reject_too_large(self, offset: int, size: int, record: bytes | str) -> None:
        """Dead-letter a record over ``max_record_bytes`` (``record`` may be its head)."""
        reason = f"record of {size} bytes is over the limit of {self.max_record_bytes} bytes"
        self.reject(offset, "too_large", reason, record[:HEAD_BYTES])

    def accept_columns(
        self,
        cols: dict[str, _Column],
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
            _Piece(
                offsets[keep],
                {name: cols[name].values[keep] for name, _ in self.fields},
                {name: cols[name].null[keep] for name, _ in self.fields},
            )
        )

    # -------------------------------------------------------------- JSON lines

    def read_json(self, path: str, start: int, end: int, final: bool) -> None:
        with open(path, "rb") as fh:
            for offset, chunk in range_chunks(fh, start, end, self.max_record_bytes, final):
                if isinstance(chunk, Oversized):
                    self.reject_too_large(offset, chunk.size, chunk.head)
                else:
                    self.json_chunk(chunk, offset)

    def json_chunk(self, chunk: bytes, base: int) -> None:
        """Read one chunk of whole lines starting at file offset ``base``."""
        buf, starts, ends = _line_bounds(chunk)
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
        if not _utf8_ok(data):
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

    def first_present(self, f: fieldpaths.FieldPaths, arrays: list[pa.Array | None], n: int,
                      text_cells: bool, objects: np.ndarray | None = None) -> _Column:
        """Field ``f`` from the arrays of its paths (None: a path the data lacks): in each
        row, the first path with a value gives the value or the error; none gives NULL.
        ``objects``: rows whose winning path holds a struct are marked there instead."""
        out = _Column(np.full(n, _PLACEHOLDER[f.type], dtype=DTYPES[f.type]), np.ones(n, bool))
        for arr in arrays:
            if arr is None:
                continue
            if objects is not None and pa.types.is_struct(arr.type):
                here = out.null & arr.is_valid().to_numpy(zero_copy_only=False)
                objects |= here
                out.null &= ~here
                continue
            col = _convert(arr, f.type, f.name, text_cells, f.format)
            if len(arrays) == 1:
                return col
            take = out.null & ~col.null
            out.values[take] = col.values[take]
            for idx, kind, reasons in col.errors:
                keep = take[idx]
                if keep.any():
                    out.errors.append((idx[keep], kind, list(compress(reasons, keep))))
            out.null &= ~take
        return out

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
                self.reject(offset, "not_json", f"not JSON: {err}", raw)
                continue
            if not isinstance(obj, dict):
                self.reject(offset, "not_object", f"not a JSON object (got {_json_kind(obj)})", raw)
                continue
            objs.append(obj)
            obj_offsets.append(offset)
            obj_raw.append(raw)
        cols = {f.name: self.json_values(objs, f) for f in self.paths}
        self.accept_columns(cols, np.array(obj_offsets, dtype=np.int64), obj_raw.__getitem__)

    def json_values(self, objs: list[dict[str, Any]], f: fieldpaths.FieldPaths) -> _Column:
        """One field of parsed JSON objects: the first of its paths with a value, JSON
        kinds checked here, values converted by the shared converters after packing them
        in the arrow types the fast path uses."""
        name, ftype = f.name, f.type
        n = len(objs)
        accepts = _JSON_ACCEPTS[ftype]
        col = _Column(np.full(n, _PLACEHOLDER[ftype], dtype=DTYPES[ftype]), np.zeros(n, bool))
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
                got = f"{_json_kind(v)} {_show(v)}"
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
                    shown = _show(original)
                    problem("out_of_range", i, f"field '{name}': {shown} out of range for {ftype}")
                    continue
            rows, values = groups.setdefault(target, ([], []))
            rows.append(i)
            values.append(v)
        for kind, (rows, reasons) in problems.items():
            col.errors.append((np.array(rows), kind, reasons))
        for target, (rows, values) in groups.items():
            sub = _convert(pa.array(values, type=target), ftype, name, False, f.format)
            idx = np.array(rows)
            col.values[idx] = sub.values
            for sub_idx, kind, reasons in sub.errors:
                col.errors.append((idx[sub_idx], kind, reasons))
        return col

    # -------------------------------------------------------------- CSV

    def read_csv(self, path: str, start: int, end: int, final: bool) -> None:
        with open(path, "rb") as fh:
            header = _csv_header(fh, self.max_record_bytes)
            for offset, chunk in range_chunks(fh, start, end, self.max_record_bytes, final):
                if isinstance(chunk, Oversized):
                    self.reject_too_large(offset, chunk.size, chunk.head)
                else:
                    self.csv_chunk(chunk, offset, header)

    def csv_chunk(self, chunk: bytes, base: int, header: list[str]) -> None:
        """Read one chunk of whole lines starting at file offset ``base``: lines too large,
        not UTF-8 or with an odd number of quotes are rejected, blank ones counted, the
        header line (offset 0) passed over, the rest parsed by pyarrow as one table."""
        buf, starts, ends = _line_bounds(chunk)
        offsets = base + starts
        lengths = ends - starts
        cr_only = (lengths == 1) & (buf[np.minimum(starts, len(buf) - 1)] == ord("\r"))
        blank = (lengths == 0) | cr_only
        quotes = np.concatenate([[0], np.cumsum(buf == ord('"'))])
        spans = (quotes[ends] - quotes[starts]) % 2 == 1  # opens or closes a multi-line value
        large = lengths > self.max_record_bytes
        header_line = offsets == 0
        utf8 = _utf8_ok(chunk)
        rejected = large | spans | (not utf8)  # not UTF-8: decided per line below
        for i in np.flatnonzero(rejected & ~header_line).tolist():
            line = chunk[starts[i] : ends[i]]
            if large[i]:
                self.reject_too_large(offsets[i], int(lengths[i]), line)
            elif not utf8 and (bad_at := _utf8_error(line)) is not None:
                self.reject(offsets[i], "invalid_utf8", f"invalid UTF-8 at byte {bad_at}", line)
            elif spans[i]:
                self.reject(offsets[i], "bad_row", "an odd number of quote characters: a quoted "
                            "value spanning lines (not supported; a CSV record must be one "
                            "line) or a stray quote", line)
            else:
                rejected[i] = False
        self.dead.skip(int((blank & ~rejected & ~header_line).sum()))
        rows = np.flatnonzero(~rejected & ~blank & ~header_line)
        if not len(rows):
            return
        lines = [chunk[starts[i] : ends[i]] for i in rows.tolist()]
        data = chunk if len(rows) == len(starts) else b"\n".join(lines) + b"\n"
        self.csv_table(data, lines, offsets[rows], header)

    def csv_table(self, data: bytes, lines: list[bytes], offsets: np.ndarray,
                  header: list[str]) -> None:
        """Parse lines that are each one record with pyarrow (one row per line, else the
        lines go one by one through :mod:`csv`); rows with the wrong number of cells are
        rejected."""
        present = self.columns_in(header)
        invalid: list[tuple[int, str]] = []  # (1-based row number, text)

        def on_invalid(row: Any) -> str:
            invalid.append((row.number, row.text))
            return "skip"

        try:
            table = pa_csv.read_csv(
                io.BytesIO(data),
                read_options=pa_csv.ReadOptions(
                    use_threads=False, block_size=1 << 24, column_names=header
                ),
                parse_options=pa_csv.ParseOptions(invalid_row_handler=on_invalid),
                convert_options=pa_csv.ConvertOptions(
                    column_types={name: pa.string() for name in present},
                    include_columns=present,
                    strings_can_be_null=True,
                    null_values=[""],
                    quoted_strings_can_be_null=False,
                ),
            )
        except pa.ArrowInvalid:
            table = None
        if table is None or table.num_rows + len(invalid) != len(lines):
            self.csv_per_line(lines, offsets, header)
            return
        good = np.ones(len(lines), dtype=bool)
        for number, text in invalid:
            good[number - 1] = False
            self.csv_bad_row(offsets[number - 1], text, header)
        kept = np.flatnonzero(good)
        self.csv_accept(
            {name: table.column(name) for name in present},
            offsets[kept],
            lambda r: lines[kept[r]],
        )

    def csv_bad_row(self, offset: int, text: str, header: list[str]) -> None:
        """A row with the wrong number of cells: rejected, or skipped if only whitespace."""
        if not text.strip():
            self.dead.skip()
            return
        n_cols = len(next(csv.reader([text]), []))
        self.reject(offset, "bad_row", f"expected {len(header)} columns, got {n_cols}", text)

    def csv_per_line(self, lines: list[bytes], offsets: np.ndarray, header: list[str]) -> None:
        """Lines pyarrow did not map one to one onto rows, each parsed alone by :mod:`csv`."""
        present = self.columns_in(header)
        where = {name: header.index(name) for name in present}
        values: dict[str, list[str | None]] = {name: [] for name in present}
        kept: list[int] = []
        for i, (line, offset) in enumerate(zip(lines, offsets.tolist(), strict=True)):
            text = _text(line)
            try:
                record = next(csv.reader([text], strict=True), [])
            except csv.Error as err:
                self.reject(offset, "bad_row", f"not a CSV row: {err}", line)
                continue
            if len(record) != len(header):
                self.csv_bad_row(offset, text, header)
                continue
            for name in present:
                cell = record[where[name]]
                values[name].append(cell if cell != "" else None)
            kept.append(i)
        self.csv_accept(
            {name: pa.array(values[name], type=pa.string()) for name in present},
            offsets[np.array(kept, dtype=np.int64)],
            lambda r: lines[kept[r]],
        )

    def csv_accept(
        self,
        columns: dict[str, pa.Array],
        offsets: np.ndarray,
        raw: Callable[[int], bytes | str],
    ) -> None:
        n = len(offsets)
        cols = {
            f.name: self.first_present(f, [columns.get(c) for c in f.columns], n, text_cells=True)
            for f in self.paths
        }
        self.accept_columns(cols, offsets, raw)

    def columns_in(self, names: list[str]) -> list[str]:
        """The columns of a CSV header or Parquet file that some field's paths start at."""
        wanted = dict.fromkeys(c for f in self.paths for c in f.columns)
        return [c for c in wanted if c in names]

    # -------------------------------------------------------------- Parquet

    def read_parquet(self, path: str, start: int, end: int) -> None:
        """Rows ``[start, end)``, reading only the row groups that hold them, in batches."""
        pf = pq.ParquetFile(path)
        present = self.columns_in(pf.schema_arrow.names)
        meta = pf.metadata
        sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        firsts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        groups = [g for g in range(len(sizes)) if firsts[g] < end and firsts[g + 1] > start]
        if not groups:
            return
        row = int(firsts[groups[0]])
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=groups,
                                     columns=present, use_threads=False):
            lo, hi = max(start - row, 0), min(end - row, batch.num_rows)
            if lo < hi:
                self.parquet_rows(pa.Table.from_batches([batch]).slice(lo, hi - lo), row + lo)
            row += batch.num_rows

    def parquet_rows(self, table: pa.Table, first_row: int) -> None:
        offsets = np.arange(first_row, first_row + table.num_rows, dtype=np.int64)

        def raw(i: int) -> str:
            return json.dumps(table.slice(i, 1).to_pylist()[0], default=str)

        sizes = np.zeros(table.num_rows, dtype=np.int64)
        for name in table.column_names:
            column = _strings(table.column(name).combine_chunks())
            if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
                sizes += pc.binary_length(column).fill_null(0).to_numpy(zero_copy_only=False)
        large = sizes > self.max_record_bytes
        for i in np.flatnonzero(large).tolist():
            self.reject_too_large(offsets[i], int(sizes[i]), raw(i))
        n = table.num_rows
        cols = {
            f.name: self.first_present(f, [fieldpaths.select(table, k) for k in f.paths], n,
                                       text_cells=False)
            for f in self.paths
        }
        self.accept_columns(cols, offsets, raw, undecided=large)

    # -------------------------------------------------------------- one range

    def read(self, path: str, fmt: str, start: int, end: int, final: bool) -> _Piece:
        """The accepted rows of one range of one file, in file order."""
        self.source, self.pieces = path, []
        if fmt == "parquet":
            self.read_parquet(path, start, end)
        elif fmt == "csv":
            self.read_csv(path, start, end, final)
        elif fmt == "json":
            self.read_json(path, start, end, final)
        else:
            raise ValueError(f"unknown input format {fmt!r}; use json, csv or parquet")
        piece = _concat([p for p in self.pieces if len(p.offsets)], self.fields)
        if (np.diff(piece.offsets) < 0).any():  # rows re-read line by line come back late
            order = np.argsort(piece.offsets, kind="stable")
            piece = _Piece(
                piece.offsets[order],
                {n: v[order] for n, v in piece.values.items()},
                {n: v[order] for n, v in piece.nulls.items()},
            )
        return piece


def _frame(piece: _Piece, fields: list[tuple[str, str]],
           leading: dict[str, np.ndarray]) -> pd.DataFrame:
    """The typed DataFrame of ``piece``: the ``leading`` int64 columns, then each field
    followed by its ``__null`` mask when it has a null."""
    columns: dict[str, pd.Series] = {
        name: pd.Series(values, dtype=np.int64, copy=False) for name, values in leading.items()
    }
    for name, ftype in fields:
        dtype = DTYPES[ftype]
        values, nulls = piece.values[name].astype(dtype, copy=False), piece.nulls[name]
        columns[name] = pd.Series(values, dtype=dtype, copy=False)
        if nulls.any():
            columns[name + NULL_SUFFIX] = pd.Series(nulls, copy=False)
    return pd.DataFrame(columns, copy=False)




# ---------------------------------------------------------------- public API


def expand_paths(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """Input files for ``paths``: files as given, directories' files, glob matches.

    Each entry expands in sorted name order; a directory contributes its regular files
    except hidden ones and ones starting with ``_`` (``_SUCCESS``, Spark's markers).
    Raises FileNotFoundError for an entry that names nothing.
    """
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    out: list[str] = []
    for item in items:
        p = os.fspath(item)
        if os.path.isdir(p):
            found = sorted(
                os.path.join(p, f)
                for f in os.listdir(p)
                if not f.startswith((".", "_")) and os.path.isfile(os.path.join(p, f))
            )
        elif any(c in p for c in "*?["):
            found = sorted(f for f in glob.glob(p) if os.path.isfile(f))
        elif os.path.isfile(p):
            found = [p]
        else:
            raise FileNotFoundError(f"input not found: {p}")
        if not found:
            raise FileNotFoundError(f"no input files in {p}")
        out.extend(f for f in found if f not in out)
    return out


def file_format(path: str, fmt: str | None = None) -> str:
    """``json``, ``csv`` or ``parquet`` from ``fmt`` or else the file's extension."""
    if fmt is not None:
        try:
            return _FMT_ALIASES[fmt.lower()]
        except KeyError:
            raise ValueError(f"unknown input format {fmt!r}; use json, csv or parquet") from None
    ext = os.path.splitext(path)[1].lower()
    if ext not in _FORMATS:
        raise ValueError(f"cannot tell the format of {path} from its extension; pass fmt")
    return _FORMATS[ext]


def read_range(path: str, fmt: str, start: int, end: int, stream: ir.StreamDef,
               dead: DeadLetter, *, max_record_bytes: int = MAX_RECORD_BYTES,
               final: bool = True) -> pd.DataFrame:
    """Read, validate and type the records of one range of one file.

    JSON lines and CSV: ``[start, end)`` is a byte range, and the records are the lines
    whose first byte lies in it (see :mod:`cep.io.lines`: a line starting before ``end``
    is read to its end, a range starting mid-line begins at the next line), so any cut
    of a file into consecutive ranges reads each line once. ``final=False`` leaves out
    an unterminated last line (a writer may still be appending to it). The CSV header
    is the file's first line, read separately when ``start > 0``. Parquet: ``start``
    and ``end`` are row indices, and only the row groups holding them are read.

    The frame is typed as :func:`read_events`' (see the module docstring) but starts
    with ``offset`` (int64): the byte offset of each record's first byte in the file, or
    its 0-based row index for Parquet; rows are in file order. Rejected records go to
    ``dead`` under the same offsets, identical whatever the cut.
    """
    reader = _Reader(stream, dead, max_record_bytes)
    piece = reader.read(path, fmt, start, end, final)
    return _frame(piece, reader.fields, {"offset": piece.offsets})


def read_events(
    paths: str | Sequence[str],
    fields: Schema | ir.StreamDef,
    timestamp: str | None,
    dead_letter: DeadLetter,
    fmt: str | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> pd.DataFrame:
    """Read, validate and type the events in ``paths`` (see the module docstring).

    ``fields`` is the stream (or its schema as ``(name, type)`` pairs, with
    ``timestamp`` its TIMESTAMP field, never null). Every file is read whole by
    :func:`read_range`'s code. The frame starts with ``seq`` (0..n-1 over all files),
    ``file_index`` (the file's place in :func:`expand_paths` order) and ``offset``. Bad
    records go to ``dead_letter``, records over ``max_record_bytes`` among them.
    """
    if isinstance(fields, ir.StreamDef):
        if timestamp not in (None, fields.timestamp):
            raise ValueError(f"timestamp {timestamp!r} differs from the stream's "
                             f"TIMESTAMP {fields.timestamp!r}")
        stream = fields
    else:
        stream = ir.StreamDef("events", tuple(fields), timestamp)
    reader = _Reader(stream, dead_letter, max_record_bytes)
    pieces, files = [], []
    for index, path in enumerate(expand_paths(paths)):
        piece = reader.read(path, file_format(path, fmt), 0, _WHOLE, final=True)
        pieces.append(piece)
        files.append(np.full(len(piece.offsets), index, dtype=np.int64))
    whole = _concat(pieces, reader.fields)
    n = len(whole.offsets)
    file_index = np.concatenate(files) if files else np.zeros(0, dtype=np.int64)
    return _frame(whole, reader.fields, {
        "seq": np.arange(n, dtype=np.int64), "file_index": file_index, "offset": whole.offsets,
    })


def write_events_jsonl(df: pd.DataFrame, path: str, timestamp_fields: Sequence[str] = ()) -> None:
    """Write ``df`` as JSON lines, e.g. sample inputs for tests.

    Datetime columns, and the int64-µs columns named in ``timestamp_fields`` (as
    :func:`read_events` returns them), are written as ISO-8601 UTC strings
    (``2024-05-01T12:00:00.000000Z``); ``<f>__null`` masks become JSON nulls in ``f``
    and are not written themselves; NaN/NaT/None are written as null.
    """
    names = [c for c in df.columns if not str(c).endswith(NULL_SUFFIX)]
    columns: dict[str, list[Any]] = {}
    for name in names:
        s = df[name]
        if pd.api.types.is_datetime64_any_dtype(s.dtype) or name in timestamp_fields:
            if pd.api.types.is_datetime64_any_dtype(s.dtype):
                if getattr(s.dtype, "tz", None) is not None:
                    s = s.dt.tz_convert("UTC").dt.tz_localize(None)
                us = s.to_numpy(dtype="datetime64[us]")
            else:
                us = s.to_numpy(dtype=np.int64).astype("datetime64[us]")
            text = np.datetime_as_string(us, unit="us")
            values = [None if t == "NaT" else t + "Z" for t in text.tolist()]
        else:
            values = [_plain(v) for v in s.tolist()]
        mask_name = f"{name}{NULL_SUFFIX}"
        if mask_name in df.columns:
            mask = df[mask_name].to_numpy(dtype=bool)
            values = [None if m else v for v, m in zip(values, mask.tolist(), strict=True)]
        columns[name] = values
    with open(path, "w", encoding="utf-8") as fh:
        for row in zip(*(columns[n] for n in names), strict=True):
            fh.write(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False))
            fh.write("\n")


def _plain(v: Any) -> Any:
    """A cell as a JSON-able Python value (NaN and missing → None)."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
