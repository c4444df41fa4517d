"""Vectorised evaluation of checked expressions with SQL three-valued logic.

An expression is evaluated once per batch over whole columns, never per event: every
node returns a :class:`Col` (values plus an optional NULL mask). Rules of the language:
* NULL in → NULL out for operators and functions; comparisons with NULL are NULL, and a
  NULL condition counts as false in WHERE/HAVING/filters/CASE;
* AND/OR follow SQL's three-valued logic (``false AND NULL`` is false);
* ``/`` always gives a double; division or modulo by zero gives NULL (never inf/NaN);
* aggregates are computed elsewhere (``aggregates.py``) and looked up by node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from cep.engine import functions as function_registry
from cep.engine.table import DTYPES, NULL_SUFFIX, PLACEHOLDERS, SEQ, Table
from cep.engine.udf_errors import report
from cep.engine.udf_isolation import call as isolated_call
from grammar import ir


@dataclass
class Col:
    """A column of values; ``nulls`` is None when no value is NULL."""

    values: np.ndarray
    nulls: np.ndarray | None = None

    def null_mask(self) -> np.ndarray:
        return self.nulls if self.nulls is not None else np.zeros(len(self.values), bool)

    def truth(self) -> np.ndarray:
        """Where the value is TRUE (NULL and FALSE both count as not true)."""
        values = self.values.astype(bool, copy=False)
        return values & ~self.nulls if self.nulls is not None else values


class Env:
    """Where field references find their columns: ``(qualifier, name[, index])`` → Col.

    ``seq``: the record each row is evaluated for (the first table bound with
    sequence numbers, or the triggers' ``emit`` sets), which names the record a user
    function's failure dead-letters (``cep.engine.udf_errors``); None where not known."""

    def __init__(self, n: int, columns: Mapping[tuple, Col] | None = None,
                 seq: np.ndarray | None = None) -> None:
        self.n = n
        self.columns: dict[tuple, Col] = dict(columns or {})
        self.seq = seq

    def where(self, keep: np.ndarray) -> Env:
        """The rows where ``keep`` is true, every column."""
        return Env(int(keep.sum()), {k: Col(c.values[keep], None if c.nulls is None
                                            else c.nulls[keep])
                                     for k, c in self.columns.items()},
                   self.seq[keep] if self.seq is not None else None)

    def bind_table(self, qualifier: str, table: Table, index: int | None = None) -> None:
        """Expose every field of ``table`` under ``qualifier``."""
        if self.seq is None and SEQ in table:
            self.seq = table[SEQ]
        for name, values in table.items():
            if name.startswith("__") or name.endswith(NULL_SUFFIX):
                continue
            key = (qualifier, name) if index is None else (qualifier, name, index)
            self.columns[key] = Col(values, table.get(name + NULL_SUFFIX))

    def lookup(self, ref: ir.FieldRef) -> Col:
        key = (ref.qualifier, ref.name) if ref.index is None else (
            ref.qualifier, ref.name, ref.index)
        return self.columns[key]


# Values computed per trigger outside the expression tree: aggregates and window functions
AggValues = Mapping[ir.Agg | ir.Prev, Col]


def evaluate(expr: ir.TExpr, env: Env, aggs: AggValues | None = None) -> Col:
    """The value of ``expr`` for each of the ``env.n`` rows."""
    return _EVALUATORS[type(expr)](expr, env, aggs or {})


def truth(expr: ir.TExpr | None, env: Env, aggs: AggValues | None = None) -> np.ndarray:
    """Rows where an optional condition is TRUE (all rows when there is none)."""
    if expr is None:
        return np.ones(env.n, dtype=bool)
    return evaluate(expr, env, aggs).truth()


def _const(expr: ir.Const, env: Env, aggs: AggValues) -> Col:
    if expr.value is None:
        return Col(np.full(env.n, PLACEHOLDERS[expr.type], dtype=DTYPES[expr.type]),
                   np.ones(env.n, dtype=bool))
    values = np.empty(env.n, dtype=DTYPES[expr.type])
    values[:] = expr.value
    return Col(values)


def _field(expr: ir.FieldRef, env: Env, aggs: AggValues) -> Col:
    return env.lookup(expr)


def _agg(expr: ir.Agg | ir.Prev, env: Env, aggs: AggValues) -> Col:
    return aggs[expr]


def _or_nulls(*cols: Col) -> np.ndarray | None:
    masks = [c.nulls for c in cols if c.nulls is not None]
    if not masks:
        return None
    out = masks[0].copy()
    for m in masks[1:]:
        out |= m
    return out


ARITH: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
}
COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "=": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _op(expr: ir.Op, env: Env, aggs: AggValues) -> Col:
    op = expr.op
    if op in ("and", "or"):
        return _logic(op, evaluate(expr.args[0], env, aggs), evaluate(expr.args[1], env, aggs))
    if op == "not":
        a = evaluate(expr.args[0], env, aggs)
        return Col(~a.values.astype(bool), a.nulls)
    if op == "neg":
        a = evaluate(expr.args[0], env, aggs)
        return Col(np.negative(a.values), a.nulls)
    a, b = (evaluate(x, env, aggs) for x in expr.args)
    nulls = _or_nulls(a, b)
    if op in COMPARE:
        return Col(np.asarray(COMPARE[op](a.values, b.values), dtype=bool), nulls)
    if op == "||":
        return Col(np.char.add(a.values.astype(str), b.values.astype(str)).astype(object), nulls)
    target = DTYPES[expr.type]
    with np.errstate(all="ignore"):
        if op in ARITH:
            values = ARITH[op](a.values, b.values).astype(target, copy=False)
            return Col(values, nulls)
        zero = b.values == 0
        safe_b = np.where(zero, 1, b.values)
        if op == "/":
            if expr.type == "duration":
                values = (a.values // safe_b).astype(np.int64)
            else:
                values = a.values.astype(np.float64) / safe_b
        else:  # "%": Java's remainder keeps the dividend's sign
            values = np.fmod(a.values, safe_b).astype(target, copy=False)
    if zero.any():
        nulls = zero if nulls is None else (nulls | zero)
    return Col(values, nulls)


def _logic(op: str, a: Col, b: Col) -> Col:
    av, bv = a.values.astype(bool), b.values.astype(bool)
    an, bn = a.null_mask(), b.null_mask()
    a_true, b_true = av & ~an, bv & ~bn
    a_false, b_false = ~av & ~an, ~bv & ~bn
    if op == "and":
        true = a_true & b_true
        false = a_false | b_false
    else:
        true = a_true | b_true
        false = a_false & b_false
    nulls = ~(true | false)
    return Col(true, nulls if nulls.any() else None)


def _in_list(expr: ir.InList, env: Env, aggs: AggValues) -> Col:
    # x IN (a, b) is x = a OR x = b, which gives SQL's NULL behaviour for free
    terms = [ir.Op("=", (expr.operand, item), "boolean") for item in expr.items]
    result = evaluate(terms[0], env, aggs)
    for term in terms[1:]:
        result = _logic("or", result, evaluate(term, env, aggs))
    return Col(~result.values, result.nulls) if expr.negated else result


def _between(expr: ir.Between, env: Env, aggs: AggValues) -> Col:
    low = ir.Op(">=", (expr.operand, expr.low), "boolean")
    high = ir.Op("<=", (expr.operand, expr.high), "boolean")
    result = _logic("and", evaluate(low, env, aggs), evaluate(high, env, aggs))
    return Col(~result.values, result.nulls) if expr.negated else result


def _like(expr: ir.Like, env: Env, aggs: AggValues) -> Col:
    a = evaluate(expr.operand, env, aggs)
    pattern = re.compile(expr.regex, re.DOTALL)
    match = np.frompyfunc(lambda s: pattern.fullmatch(s) is not None, 1, 1)
    values = match(a.values).astype(bool) if len(a.values) else np.zeros(0, bool)
    return Col(~values if expr.negated else values, a.nulls)


def _is_null(expr: ir.IsNull, env: Env, aggs: AggValues) -> Col:
    mask = evaluate(expr.operand, env, aggs).null_mask()
    return Col(~mask if expr.negated else mask.copy())


def _case(expr: ir.CaseWhen, env: Env, aggs: AggValues) -> Col:
    if expr.default is not None:
        result = _cast(evaluate(expr.default, env, aggs), expr.type)
    else:
        result = _const(ir.Const(None, expr.type), env, aggs)
    values, nulls = result.values.copy(), result.null_mask().copy()
    for cond, value in reversed(expr.whens):
        hit = evaluate(cond, env, aggs).truth()
        v = _cast(evaluate(value, env, aggs), expr.type)
        values[hit] = v.values[hit]
        nulls[hit] = v.null_mask()[hit]
    return Col(values, nulls if nulls.any() else None)


def _coalesce(expr: ir.Coalesce, env: Env, aggs: AggValues) -> Col:
    result = _cast(evaluate(expr.args[0], env, aggs), expr.type)
    if result.nulls is None:
        return result
    values, nulls = result.values.copy(), result.nulls.copy()
    for arg in expr.args[1:]:
        if not nulls.any():
            break
        v = _cast(evaluate(arg, env, aggs), expr.type)
        fill = nulls & ~v.null_mask()
        values[fill] = v.values[fill]
        nulls &= ~fill
    return Col(values, nulls if nulls.any() else None)


def _func(expr: ir.Func, env: Env, aggs: AggValues) -> Col:
    spec = function_registry.lookup(expr.name)
    assert spec is not None, expr.name  # the checker resolved it
    args = [evaluate(a, env, aggs) for a in expr.args]
    nulls = _or_nulls(*args)
    if isinstance(spec, function_registry.UserFunction):
        values, failed = _user_call(spec, expr.name, args, nulls, env)
        if failed is not None:
            nulls = failed if nulls is None else nulls | failed
    else:
        with np.errstate(all="ignore"):
            values = np.asarray(spec.impl(*(a.values for a in args)))
    if values.ndim == 0:
        values = np.full(env.n, values.item())
    values = values.astype(DTYPES[expr.type], copy=False)
    if expr.type == "double":
        bad = ~np.isfinite(values)
        if bad.any():  # sqrt(-1), ln(0): NULL rather than NaN/inf in output
            nulls = bad if nulls is None else nulls | bad
    if nulls is not None:
        values = values.copy()
        values[nulls] = PLACEHOLDERS[expr.type]
    return Col(values, nulls)


def _user_call(spec: function_registry.UserFunction, name: str, args: list[Col],
               nulls: np.ndarray | None, env: Env) -> tuple[np.ndarray, np.ndarray | None]:
    """A user function over the rows whose arguments are all non-NULL (it never sees
    a NULL's placeholder), in its isolated worker (``cep.engine.udf_isolation``); the
    rows where it raised, hung or ended its process are reported with their records'
    seq and come back in the mask (NULL there)."""
    rows = None if nulls is None else ~nulls
    inputs = [a.values if rows is None or a.values.ndim == 0 else a.values[rows]
              for a in args]
    if rows is not None and not rows.any():
        return np.full(env.n, PLACEHOLDERS[spec.returns],
                       dtype=DTYPES[spec.returns]), None
    with np.errstate(all="ignore"):
        part, failed_part, messages = isolated_call(spec, tuple(inputs))
    m = env.n if rows is None else int(rows.sum())
    if part.ndim == 0:
        part = np.full(m, part.item(), dtype=part.dtype)
        failed_part = (np.full(m, bool(failed_part)) if failed_part is not None else None)
        messages = messages * m if messages else messages
    if rows is None:
        values, failed = part, failed_part
    else:
        values = np.full(env.n, PLACEHOLDERS[spec.returns], dtype=part.dtype)
        values[rows] = part
        failed = None
        if failed_part is not None:
            failed = np.zeros(env.n, dtype=bool)
            failed[rows] = failed_part
    if failed is not None:
        report(name, env.seq[failed] if env.seq is not None else None, messages)
    return values, failed


def _cast(col: Col, t: str) -> Col:
    target = DTYPES[t]
    if col.values.dtype == target:
        return col
    return Col(col.values.astype(target), col.nulls)


_EVALUATORS: dict[type, Callable[..., Col]] = {
    ir.Const: _const,
    ir.FieldRef: _field,
    ir.Agg: _agg,
    ir.Prev: _agg,
    ir.Op: _op,
    ir.InList: _in_list,
    ir.Between: _between,
    ir.Like: _like,
    ir.IsNull: _is_null,
    ir.CaseWhen: _case,
    ir.Coalesce: _coalesce,
    ir.Func: _func,
}


def collect_aggregates(exprs: list[ir.TExpr | None]) -> list[ir.Agg]:
    """Every distinct aggregate node inside the given expressions, in first-seen order."""
    return collect_nodes(exprs, ir.Agg)


def collect_window_functions(exprs: list[ir.TExpr | None]) -> list[ir.Prev]:
    """Every distinct prev/prevtail/prevcount/prior node, in first-seen order."""
    return collect_nodes(exprs, ir.Prev)


def collect_nodes(exprs: list[ir.TExpr | None], kind: type) -> list:
    """Every distinct node of type ``kind`` (not looking inside one), first-seen order."""
    found: dict[ir.TExpr, None] = {}

    def walk(e: ir.TExpr) -> None:
        if isinstance(e, kind):
            found[e] = None
            return
        for child in ir.children(e):
            walk(child)

    for e in exprs:
        if e is not None:
            walk(e)
    return list(found)


