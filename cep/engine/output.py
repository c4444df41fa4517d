"""Output rows of rules: ``rule``, ``key``, ``seq``, ``ts`` and the selected columns.

Engines return one table per batch with columns ``rule`` (str), ``key`` (object), ``seq``
(int64), ``ts`` (int64 µs, with ``ts__null``) and ``values``: the selected columns as one
JSON object text, in SELECT order. One string column keeps the table's shape fixed for
every rule, so the Spark runtime can ship it with a static schema, and two runs are
compared by comparing these rows as multisets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from cep.engine.expr import Col
from cep.engine.table import Table, object_array

OUTPUT_COLUMNS = ("rule", "key", "seq", "ts", "ts__null", "values")


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


def python_values(col: Col, type_name: str) -> list[object]:
    """JSON-ready Python values of a column (NULL → None, timestamps → ISO text)."""
    values = (format_timestamps(col.values) if type_name == "timestamp" else col.values).tolist()
    if col.nulls is not None:
        for i in np.flatnonzero(col.nulls).tolist():
            values[i] = None
    return values


def build_output(rule: str, keys: np.ndarray, seq: np.ndarray, ts: Col | None,
                 columns: Sequence[tuple[str, str, Col]]) -> Table:
    """An output table for one rule's rows; ``columns`` are (name, type, values)."""
    n = len(seq)
    names = [name for name, _, _ in columns]
    per_column = [python_values(col, t) for _, t, col in columns]
    texts = [
        json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False,
                   separators=(",", ":"))
        for row in zip(*per_column, strict=True)
    ] if per_column else ["{}"] * n
    if ts is None:
        ts_values, ts_nulls = np.zeros(n, np.int64), np.ones(n, bool)
    else:
        ts_values, ts_nulls = ts.values.astype(np.int64), ts.null_mask()
    return {
        "rule": object_array([rule] * n),
        "key": np.asarray(keys, dtype=object),
        "seq": np.asarray(seq, dtype=np.int64),
        "ts": ts_values,
        "ts__null": ts_nulls,
        "values": object_array(texts),
    }


def empty_output() -> Table:
    return build_output("", np.empty(0, object), np.empty(0, np.int64), None, [])


def output_records(table: Table) -> list[dict]:
    """Output rows as dicts in the file format: rule, key, seq, ts, then the columns."""
    records = []
    columns = {c: table[c].tolist() for c in OUTPUT_COLUMNS}
    columns["ts"] = format_timestamps(table["ts"]).tolist()
    for rule, key, seq, ts, ts_null, values in zip(*columns.values(), strict=True):
        record = {"rule": rule, "key": key, "seq": seq, "ts": None if ts_null else ts}
        record.update(json.loads(values))
        records.append(record)
    return records
