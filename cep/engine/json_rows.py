"""The ``values`` text of output rows: one JSON object per row, built column by column.

An output row's values are ``json.dumps({name: value, ...}, ensure_ascii=False,
separators=(",", ":"))`` of the selected columns. Calling ``json.dumps`` per row costs
about 3 µs for four columns, more than everything else a window rule does for an event,
so the text is built here with array operations instead: each column becomes an Arrow
string array of its values' JSON texts (ints cast by Arrow, floats as below, booleans,
NaN/±infinity, NULLs, strings and timestamps as their JSON text), one
``binary_join_element_wise`` puts the names between them, row by row, and the rows come
back as an object array of ``str``, in blocks of :data:`BLOCK` rows so that Arrow's
buffers stay in the cache. Where Arrow cannot hold a text (a lone surrogate, which
``json.loads('"\\ud800"')`` gives, in a value or a name) or the rows pass 2 GiB, the
columns' texts are joined by one ``template % row`` per row instead. Either way the
result is the text ``json.dumps`` gives, character for character (the tests compare
the two).

Floats are the costly values: Python's ``repr`` of a float takes about 0.5 µs, and an
output row often has several. A column of floats is written by ``orjson`` (Ryu's
shortest digits, the same digits ``repr`` picks) as one JSON array and split at its
commas by Arrow (100k floats: 3.3 ms); the two write the same text except in
exponent form (orjson 3.13 writes ``1e-05`` as ``0.00001`` and ``2e-06`` as ``2e-6``,
and the form is orjson's choice, not a promise), so values of magnitude ≥ 1e16 or
< 1e-4 are written by ``repr``, as are NaN and the infinities (JSON's ``NaN``,
``Infinity``, ``-Infinity``). For
``prev_prior``'s output rows (three doubles with NULLs, one long) this builds the
texts 1.9× faster than the template over ``str.split`` lists did at 100k rows (32 ms
against 58 ms) and 2.0× at 1M (306 ms against 615 ms), paired medians of interleaved
rounds in one process (load average 2); the template over ``repr`` before that took
250 ms for 100k. Inside the reference bench's rows (1M events in 100k batches) the
texts take 0.29-0.36 s of ``prev_prior``'s run instead of 0.45-0.47 s, 0.17 s of
``unique``'s instead of 0.28 s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cep.engine.expr import Col
from cep.engine.table import factorize, first_rows, object_array, repeated

BLOCK = 1 << 16  # rows built at a time, so that Arrow's buffers stay in the cache


def json_texts(columns: Sequence[tuple[str, str, Col]], n: int) -> np.ndarray:
    """The JSON object text of each of the ``n`` rows of ``columns`` (name, type, values),
    as an object array of ``str``. A name given twice keeps its first place and its last
    value, as a ``dict`` built from the pairs would."""
    if not columns:
        return repeated("{}", n)
    last = {name: i for i, (name, _, _) in enumerate(columns)}
    names = list(dict.fromkeys(name for name, _, _ in columns))
    chosen = [columns[last[name]][1:] for name in names]
    if n <= BLOCK:
        return _row_texts(names, chosen)
    out = np.empty(n, dtype=object)
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        out[start:stop] = _row_texts(names, [
            (type_name, Col(col.values[start:stop],
                            None if col.nulls is None else col.nulls[start:stop]))
            for type_name, col in chosen])
    return out


def _row_texts(names: list[str], columns: list[tuple[str, Col]]) -> np.ndarray:
    """:func:`json_texts` of distinct names."""
    literals = ["{" + _dumps(names[0]) + ":", *("," + _dumps(name) + ":" for name in names[1:]),
                "}"]
    joined = _joined(literals, [column_texts(col, type_name) for type_name, col in columns])
    if isinstance(joined, pa.Array):
        return joined.to_numpy(zero_copy_only=False)
    return object_array(joined)


def event_lines_text(rules: np.ndarray, keys: np.ndarray, seq: np.ndarray, ts: np.ndarray,
                     ts_null: np.ndarray, payload: np.ndarray) -> str:
    """Complex events as JSON lines, in the given order: ``rule``, ``key``, ``seq``,
    ``ts``, then the payload's fields. ``keys`` and ``payload`` are JSON texts already
    (object arrays of ``str``), ``ts`` µs since the epoch.

    Built by joining JSON texts, not by a ``json.loads``/``dumps`` per event (about 10×
    faster): a payload field never repeats ``rule``/``key``/``seq``/``ts`` (the compiler
    renames such output columns), so the line is the one ``json.dumps`` of the merged
    dict gives. The texts are joined by Arrow, as in :func:`json_texts`, and each
    block's lines are read out of the joined array's buffer in one decode: 1M events of
    ``prev_prior``'s output, 4.2× faster than numpy's string adds of object arrays
    were (503 ms against 2,159 ms, paired medians of interleaved rounds in one
    process; 100k: 51 ms against 164 ms). The Spark runtime's event parts and the local
    runner's output file are both written here."""
    return "".join(
        _event_lines(*(np.asarray(a)[start:start + BLOCK]
                       for a in (rules, keys, seq, ts, ts_null, payload)))
        for start in range(0, len(seq), BLOCK))


def _event_lines(rules: np.ndarray, keys: np.ndarray, seq: np.ndarray, ts: np.ndarray,
                 ts_null: np.ndarray, payload: np.ndarray) -> str:
    """:func:`event_lines_text` of one block."""
    codes, names = distinct_texts(np.asarray(rules, dtype=object))
    rule = arrow_or_objects(names)
    rule = rule.take(pa.array(codes)) if isinstance(rule, pa.Array) else rule[codes]
    times = timestamp_texts(ts, np.asarray(ts_null, dtype=bool))
    body = arrow_or_objects(np.asarray(payload, dtype=object))
    if isinstance(body, pa.Array):  # "{}" adds nothing; else "," and the fields
        comma = pc.if_else(pc.equal(body, "{}"), "", ",")
        fields = pc.utf8_slice_codeunits(body, 1)
    else:
        comma = np.where(body == "{}", "", ",").astype(object)
        fields = pd.Series(body, dtype=object).str.slice(1).to_numpy(dtype=object)
    lines = _joined(['{"rule":', ',"key":', ',"seq":', ',"ts":', "", "", "\n"],
                    [rule, arrow_or_objects(np.asarray(keys, dtype=object)),
                     pc.cast(pa.array(np.asarray(seq, dtype=np.int64)), pa.string()),
                     times, comma, fields])
    if not isinstance(lines, pa.Array):
        return "".join(lines)
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    return str(memoryview(lines.buffers()[2])[
        offsets[lines.offset]:offsets[lines.offset + len(lines)]], "utf-8")


def _joined(literals: list[str], texts: list[pa.Array | np.ndarray]) -> pa.Array | list[str]:
    """``literals[0] + texts[0][i] + literals[1] + ... + texts[-1][i] + literals[-1]``
    for each row ``i``: by Arrow (a string array) where it holds every text, else (a
    lone surrogate, or more than 2 GiB) by one ``template % row`` per row (a list)."""
    if all(isinstance(t, pa.Array) for t in texts):
        try:
            scalars = [pa.scalar(s, pa.string()) for s in literals]
            return pc.binary_join_element_wise(
                *(part for pair in zip(scalars[:-1], texts, strict=True) for part in pair),
                scalars[-1], "")
        except (UnicodeEncodeError, pa.ArrowCapacityError):
            pass
    template = "%s".join(s.replace("%", "%%") for s in literals)
    parts = [t.to_pylist() if isinstance(t, pa.Array) else t.tolist() for t in texts]
    return list(map(template.__mod__, zip(*parts, strict=True)))


def arrow_or_objects(texts: np.ndarray) -> pa.Array | np.ndarray:
    """An object array of ``str`` as an Arrow string array, or as it is where Arrow
    cannot hold a text (a lone surrogate, which ``json.loads('"\\ud800"')`` gives)."""
    try:
        return pa.array(texts, pa.string())
    except UnicodeEncodeError:
        return texts


def column_texts(col: Col, type_name: str) -> pa.Array | np.ndarray:
    """The JSON text of each value of the column (NULL → null, timestamps → their ISO
    text, quoted), as :func:`arrow_or_objects` holds it."""
    values = col.values
    kind = values.dtype.kind
    nulls = col.nulls if col.nulls is not None and col.nulls.any() else None
    if type_name == "timestamp":
        return timestamp_texts(values, nulls)
    if kind in "iu":
        texts = pc.cast(pa.array(values), pa.string())
    elif kind == "f":
        texts = float_texts(values, nulls)
    elif kind == "b":
        texts = pc.if_else(pa.array(values), "true", "false")
    else:
        objects = object_texts(values)
        if nulls is not None:
            objects[nulls] = "null"
        return arrow_or_objects(objects)
    return texts if nulls is None else pc.if_else(pa.array(nulls), "null", texts)


def timestamp_texts(us: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """JSON text of µs timestamps: :func:`format_timestamps`'s ISO text, quoted (``null``
    where ``nulls``). Written as a date (numpy's text, once per distinct day) and a time
    of day whose digits are integer arithmetic, not numpy's text per value (1M values
    in blocks of :data:`BLOCK`: 100 ms against 255 ms for :func:`format_timestamps`),
    which the NaT value (int64's least) still takes."""
    us = np.asarray(us, dtype=np.int64)
    if (us == np.iinfo(np.int64).min).any():
        texts = pc.binary_join_element_wise('"', pa.array(format_timestamps(us), pa.string()),
                                            '"', "")
    else:
        day, since = np.divmod(us, 86_400_000_000)
        codes, days = pd.factorize(day)
        dates = pa.array(np.datetime_as_string(days.astype("datetime64[D]")), pa.string())
        texts = pc.binary_join_element_wise('"', dates.take(pa.array(codes)), "T",
                                            _times_of_day(since), '"', "")
    if nulls is None or not nulls.any():
        return texts
    return pc.if_else(pa.array(nulls), "null", texts)


def _times_of_day(us: np.ndarray) -> pa.Array:
    """``HH:MM:SS.mmmZ`` of µs since midnight, or ``HH:MM:SS.mmmuuuZ`` where they are
    not whole milliseconds, as numpy writes them. The digits are written a position at
    a time into a (16, n) byte array, each row contiguous, then read out row by row."""
    hours, us = np.divmod(us, 3_600_000_000)
    minutes, us = np.divmod(us, 60_000_000)
    seconds, us = np.divmod(us, 1_000_000)
    n = len(us)
    text = np.empty((16, n), dtype=np.uint8)
    for position, char in ((2, ":"), (5, ":"), (8, "."), (15, "Z")):
        text[position] = ord(char)
    digits = [(0, hours, 10), (1, hours, 1), (3, minutes, 10), (4, minutes, 1),
              (6, seconds, 10), (7, seconds, 1)]
    digits += [(9 + i, us, 10 ** (5 - i)) for i in range(6)]
    for position, values, unit in digits:
        text[position] = values.astype(np.int32) // unit % 10 + ord("0")
    fine = us % 1000 != 0
    if not fine.any():
        text[12] = ord("Z")
        data, offsets = np.ascontiguousarray(text[:13].T), np.arange(n + 1) * 13
    else:
        text[12, ~fine] = ord("Z")
        width = np.where(fine, 16, 13)
        data = text.T[np.arange(16) < width[:, None]]  # each row's first 13 or 16 bytes
        offsets = np.r_[0, np.cumsum(width)]
    return pa.Array.from_buffers(pa.string(), n, [
        None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])


def float_texts(values: np.ndarray, skip: np.ndarray | None = None) -> pa.Array:
    """``repr`` of each float (JSON's ``NaN``/``Infinity``/``-Infinity`` for the
    non-finite), as an Arrow string array, written by ``orjson`` (see the module
    docstring); float16/32 values as the float64 they widen to exactly, as Python's
    ``float`` of them is. Values where ``skip`` is set (NULLs) get any text."""
    native = np.ascontiguousarray(values, dtype=np.float64)  # orjson reads C order only
    if not len(native):
        return pa.array([], pa.string())
    raw = orjson.dumps(native, option=orjson.OPT_SERIALIZE_NUMPY)
    if len(raw) > 2**31:
        raise pa.ArrowCapacityError("float texts of more than 2 GiB")
    texts = pc.list_flatten(pc.split_pattern(pa.array([raw[1:-1]], pa.string()), ","))
    magnitude = np.abs(native)  # NaN compares false: fixed, as are the infinities
    fix = ~((magnitude < 1e16) & ((magnitude >= 1e-4) | (magnitude == 0)))
    if skip is not None:
        fix &= ~skip
    if not fix.any():
        return texts
    odd = native[fix]
    own = np.where(np.isnan(odd), "NaN", np.where(odd > 0, "Infinity", "-Infinity")
                   ).astype(object)
    finite = np.isfinite(odd)
    own[finite] = list(map(repr, odd[finite].tolist()))
    return pc.replace_with_mask(texts, pa.array(fix), pa.array(own, pa.string()))


def format_timestamps(us: np.ndarray) -> np.ndarray:
    """ISO-8601 UTC text of µs timestamps (an object array of ``str``): milliseconds
    unless a value needs microseconds (per value, so the text of a timestamp never
    depends on its neighbours)."""
    us = np.asarray(us, dtype=np.int64)
    moments = us.astype("datetime64[us]")
    out = np.char.add(np.datetime_as_string(moments, unit="ms"), "Z").astype(object)
    fine = us % 1000 != 0
    if fine.any():
        out[fine] = np.char.add(np.datetime_as_string(moments[fine], unit="us"), "Z")
    return out


def object_texts(values: np.ndarray, dumps: Callable[[object], str] | None = None
                 ) -> np.ndarray:
    """JSON text of each value of an object column (as ``dumps`` writes it, by default
    as in output rows)."""
    codes, texts = distinct_texts(values, dumps)
    return texts[codes]


def distinct_texts(values: np.ndarray, dumps: Callable[[object], str] | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Each value's index into the texts of its distinct values, and those texts: each
    written once when every value is a ``str`` or every one an ``int`` (strings and
    keys repeat), else once per value (mixed values, where equal ones such as 1, 1.0
    and True have different texts)."""
    dumps = dumps or _dumps
    kind = pd.api.types.infer_dtype(values, skipna=False)
    if kind not in ("string", "integer"):
        return (np.arange(len(values)),
                object_array([dumps(v) for v in values.tolist()]))
    if kind == "integer" and dumps in (_dumps, json.dumps):
        found = _int_texts(values)
        if found is not None:
            return found
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes, object_array([dumps(v) for v in np.asarray(uniques, dtype=object).tolist()])


def _int_texts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`distinct_texts` of Python ints (their decimal digits, as ``json.dumps``
    writes them): numbered as int64 and written with one numpy conversion, not hashed as
    objects and dumped one by one (100k keys, 4,096 distinct: 7 ms against 35 ms);
    None when one does not fit an int64."""
    try:
        ints = np.asarray(values, dtype=np.int64)
    except OverflowError:
        return None
    codes = factorize(ints)
    return codes, object_array(ints[first_rows(codes)].astype(str).tolist())


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
