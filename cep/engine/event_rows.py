"""Events as Python rows, for the operators that walk a key's events one at a time.

The pattern matcher and MATCH_RECOGNIZE step through each key's events in order and keep
some of them in their state, so they take each event as a dict (fields by name, NULL as
``None``) rather than as a row of numpy columns; what they compute from those events goes
back to columns for the expression evaluator. Both directions live here, once.
"""

from __future__ import annotations

import numpy as np

from cep.engine.expr import Col
from cep.engine.table import DTYPES, NULL_SUFFIX, PLACEHOLDERS, Table

Row = dict[str, object]


def field_values(table: Table, name: str, order: np.ndarray | None = None) -> list:
    """Column ``name`` of ``table`` as Python values with ``None`` for NULL (rows in
    ``order`` when given)."""
    values = (table[name] if order is None else table[name][order]).tolist()
    nulls = table.get(name + NULL_SUFFIX)
    if nulls is not None:
        for i in np.flatnonzero(nulls if order is None else nulls[order]).tolist():
            values[i] = None
    return values


def rows_of(columns: dict[str, list]) -> list[Row]:
    """Equally long value lists by column name as one dict per row."""
    names = list(columns)
    return [dict(zip(names, values, strict=True))
            for values in zip(*columns.values(), strict=True)]


def as_column(values: list, type_name: str) -> Col:
    """Python values (``None`` for NULL) as an expression column of ``type_name``."""
    nulls = np.array([v is None for v in values], dtype=bool)
    out = np.empty(len(values), dtype=DTYPES[type_name])
    out[:] = [PLACEHOLDERS[type_name] if v is None else v for v in values]
    return Col(out, nulls if nulls.any() else None)
