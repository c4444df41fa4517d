"""``MATCH_RECOGNIZE`` rules (row pattern recognition): the row pattern, DEFINE, MEASURES
and SELECT.

Scopes: a DEFINE condition of variable V reads the candidate row as ``V.f`` (or bare
``f``), any other variable W as ``W.f`` (W's last row so far, NULL before W matched) and
``prev(V.f [, n])`` as the partition's row n (default 1) before the candidate. MEASURES
read ``V.f`` (V's last row in the match) and aggregates over one variable's rows
(``sum(B.price)``, ``first(B.price)``, ``count(B.price)``; ``count(*)`` counts the whole
match). The SELECT list reads the measures by name.
"""

from __future__ import annotations

import dataclasses

from grammar import ast, ir
from grammar.check.context import Context, ttl_needs_time
from grammar.check.scope import Scope, single_scope
from grammar.check.select import columns
from grammar.errors import Pos, RuleError, did_you_mean
from grammar.types import schema_type

MAX_PREV = 1_000


def recognize_rule(ctx: Context, stmt: ast.SelectStatement, name: str,
                   source: ast.RecognizeSource) -> ir.MatchRecognizeRule:
    """The IR of a MATCH_RECOGNIZE rule, or a located RuleError."""
    for clause, exprs in (("WHERE", [stmt.where]), ("GROUP BY", list(stmt.group_by)),
                          ("HAVING", [stmt.having]), ("PARTITION BY", list(stmt.partition_by))):
        if exprs and exprs[0] is not None:
            raise RuleError(f"{clause} is not allowed with MATCH_RECOGNIZE: put the "
                            "condition in DEFINE or the key in its PARTITION BY", exprs[0].pos)
    stream = ctx.stream(source.stream, source.pos)
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
        scope = Scope(quals, (var,))
        scope.aggregate_hint = "aggregate functions are not allowed in DEFINE"
        defines.append((var, ctx.types.condition(rewritten, scope, "DEFINE")))
    measures = _measures(ctx, source, variables, stream)
    within_us = None
    if source.within is not None:
        within_us = ctx.types.positive_duration_us(source.within, "WITHIN")
        if stream.timestamp is None:
            raise RuleError(f"WITHIN needs event time, but stream '{stream.name}' has no "
                            "TIMESTAMP", source.within.pos)
    if within_us is None and ctx.state_ttl_us is not None:
        # the state time-to-live bounds undecided starts as WITHIN would
        ttl_needs_time([stream], source.pos, "MATCH_RECOGNIZE without WITHIN")
        within_us = ctx.state_ttl_us
    row = ir.StreamDef(f"{name}#measures", tuple((c.name, schema_type(c.expr.type))
                                                 for c in measures), None)
    scope = single_scope(row, source.alias)
    selected = columns(ctx, stmt.select, scope, star_qualifier="", star_stream=row,
                       output=stmt.insert_into is None)
    stream_filter = ctx.types.optional_condition(
        source.filter, single_scope(stream, None), "a stream filter")
    return ir.MatchRecognizeRule(
        name=name, stream=stream.name, filter=stream_filter, variables=variables,
        pattern=_pattern(source.pattern), defines=tuple(defines), measures=measures,
        columns=selected, skip=source.skip, within_us=within_us, prev_depth=prev_depth,
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


def _measures(ctx: Context, source: ast.RecognizeSource, variables: tuple[str, ...],
              stream: ir.StreamDef) -> tuple[ir.Column, ...]:
    quals = {v: (v, stream) for v in variables}
    scope = Scope(quals, (), aggregate=Scope(quals, ()))
    scope.aggregate_hint = "aggregates in MEASURES read one variable's rows"
    columns: list[ir.Column] = []
    for expr, alias, pos in source.measures:
        checked = ctx.types.expr(expr, scope)
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
