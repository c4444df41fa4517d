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

import itertools

from grammar import ast, ir
from grammar.check.context import Context, ttl_needs_time
from grammar.check.row_navigation import Navigation
from grammar.check.scope import Scope, single_scope
from grammar.check.select import columns
from grammar.errors import RuleError, did_you_mean
from grammar.row_nav import ALL, CLASSIFIER, MATCH, MATCH_NUMBER, final_qualifier
from grammar.types import schema_type

MAX_PERMUTE = 5


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
    unions = _unions(source, variables)
    key = _partition_key(source, stream)
    rows = ir.StreamDef(stream.name, (*stream.fields, (CLASSIFIER, "string"),
                                      (MATCH_NUMBER, "long")), stream.timestamp)
    fields = frozenset(dict(stream.fields))
    prev_depth = 0
    defines = []
    for var, cond in defined.items():
        nav = Navigation(variables, fields, unions, define=var)
        rewritten = nav.rewrite(cond)
        prev_depth = max(prev_depth, nav.depth)
        quals = _qualifiers((*variables, *unions), nav, rows)
        quals.update({q: (q, rows) for q in nav.around})
        scope = Scope(quals, (var,), aggregate=Scope(quals, ()), row_pattern=True)
        checked = ctx.types.condition(rewritten, scope, "DEFINE",  # type: ignore[arg-type]
                                      aggregates=True)
        defines.append((var, checked))
    measures, final = _measures(ctx, source, variables, fields, rows, unions)
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
    out_fields = [(c.name, schema_type(c.expr.type)) for c in measures]
    if source.rows == "all":
        clash = [n for n, _ in out_fields if stream.field_type(n) is not None]
        if clash:
            pos = next(p for _, n, p, _ in source.measures if n == clash[0])
            raise RuleError(f"measure '{clash[0]}' has the name of a field of stream "
                            f"'{stream.name}', which ALL ROWS PER MATCH outputs too", pos)
        out_fields = [*stream.fields, *out_fields]
    row = ir.StreamDef(f"{name}#measures", tuple(out_fields), None)
    scope = single_scope(row, source.alias)
    selected = columns(ctx, stmt.select, scope, star_qualifier="", star_stream=row,
                       output=stmt.insert_into is None)
    stream_filter = ctx.types.optional_condition(
        source.filter, single_scope(stream, None), "a stream filter")
    skip_var = None
    if source.skip_to is not None:
        skip_var, pos = source.skip_to
        if skip_var not in variables and skip_var not in unions:
            raise RuleError(f"AFTER MATCH SKIP {source.skip.upper()} names '{skip_var}', "
                            "which the PATTERN does not use", pos,
                            hint=did_you_mean(skip_var, variables))
    return ir.MatchRecognizeRule(
        name=name, stream=stream.name, filter=stream_filter, variables=variables,
        pattern=_pattern(source.pattern), defines=tuple(defines), measures=measures,
        columns=selected, skip=source.skip, within_us=within_us, prev_depth=prev_depth,
        key=key, skip_var=skip_var, rows=source.rows, empty=source.empty, final=final,
        unions=tuple(unions.items()))


def _unions(source: ast.RecognizeSource, variables: tuple[str, ...]
            ) -> dict[str, tuple[str, ...]]:
    """SUBSET's union variables, checked: new names, each of pattern variables."""
    unions: dict[str, tuple[str, ...]] = {}
    for name, members, pos in source.subsets:
        if name in variables or name in unions:
            raise RuleError(f"SUBSET names '{name}', which is already a variable", pos)
        for member in members:
            if member not in variables:
                raise RuleError(f"SUBSET {name} names '{member}', which the PATTERN does "
                                "not use", pos, hint=did_you_mean(member, variables))
        unions[name] = tuple(dict.fromkeys(members))
    return unions


def _qualifiers(variables: tuple[str, ...], nav: Navigation, rows: ir.StreamDef
                ) -> dict[str, tuple[str, ir.StreamDef]]:
    """What the qualifiers of a rewritten DEFINE or measure mean (an aggregate's
    argument may carry FINAL: ``grammar.row_nav.final_qualifier``)."""
    quals = {v: (v, rows) for v in (*variables, *nav.codes, ALL, MATCH)}
    quals.update({final_qualifier(v): (final_qualifier(v), rows)
                  for v in (*variables, ALL, MATCH)})
    return quals


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
    if node.kind == "empty":
        return ir.RPattern("seq")
    items = tuple(_pattern(i) for i in node.items)
    if node.kind == "permute":
        if len(items) > MAX_PERMUTE:
            raise RuleError(f"PERMUTE takes at most {MAX_PERMUTE} items (it stands for "
                            "every order of them)", node.pos)
        # every order, the earlier in the list's lexicographic order preferred
        return ir.RPattern("alt", items=tuple(
            ir.RPattern("seq", items=order) for order in itertools.permutations(items)))
    return ir.RPattern(node.kind, node.name, items, node.low, node.high, node.greedy)


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


def _measures(ctx: Context, source: ast.RecognizeSource, variables: tuple[str, ...],
              fields: frozenset[str], rows: ir.StreamDef,
              unions: dict[str, tuple[str, ...]]
              ) -> tuple[tuple[ir.Column, ...], tuple[str, ...]]:
    """The measures, and the names of those with FINAL semantics."""
    columns: list[ir.Column] = []
    final = []
    for expr, alias, pos, semantics in source.measures:
        nav = Navigation(variables, fields, unions, final=semantics == "final")
        rewritten = nav.rewrite(expr)
        quals = _qualifiers((*variables, *unions), nav, rows)
        scope = Scope(quals, (), aggregate=Scope(quals, ()), row_pattern=True)
        scope.aggregate_hint = "aggregates in MEASURES read one variable's rows"
        checked = ctx.types.expr(rewritten, scope)  # type: ignore[arg-type]
        if any(c.name == alias for c in columns):
            raise RuleError(f"measure '{alias}' is defined twice", pos)
        columns.append(ir.Column(alias, checked))
        if semantics == "final":
            final.append(alias)
    return tuple(columns), tuple(final)
