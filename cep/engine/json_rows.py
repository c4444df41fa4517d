"""The ``values`` text of output rows: one JSON object per row, built column by column.

An output row's values are ``json.dumps({name: value, ...}, ensure_ascii=False,
separators=(",", ":"))`` of the selected columns. Calling ``json.dumps`` per row costs
about 3 µs for four columns, more than everything else a window rule does for an event,
so the text is built here from one template per rule instead: each column becomes, with
array operations, a list of Python values whose ``%s`` text is that value's JSON text
(ints and floats as they are, NaN/±infinity, booleans, NULLs, strings and timestamps as
their JSON text), and ``template % row`` runs in C for every row. The result is the same
text ``json.dumps`` gives, character for character (the tests compare the two).

Floats are the costly values: Python's ``repr`` of a float takes about 0.5 µs, and an
output row often has several. A float64 column is written by ``orjson`` (Ryu's shortest
digits, the same digits ``repr`` picks) as one JSON array and split at its commas, about
6× faster than ``repr`` per value (1M floats: 0.10 s against 0.66 s, measured on this
machine while loaded); the two write the same text except in exponent form (``1e+16``
against ``1e16``, ``1e-05`` against ``0.00001``), so values of magnitude ≥ 1e16 or
< 1e-4 are written by ``repr``. For ``prev_prior``'s output rows (three doubles, one
long) this builds the texts 2.7× faster than ``repr`` did (100k rows: 95 ms against
250 ms, paired medians of 15 rounds in one process).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import orjson
import pandas as pd

from cep.engine.expr import Col
from cep.engine.table import object_array, repeated


def json_texts(columns: Sequence[tuple[str, str, Col]], n: int) -> np.ndarray:
    """The JSON object text of each of the ``n`` rows of ``columns`` (name, type, values),
    as an object array of ``str``. A name given twice keeps its first place and its last
    value, as a ``dict`` built from the pairs would."""
    if not columns:
        return repeated("{}", n)
    last = {name: i for i, (name, _, _) in enumerate(columns)}
    names = list(dict.fromkeys(name for name, _, _ in columns))
    template = "{" + ",".join(
        _dumps(name).replace("%", "%%") + ":%s" for name in names) + "}"
    parts = [json_values(columns[last[name]][2], columns[last[name]][1]) for name in names]
    return object_array(list(map(template.__mod__, zip(*parts, strict=True))))


def event_lines_text(rules: np.ndarray, keys: np.ndarray, seq: np.ndarray, ts: np.ndarray,
                     ts_null: np.ndarray, payload: np.ndarray) -> str:
    """Complex events as JSON lines, in the given order: ``rule``, ``key``, ``seq``,
    ``ts``, then the payload's fields. ``keys`` and ``payload`` are JSON texts already
    (object arrays of ``str``), ``ts`` µs since the epoch.

    Built by joining JSON texts, not by a ``json.loads``/``dumps`` per event (about 10×
    faster): a payload field never repeats ``rule``/``key``/``seq``/``ts`` (the compiler
    renames such output columns), so the line is the one ``json.dumps`` of the merged
    dict gives. The Spark runtime's event parts and the local runner's output file are
    both written here."""
    if not len(seq):
        return ""
    codes, names = distinct_texts(np.asarray(rules, dtype=object))
    times = np.where(np.asarray(ts_null, dtype=bool), "null",
                     '"' + format_timestamps(ts) + '"')
    payload = np.asarray(payload, dtype=object)
    rest = np.where(payload == "{}", "}",
                    "," + pd.Series(payload, dtype=object).str.slice(1).to_numpy(dtype=object))
    lines = ('{"rule":' + names[codes] + ',"key":' + np.asarray(keys, dtype=object)
             + ',"seq":' + np.asarray(seq, dtype=np.int64).astype(str).astype(object)
             + ',"ts":' + times + rest + "\n")
    return "".join(lines.tolist())


def json_values(col: Col, type_name: str) -> list[object]:
    """Values whose ``str`` is the JSON text of each value of the column (NULL → null,
    timestamps → their ISO text, quoted)."""
    values = col.values
    kind = values.dtype.kind
    if type_name == "timestamp":
        out = np.char.add(np.char.add('"', format_timestamps(values).astype(str)),
                          '"').astype(object)
    elif kind in "iu":
        out = values.tolist()
    elif kind == "f":
        finite = np.isfinite(values)
        if finite.all():
            out = float_texts(values)
        else:
            out = values.astype(object)
            out[finite] = float_texts(values[finite])
            odd = values[~finite]
            out[~finite] = np.where(np.isnan(odd), "NaN",
                                    np.where(odd > 0, "Infinity", "-Infinity"))
    elif kind == "b":
        out = np.where(values, "true", "false").astype(object)
    else:
        out = object_texts(values)
    if col.nulls is not None and col.nulls.any():
        out = out if isinstance(out, np.ndarray) else object_array(out)
        out[col.nulls] = "null"
    return out.tolist() if isinstance(out, np.ndarray) else out


def float_texts(values: np.ndarray) -> list[object]:
    """``repr`` of each finite float, as a list (``str``, or the float itself where its
    ``%s`` text is its ``repr``): float64 through ``orjson`` (see the module docstring),
    other widths as Python floats."""
    if values.dtype != np.float64 or not len(values):
        return values.tolist()
    native = np.ascontiguousarray(values, dtype=np.float64)  # orjson reads C order only
    texts = orjson.dumps(native, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].decode().split(",")
    magnitude = np.abs(values)
    exponent = (magnitude >= 1e16) | ((magnitude < 1e-4) & (magnitude > 0))
    for i in np.flatnonzero(exponent).tolist():
        texts[i] = repr(float(values[i]))
    return texts


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
    codes, uniques = pd.factorize(ints)
    return codes.astype(np.int64), object_array(uniques.astype(str).tolist())


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
