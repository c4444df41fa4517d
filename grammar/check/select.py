"""The SELECT list: its columns, their names, and ``*`` expanded.

An expression without ``AS`` is named after its field, or after its own text
(``SELECT a + 1`` makes a column ``a + 1``). Output rows (not INSERT INTO streams) start
with ``rule, key, seq, ts``, so a column may not take those names; ``SELECT *`` renames a
clashing field to ``name_``.
"""

from __future__ import annotations

from grammar import ast, ir
from grammar.check.context import Context
from grammar.check.scope import Scope, without_aggregates
from grammar.errors import Pos, RuleError, did_you_mean

# every output row starts with these; SELECT * renames a clashing field to name_
RESERVED_COLUMNS = ("rule", "key", "seq", "ts")


def columns(
    ctx: Context,
    items: tuple[ast.SelectItem, ...],
    scope: Scope,
    *,
    star_qualifier: str | None,
    star_stream: ir.StreamDef | None,
    aggregates: bool = False,
    output: bool = True,
) -> tuple[ir.Column, ...]:
    """The SELECT list; ``output`` rows carry rule/key/seq/ts, so those names clash
    there (not in INSERT INTO streams)."""
    out: list[ir.Column] = []
    owners: list[ast.SelectItem] = []
    for item in items:
        if isinstance(item.expr, ast.Star):
            expanded = _star(item.expr, scope, star_qualifier, star_stream, output)
        else:
            inner = scope if aggregates else without_aggregates(scope, "SELECT")
            expr = ctx.types.expr(item.expr, inner)
            name = item.alias or _column_name(ctx.module.source, item.expr)
            expanded = [ir.Column(name, expr)]
        out.extend(expanded)
        owners.extend([item] * len(expanded))
    seen: set[str] = set()
    for col, item in zip(out, owners, strict=True):
        if col.name in seen or (output and col.name in RESERVED_COLUMNS):
            raise RuleError(
                f"output column '{col.name}' is defined twice or clashes with the "
                "output fields rule, key, seq, ts",
                item.pos,
                hint="give it another name with AS",
            )
        seen.add(col.name)
    return tuple(out)


def _star(
    star: ast.Star,
    scope: Scope,
    default_qualifier: str | None,
    default_stream: ir.StreamDef | None,
    output: bool,
) -> list[ir.Column]:
    if star.base is not None:
        if star.base not in scope.qualifiers:
            raise RuleError(
                f"unknown alias '{star.base}'",
                star.pos,
                hint=did_you_mean(star.base, scope.qualifiers),
            )
        qualifier, stream = scope.qualifiers[star.base]
        if qualifier in scope.repeated:
            raise RuleError(
                f"'{star.base}' is a repeated tag: '{star.base}.*' has no one row to read",
                star.pos, hint=f"name its fields with an index, e.g. "
                f"{star.base}[0].{stream.fields[0][0]}",
            )
        if qualifier in scope.outside_aggregate_only:
            raise RuleError(
                f"'{star.base}.*' has many rows per event", star.pos,
                hint=scope.forbidden_hint.get(qualifier),
            )
    elif default_stream is None or default_qualifier is None:
        raise RuleError(
            "SELECT * is not available here; name the columns", star.pos,
            hint="in a pattern write tag.field, e.g. a.id",
        )
    else:
        qualifier, stream = default_qualifier, default_stream
    expanded = []
    for n, t in stream.fields:
        if output and n in RESERVED_COLUMNS:
            if n == "ts" and n == stream.timestamp:
                continue  # the output row's own ts already is this event's time
            expanded.append(ir.Column(n + "_", ir.FieldRef(qualifier, n, t)))
        else:
            expanded.append(ir.Column(n, ir.FieldRef(qualifier, n, t)))
    return expanded


def _column_name(source: str, expr: ast.Expr) -> str:
    if isinstance(expr, ast.Name | ast.Attr | ast.IndexedAttr):
        return expr.name
    return source_slice(source, expr.pos)


def source_slice(source: str, pos: Pos) -> str:
    """The rule text at ``pos`` on one line, blanks collapsed ("expr" if there is none)."""
    lines = source.split("\n")
    if not (1 <= pos.line <= len(lines)) or pos.end_line < pos.line:
        return "expr"
    if pos.end_line == pos.line:
        text = lines[pos.line - 1][pos.column - 1 : pos.end_column - 1]
    else:
        parts = [lines[pos.line - 1][pos.column - 1 :]]
        parts += lines[pos.line : pos.end_line - 1]
        parts.append(lines[pos.end_line - 1][: pos.end_column - 1])
        text = " ".join(parts)
    return " ".join(text.split()) or "expr"
