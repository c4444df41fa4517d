"""Checking ``MATCH_RECOGNIZE`` rules: the row pattern, DEFINE, MEASURES and SELECT.

Scopes: a DEFINE condition of variable V reads the candidate row as ``V.f`` (or bare
``f``), any other variable W as ``W.f`` (W's last row so far, NULL before W matched) and
``prev(V.f [, n])`` as the partition's row n (default 1) before the candidate. MEASURES
read ``V.f`` (V's last row in the match) and aggregates over one variable's rows
(``sum(B.price)``, ``first(B.price)``, ``count(B.price)``; ``count(*)`` counts the whole
match). The SELECT list reads the measures by name.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from cep.lang import ast, ir
from cep.lang.errors import Pos, RuleError, did_you_mean

if TYPE_CHECKING:
    from cep.lang.check import _Checker, _Scope

MAX_PREV = 1_000
SKIPS = ("past last row", "to next row", "to current row")


def check_recognize(checker: _Checker, stmt: ast.SelectStatement, name: str,
                    source: ast.RecognizeSource) -> ir.MatchRecognizeRule:
    """The IR of a MATCH_RECOGNIZE rule, or a located RuleError."""
    from cep.lang.check import _duration_us, _Scope

    for clause, exprs in (("WHERE", [stmt.where]), ("GROUP BY", list(stmt.group_by)),
                          ("HAVING", [stmt.having]), ("PARTITION BY", list(stmt.partition_by))):
        if exprs and exprs[0] is not None:
            raise RuleError(f"{clause} is not allowed with MATCH_RECOGNIZE: put the "
                            "condition in DEFINE or the key in its PARTITION BY", exprs[0].pos)
    stream = checker._stream(source.stream, source.pos)
    variables = _variables(source.pattern)
    defined: dict[str, ast.Expr] = {}
    for var, cond, pos in source.defines:
        if var not in variables:
            raise RuleError(f"DEFINE names '{var}', which the PATTERN does not use", pos,
                            hint=did_you_mean(var, variables))
        if var in defined:
            raise RuleError(f"variable '{var}' is defined twice", pos)
        defined[var] = cond
    if stream.name in variables:
        raise RuleError(f"pattern variable '{stream.name}' hides the stream of that name",
                        source.pattern.pos)
    key = _partition_key(source, stream)
    prev_depth = 0
    defines = []
    for var, cond in defined.items():
        rewritten, depth = _prev_refs(cond)
        prev_depth = max(prev_depth, depth)
        quals = {v: (v, stream) for v in variables}
        quals.update({f"__prev{n}": (f"__prev{n}", stream) for n in range(1, depth + 1)})
        scope = _Scope(quals, (var,))
        scope.aggregate_hint = "aggregate functions are not allowed in DEFINE"
        defines.append((var, checker._condition(rewritten, scope, "DEFINE")))
    measures = _measures(checker, source, variables, stream)
    within_us = None
    if source.within is not None:
        arg = checker._expr(source.within, _Scope({}, ()))
        if not isinstance(arg, ir.Const):
            raise RuleError("WITHIN needs a constant duration", source.within.pos)
        within_us = _duration_us(arg, source.within.pos)
        if within_us <= 0:
            raise RuleError("WITHIN needs a positive duration", source.within.pos)
        if stream.timestamp is None:
            raise RuleError(f"WITHIN needs event time, but stream '{stream.name}' has no "
                            "TIMESTAMP", source.within.pos)
    if within_us is None and checker.state_ttl_us is not None:
        # the state time-to-live bounds undecided starts as WITHIN would
        checker._ttl_needs_time([stream], source.pos, "MATCH_RECOGNIZE without WITHIN")
        within_us = checker.state_ttl_us
    row = ir.StreamDef(f"{name}#measures", tuple((c.name, _field_type(c.expr.type))
                                                 for c in measures), None)
    scope = checker._single_scope(row, source.alias)
    columns = checker._columns(stmt.select, scope, star_qualifier="", star_stream=row,
                               output=stmt.insert_into is None)
    stream_filter = checker._optional_condition(
        source.filter, checker._single_scope(stream, None), "a stream filter")
    checker._claim_key(name, key, stmt.pos)
    return ir.MatchRecognizeRule(
        name=name, stream=stream.name, filter=stream_filter, variables=variables,
        pattern=_pattern(source.pattern), defines=tuple(defines), measures=measures,
        columns=columns, skip=source.skip, within_us=within_us, prev_depth=prev_depth,
        key=key)


def _variables(node: ast.RowPattern) -> tuple[str, ...]:
    if node.kind == "var":
        return (node.name,)  # type: ignore[return-value]
    seen: dict[str, None] = {}
    for item in node.items:
        seen.update(dict.fromkeys(_variables(item)))
    return tuple(seen)


def _pattern(node: ast.RowPattern) -> ir.RPattern:
    if node.kind == "repeat" and node.high is not None and node.high < max(node.low, 1):
        raise RuleError(f"the repetition {{{node.low},{node.high}}} is empty", node.pos)
    return ir.RPattern(node.kind, node.name, tuple(_pattern(i) for i in node.items),
                       node.low, node.high, node.greedy)


def _partition_key(source: ast.RecognizeSource, stream: ir.StreamDef) -> str | None:
    if not source.partition_by:
        return None
    if len(source.partition_by) != 1:
        raise RuleError("PARTITION BY takes exactly one key field", source.partition_by[1].pos)
    expr = source.partition_by[0]
    if not isinstance(expr, ast.Name) or stream.field_type(expr.name) is None:
        raise RuleError(f"PARTITION BY needs a field of stream '{stream.name}'", expr.pos,
                        hint=did_you_mean(getattr(expr, "name", ""), dict(stream.fields)))
    return expr.name


def _prev_refs(expr: ast.Expr) -> tuple[ast.Expr, int]:
    """``prev(V.f [, n])`` as ``__prev{n}.f``, and the largest n."""
    depth = 0

    def walk(node: object) -> object:
        nonlocal depth
        if isinstance(node, ast.Call) and node.name == "prev":
            field, n = _prev_call(node)
            depth = max(depth, n)
            return ast.Attr(f"__prev{n}", field, node.pos)
        if isinstance(node, tuple):
            return tuple(walk(x) for x in node)
        if dataclasses.is_dataclass(node) and not isinstance(node, Pos):
            changes = {f.name: walk(getattr(node, f.name)) for f in dataclasses.fields(node)}
            return dataclasses.replace(node, **changes)  # type: ignore[type-var]
        return node

    return walk(expr), depth  # type: ignore[return-value]


def _prev_call(node: ast.Call) -> tuple[str, int]:
    usage = "write prev(V.field) or prev(V.field, n) with a whole number n"
    if not 1 <= len(node.args) <= 2 or not isinstance(node.args[0], ast.Attr | ast.Name):
        raise RuleError("prev() in DEFINE reads a field of an earlier row", node.pos,
                        hint=usage)
    n = 1
    if len(node.args) == 2:
        arg = node.args[1]
        if not (isinstance(arg, ast.Literal) and isinstance(arg.value, int)
                and 1 <= arg.value <= MAX_PREV):
            raise RuleError(f"the row offset of prev() must be from 1 to {MAX_PREV}",
                            arg.pos, hint=usage)
        n = arg.value
    return node.args[0].name, n


def _measures(checker: _Checker, source: ast.RecognizeSource, variables: tuple[str, ...],
              stream: ir.StreamDef) -> tuple[ir.Column, ...]:
    from cep.lang.check import _Scope

    quals = {v: (v, stream) for v in variables}
    scope: _Scope = _Scope(quals, (), aggregate=_Scope(quals, ()))
    scope.aggregate_hint = "aggregates in MEASURES read one variable's rows"
    columns: list[ir.Column] = []
    for expr, alias, pos in source.measures:
        checked = checker._expr(expr, scope)
        _one_variable_aggregates(checked, pos)
        if any(c.name == alias for c in columns):
            raise RuleError(f"measure '{alias}' is defined twice", pos)
        columns.append(ir.Column(alias, checked))
    return tuple(columns)


def _one_variable_aggregates(expr: ir.TExpr, pos: Pos) -> None:
    if isinstance(expr, ir.Agg):
        if expr.arg is not None and not isinstance(expr.arg, ir.FieldRef):
            raise RuleError(f"{expr.name}() in MEASURES takes a variable's field, e.g. "
                            f"{expr.name}(B.price)", pos)
        return
    for child in ir.children(expr):
        _one_variable_aggregates(child, pos)


def _field_type(t: str) -> str:
    return {"null": "string", "duration": "long"}.get(t, t)
