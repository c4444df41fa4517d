"""Writing a typed event frame as JSON lines that the readers read back to the same frame.

The inverse of :func:`cep.io.readers.ranges.read_range` for JSON lines: sample inputs for
tests and benches, the Python API's in-memory inputs, and ``cep produce``'s frames.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cep.engine.table import NULL_SUFFIX


def write_events_jsonl(df: pd.DataFrame, path: str, timestamp_fields: Sequence[str] = ()) -> None:
    """Write ``df`` as JSON lines, e.g. sample inputs for tests.

    Datetime columns, and the int64-µs columns named in ``timestamp_fields`` (as
    :func:`~cep.io.readers.ranges.read_range` returns them), are written as ISO-8601 UTC strings
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
