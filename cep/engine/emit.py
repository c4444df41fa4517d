"""The last step every stateful rule shares: HAVING, SELECT columns, output rows."""

from __future__ import annotations

import numpy as np

from cep.engine.expr import AggValues, Col, Env, evaluate, truth
from cep.engine.output import Stamps, build_output
from cep.engine.table import Table
from grammar import ir


def emit(rule_name: str, columns: tuple[ir.Column, ...], having: ir.TExpr | None,
         keys: np.ndarray, env: Env, aggs: AggValues, ts: Col | None,
         stamps: Stamps) -> Table:
    """Output rows for the triggers that pass HAVING.

    ``env`` evaluates over the triggers (one row each), ``aggs`` holds each aggregate's
    value per trigger, ``keys``, ``ts`` and ``stamps`` are the triggers' key, time and
    place in the reference order."""
    env.seq = stamps.seq  # the record each trigger was made at: a failing function's
    keep = truth(having, env, aggs)
    if not keep.all():
        env = env.where(keep)
        aggs = {a: _take(c, keep) for a, c in aggs.items()}
        keys, stamps = keys[keep], stamps.take(keep)
        ts = _take(ts, keep) if ts is not None else None
    values = [(c.name, c.expr.type, evaluate(c.expr, env, aggs)) for c in columns]
    return build_output(rule_name, keys, stamps, ts, values)


def _take(col: Col, mask: np.ndarray) -> Col:
    return Col(col.values[mask], col.nulls[mask] if col.nulls is not None else None)


def timestamp_col(table: Table, timestamp: str | None) -> Col | None:
    """The triggers' event time (None when the stream has no TIMESTAMP)."""
    if timestamp is None:
        return None
    return Col(table[timestamp])
