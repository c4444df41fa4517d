"""The last step every stateful rule shares: HAVING, SELECT columns, output rows."""

from __future__ import annotations

import numpy as np

from cep.engine.expr import AggValues, Col, Env, evaluate, truth
from cep.engine.output import build_output
from cep.engine.table import KEY, SEQ, Table
from cep.lang import ir


def emit(rule_name: str, columns: tuple[ir.Column, ...], having: ir.TExpr | None,
         triggers: Table, env: Env, aggs: AggValues, ts: Col | None) -> Table:
    """Output rows for the triggers that pass HAVING.

    ``env`` evaluates over the triggers (one row each) and ``aggs`` holds each aggregate's
    value per trigger."""
    keep = truth(having, env, aggs)
    if not keep.all():
        env = Env(int(keep.sum()), {k: _take(c, keep) for k, c in env.columns.items()})
        aggs = {a: _take(c, keep) for a, c in aggs.items()}
        triggers = {KEY: triggers[KEY][keep], SEQ: triggers[SEQ][keep]}
        ts = _take(ts, keep) if ts is not None else None
    values = [(c.name, c.expr.type, evaluate(c.expr, env, aggs)) for c in columns]
    return build_output(rule_name, triggers[KEY], triggers[SEQ], ts, values)


def _take(col: Col, mask: np.ndarray) -> Col:
    return Col(col.values[mask], col.nulls[mask] if col.nulls is not None else None)


def timestamp_col(table: Table, timestamp: str | None) -> Col | None:
    """The triggers' event time (None when the stream has no TIMESTAMP)."""
    if timestamp is None:
        return None
    return Col(table[timestamp])
