"""One engine's rows of one input task, as the bytes that travel to its engine task.

The payload crosses one shuffle inside one running job (an input task of batch B to the
engine task of batch B) and never rests anywhere a restart would read it, so it is a
pickle. What makes it cheap is how string columns go: pickling an object array writes
and reads every ``str`` on its own (a flights row has three, every one a separate object
from the JSON reader), which cost more CPU than reading the file. A string column with
few distinct values goes as int32 codes into its distinct values instead; the input
task factorizes it once for all engines and splits the codes (an int take, not an object
take), and the engine task rebuilds it with one gather. The rebuilt column holds equal
strings (shared objects, so hashing them for keys is cached too); a ``str`` subclass
equal to a plain ``str`` may come back as that ``str``.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from cep.engine.table import Table, take

SAMPLE = 2048  # rows looked at to guess whether a column repeats its values
MOST_DISTINCT = SAMPLE // 4  # more distinct values than this in the sample: sent as is

# A table ready to be split: its columns (string columns replaced by codes) and, for
# those, the distinct values the codes index.
Coded = tuple[Table, dict[str, np.ndarray]]


def code_table(table: Table) -> Coded:
    """``table`` with its repetitive string columns as codes (equal arrays coded once)."""
    columns: Table = {}
    values: dict[str, np.ndarray] = {}
    seen: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}
    for name, column in table.items():
        if column.dtype != object:
            columns[name] = column
            continue
        if id(column) not in seen:
            seen[id(column)] = _codes(column)
        coded = seen[id(column)]
        if coded is None:
            columns[name] = column
        else:
            columns[name], values[name] = coded
    return columns, values


def _codes(column: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """int32 codes and distinct values of a column of ``str`` that repeats them, else
    None (few rows, mostly distinct values, NULLs or anything but ``str``)."""
    if len(column) < SAMPLE:
        return None
    try:
        if len(set(column[:SAMPLE].tolist())) > MOST_DISTINCT:
            return None
        codes, distinct = pd.factorize(column, use_na_sentinel=True)
    except TypeError:  # unhashable values
        return None
    if (len(codes) and codes.min() < 0) or any(type(v) is not str for v in distinct):
        return None
    return codes.astype(np.int32), np.asarray(distinct, dtype=object)


def take_coded(coded: Coded, index: np.ndarray) -> Coded:
    """Rows at ``index`` of a coded table (the distinct values are shared, not copied)."""
    columns, values = coded
    return take(columns, index), values


def decode_table(coded: Coded) -> Table:
    columns, values = coded
    return {name: values[name][column] if name in values else column
            for name, column in columns.items()}


def pack_payload(batch: int, tables: Mapping[str, Coded], passthrough: Table | None,
                 info: dict[str, float], truth: np.ndarray | None) -> bytes:
    """An engine's rows per stream (coded), the task's stateless output and counts (sent
    to engine 0 only) and the first-story sequence numbers of a generator with a truth."""
    return pickle.dumps((batch, dict(tables), passthrough, info, truth), protocol=5)


def unpack_payload(payload: bytes) -> tuple[int, dict[str, Table], Table | None,
                                             dict[str, Any], np.ndarray | None]:
    """What :func:`pack_payload` packed, with the streams' tables decoded."""
    batch, tables, passthrough, info, truth = pickle.loads(payload)
    return batch, {n: decode_table(t) for n, t in tables.items()}, passthrough, info, truth
