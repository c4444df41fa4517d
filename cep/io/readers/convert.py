"""Typed conversion of one arrow column to the engine's representation, with a
dead-letter reason for every value that does not fit its field.

Every format reader hands its columns here (JSON values packed in the arrow types the
fast path asks pyarrow for, CSV cells as strings, Parquet columns as stored), so a value
gets the same verdict whichever reader or path read it.

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

A null (or a missing value) leaves a placeholder in the value slot (:data:`PLACEHOLDER`)
and is marked in the column's null mask; the readers decide what a null means.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.engine.table import DTYPES, repeated
from cep.io import timeformat
from grammar.format_syntax import EPOCH_SCALE, to_strptime

FIELD_TYPES = ("int", "long", "double", "boolean", "string", "timestamp")
SHOW_LIMIT = 80  # offending values are quoted in reasons up to this many characters
PLACEHOLDER: dict[str, Any] = {
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


def show(value: Any) -> str:
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
class Column:
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


def placeholders(ftype: str, n: int) -> np.ndarray:
    """``n`` placeholders of ``ftype``: a string column's are one shared ``""``, since
    ``np.full`` makes an object array through a ``str`` per element (a third of the
    reader's time in ``np.full`` on the flights, for columns whose values replace
    them)."""
    if ftype == "string":
        return repeated(PLACEHOLDER[ftype], n)
    return np.full(n, PLACEHOLDER[ftype], dtype=DTYPES[ftype])


def plain_strings(arr: pa.Array) -> pa.Array:
    """Dictionary/large/view string columns as plain ``string``."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.string())
    return arr


# A string column is checked for repeats on this many of its first values
REPEAT_SAMPLE = 16_384


def string_objects(arr: pa.Array) -> np.ndarray:
    """A string column as an object array of ``str``, equal strings one shared object
    where the column repeats its values (at most half of its first values distinct).

    Every gather of a string column costs a reference per row and a cache line per
    distinct object touched: shared objects make the engines' gathers of the flights'
    tail numbers ~5x cheaper (3 string columns, 410k rows: 4 ms against 20 ms per
    gather), take a pointer per row instead of a ``str`` each (~55 bytes), and cost
    less to make (9 ms against 24 ms a column: one hash pass and the distinct values
    decoded). A column of distinct texts (tweets) keeps one object per value: there the
    hash pass would cost 2.9x the plain conversion and share nothing."""
    sample = arr.slice(0, REPEAT_SAMPLE)
    if len(arr) and pc.count_distinct(sample).as_py() * 2 <= len(sample):
        coded = arr.dictionary_encode()
        distinct = coded.dictionary.to_numpy(zero_copy_only=False).astype(object, copy=False)
        return distinct[coded.indices.to_numpy()]
    return arr.to_numpy(zero_copy_only=False).astype(object, copy=False)


def _regex_mask(arr: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(arr, pattern).fill_null(False).to_numpy(zero_copy_only=False)


def convert(arr: pa.Array, ftype: str, name: str, text_cells: bool,
            fmt: str | None = None, values: bool = True) -> Column:
    """Convert one arrow column to the engine representation of ``ftype``.

    ``text_cells``: strings are cells of a text format (CSV) to be parsed as the field's
    type; otherwise (JSON, Parquet) a string is only a string or a timestamp. ``fmt``:
    a timestamp's declared format. ``values=False``: a string column's verdicts and
    nulls without its values (placeholders), for a field no rule reads.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = plain_strings(arr)
    n = len(arr)
    null = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else np.zeros(n, bool)
    col = Column(placeholders(ftype, n), null)
    t = arr.type
    is_text = pa.types.is_string(t) and text_cells
    if ftype in ("int", "long"):
        _to_int(arr, col, name, ftype, is_text)
    elif ftype == "double":
        _to_double(arr, col, name, is_text)
    elif ftype == "boolean":
        _to_bool(arr, col, name, is_text)
    elif ftype == "string" and pa.types.is_string(t):
        if values:  # else the placeholders stay: a field no rule reads
            col.values = string_objects(arr.fill_null(""))
    elif ftype == "timestamp":
        _to_timestamp(arr, col, name, fmt)
    else:
        _wrong_type(arr, col, name, ftype)
    return col


def _wrong_type(arr: pa.Array, col: Column, name: str, ftype: str) -> None:
    kind = _kind(arr.type)
    col.fail(
        ~col.null,
        "wrong_type",
        lambda v: f"field '{name}': expected {ftype}, got {kind} {show(v)}",
        arr,
    )


def _to_int(arr: pa.Array, col: Column, name: str, ftype: str, is_text: bool) -> None:
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
            lambda v: f"field '{name}': expected {ftype}, got non-integral number {show(v)}",
            arr,
        )
        big = ok & integral & ((f < -_TWO63) | (f >= _TWO63))
        col.fail(
            big,
            "out_of_range",
            lambda v: f"field '{name}': {show(v)} out of range for {ftype}",
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
            lambda v: f"field '{name}': expected {ftype}, got {show(v)}",
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
                lambda v: f"field '{name}': {show(v)} out of range for {ftype}",
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
            lambda v: f"field '{name}': {show(v)} out of range for int (32-bit)",
            arr,
        )
        ok &= ~wide
    col.values = np.where(ok, values, 0)


def _to_double(arr: pa.Array, col: Column, name: str, is_text: bool) -> None:
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        col.values = arr.cast(pa.float64()).fill_null(0.0).to_numpy()
    elif is_text:
        s = pc.utf8_trim_whitespace(arr)
        match = _regex_mask(s, _FLOAT_RE)
        col.fail(
            ~col.null & ~match,
            "wrong_type",
            lambda v: f"field '{name}': expected double, got {show(v)}",
            arr,
        )
        col.values[match] = pc.cast(s.filter(pa.array(match)), pa.float64()).to_numpy()
    else:
        _wrong_type(arr, col, name, "double")


def _to_bool(arr: pa.Array, col: Column, name: str, is_text: bool) -> None:
    if pa.types.is_boolean(arr.type):
        col.values = arr.fill_null(False).to_numpy(zero_copy_only=False)
    elif is_text:
        s = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
        true = pc.is_in(s, pa.array(_TRUE)).fill_null(False).to_numpy(zero_copy_only=False)
        false = pc.is_in(s, pa.array(_FALSE)).fill_null(False).to_numpy(zero_copy_only=False)
        col.fail(
            ~col.null & ~true & ~false,
            "wrong_type",
            lambda v: f"field '{name}': expected boolean (true/false/1/0), got {show(v)}",
            arr,
        )
        col.values = true
    else:
        _wrong_type(arr, col, name, "boolean")


def _epoch_to_us(v: np.ndarray, unit: str, ok: np.ndarray, col: Column, name: str,
                 raw: pa.Array) -> None:
    """Epoch numbers in ``unit`` (float64) → µs for rows ``ok``; non-finite/overflow → bad."""
    with np.errstate(invalid="ignore", over="ignore"):
        us = np.rint(v * float(EPOCH_SCALE[unit]))
        finite = np.isfinite(us)
        fits = finite & (us >= -_TWO63) & (us < _TWO63)
    col.fail(
        ok & ~finite,
        "bad_timestamp",
        lambda x: f"field '{name}': timestamp must be finite, got {show(x)}",
        raw,
    )
    col.fail(
        ok & finite & ~fits,
        "out_of_range",
        lambda x: f"field '{name}': timestamp {show(x)} {unit[6:]} out of range",
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


def parse_iso(s: pa.Array) -> tuple[np.ndarray, np.ndarray]:
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


def _to_timestamp(arr: pa.Array, col: Column, name: str, fmt: str | None) -> None:
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
                           f"'{fmt}', got number {show(v)}", arr)
    elif pa.types.is_integer(t):
        v = arr.cast(pa.int64()).fill_null(0).to_numpy()
        big = ok & (np.abs(v) > (2**63 - 1) // EPOCH_SCALE[unit])
        col.fail(
            big,
            "out_of_range",
            lambda x: f"field '{name}': timestamp {show(x)} {unit[6:]} out of range",
            arr,
        )
        col.values = np.where(ok & ~big, v, 0) * EPOCH_SCALE[unit]
    elif pa.types.is_floating(t):
        _epoch_to_us(arr.cast(pa.float64()).fill_null(0.0).to_numpy(), unit, ok, col, name, arr)
    elif pa.types.is_string(t):
        _string_timestamps(arr, col, name, fmt, unit)
    else:
        _wrong_type(arr, col, name, "timestamp")


def _string_timestamps(arr: pa.Array, col: Column, name: str, fmt: str | None,
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
                                (~twitter, parse_iso)):
                if mask.any():
                    us[mask], good[mask] = parse(strings.filter(pa.array(mask)))
        elif fmt == "iso":
            us, good = parse_iso(strings)
        else:
            us, good = timeformat.parse(strings, to_strptime(fmt))
        col.values[rest] = np.where(good, us, 0)
    bad = np.zeros(len(arr), dtype=bool)
    bad[rest[~good]] = True
    expected = "" if fmt is None else f" (format '{fmt}')"
    col.fail(bad, "bad_timestamp",
             lambda v: f"field '{name}': unparseable timestamp {show(v)}{expected}", arr)

