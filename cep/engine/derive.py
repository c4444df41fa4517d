"""Stateless rules: filters, computed columns and INSERT INTO chains, before routing.

They run on the input batch in statement order, so a derived stream can feed the next
INSERT INTO. Every derived row keeps the ``__seq`` of the input event it came from; when
several INSERT INTO rules feed one stream, ``__sub`` orders their rows within an event
(statement order), which keeps per-key order identical under every routing.
"""

from __future__ import annotations

import numpy as np

from cep.engine.emit import timestamp_col
from cep.engine.expr import Env, evaluate, truth
from cep.engine.output import build_output
from cep.engine.table import (
    DTYPES,
    KEY,
    NULL_SUFFIX,
    SEQ,
    SUB,
    Table,
    concat,
    empty,
    nrows,
    object_array,
    take,
)
from grammar import ir


def derive_streams(module: ir.CompiledModule, inputs: dict[str, Table]) -> tuple[
        dict[str, Table], list[Table]]:
    """All streams (input and derived) for a batch, and the stateless rules' output rows.

    ``inputs`` holds the input streams' tables (``__seq`` and fields). Derived streams that
    receive no rows are still present, with no rows, so every consumer sees every column.
    """
    streams: dict[str, Table] = {}
    for name in module.input_streams:
        table = dict(inputs.get(name) or empty(list(module.streams[name].fields), (SEQ,)))
        table.setdefault(SUB, np.zeros(nrows(table), dtype=np.int64))
        streams[name] = table
    pieces: dict[str, list[Table]] = {}
    outputs: list[Table] = []
    producer_index: dict[str, int] = {}
    for rule in module.derived:
        source = _current(streams, pieces, rule.stream)
        env = Env(nrows(source))
        env.bind_table("", source)
        rows = take(source, truth(rule.filter, env))
        env = Env(nrows(rows))
        env.bind_table("", rows)
        if rule.target is None:
            stream = module.streams[rule.stream]
            key = module.key
            keys = rows[key] if key is not None and key in rows else np.full(
                nrows(rows), None, dtype=object)
            cols = [(c.name, c.expr.type, evaluate(c.expr, env)) for c in rule.columns]
            outputs.append(build_output(rule.name, object_array(list(keys)), rows[SEQ],
                                        timestamp_col(rows, stream.timestamp), cols))
            continue
        produced: Table = {SEQ: rows[SEQ]}
        sub = producer_index.get(rule.target, 0)
        producer_index[rule.target] = sub + 1
        produced[SUB] = np.full(nrows(rows), sub, dtype=np.int64)
        for column in rule.columns:
            col = evaluate(column.expr, env)
            target_type = module.streams[rule.target].field_type(column.name) or "string"
            produced[column.name] = col.values.astype(DTYPES[target_type], copy=False)
            if col.nulls is not None:
                produced[column.name + NULL_SUFFIX] = col.nulls
        pieces.setdefault(rule.target, []).append(produced)
    for name in list(pieces):
        _current(streams, pieces, name)
    for name, stream in module.streams.items():
        if name not in streams:
            streams[name] = empty(list(stream.fields), (SEQ, SUB))
    return streams, outputs


def _current(streams: dict[str, Table], pieces: dict[str, list[Table]], name: str) -> Table:
    """A stream as produced so far (derived streams may still be receiving rows)."""
    if name in pieces:
        streams[name] = _sorted(concat([streams.get(name, {}), *pieces.pop(name)]))
    return streams[name]


def _sorted(table: Table) -> Table:
    order = np.lexsort((table[SUB], table[SEQ]))
    return take(table, order)


def add_keys(table: Table, key: str | None) -> Table:
    """Attach the partition key column (None for every row of an unkeyed module)."""
    out = dict(table)
    n = nrows(table)
    if key is None or key not in table:
        out[KEY] = np.full(n, None, dtype=object)
    else:
        nulls = table.get(key + NULL_SUFFIX)
        has_nulls = nulls is not None and bool(nulls.any())
        # without NULLs to blank out, a string key is its field's array itself, which
        # the Spark payload then sends once (payload.py)
        values = table[key]
        if has_nulls or values.dtype.kind != "i":
            values = values.astype(object, copy=has_nulls)
        if has_nulls:
            values[nulls] = None
        out[KEY] = values
    return out
