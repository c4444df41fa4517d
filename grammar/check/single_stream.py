"""Rules reading one stream: derived (stateless, no data window) and window rules.

A derived rule filters and projects each event (WHERE, a stream filter, SELECT without
aggregates). A window rule keeps a data window, per key with ``#groupwin(k)``, and may
aggregate over it in SELECT and HAVING; ``GROUP BY k`` names the same key as the
``#groupwin``, or splits a window shared by all keys where that window allows it.
"""

from __future__ import annotations

from grammar import ast, ir
from grammar.check.context import Context, refuse_clause
from grammar.check.expressions import and_all
from grammar.check.scope import single_scope
from grammar.check.select import columns
from grammar.check.stages import key_field, unique_on
from grammar.check.windows import windows
from grammar.errors import RuleError


def single_stream_rule(ctx: Context, stmt: ast.SelectStatement, name: str,
                       source: ast.StreamSource) -> ir.DerivedRule | ir.WindowRule:
    """A derived rule when the source has no data window, else a window rule."""
    stream = ctx.stream(source.stream, source.pos)
    if all(w.kind == "groupwin" for w in source.windows):
        return _derived_rule(ctx, stmt, name, source, stream)
    return _window_rule(ctx, stmt, name, source, stream)


def _derived_rule(ctx: Context, stmt: ast.SelectStatement, name: str,
                  source: ast.StreamSource, stream: ir.StreamDef) -> ir.DerivedRule:
    scope = single_scope(stream, source.alias)
    refuse_clause(stmt.group_by, "GROUP BY", "a rule without a data window")
    refuse_clause(stmt.partition_by, "PARTITION BY", "a rule without a pattern")
    if stmt.having is not None:
        raise RuleError(
            "HAVING needs aggregates over a data window",
            stmt.having.pos,
            hint="use WHERE, or add a window such as #length(10)",
        )
    filters = [
        ctx.types.condition(e, scope, clause)
        for e, clause in ((source.filter, "a stream filter"), (stmt.where, "WHERE"))
        if e is not None
    ]
    target = stmt.insert_into
    selected = columns(ctx, stmt.select, scope, star_qualifier="", star_stream=stream,
                       output=target is None)
    return ir.DerivedRule(name, stream.name, and_all(filters), selected, target)


def _window_rule(ctx: Context, stmt: ast.SelectStatement, name: str,
                 source: ast.StreamSource, stream: ir.StreamDef) -> ir.WindowRule:
    window, groupwin_key = windows(ctx, source, stream)
    if window is None:
        raise RuleError(
            "#lastevent alone holds no history; join it with a keyed window",
            source.pos,
        )
    scope = single_scope(stream, source.alias, aggregate=True)
    refuse_clause(stmt.partition_by, "PARTITION BY", "a rule without a pattern")
    key = groupwin_key
    if stmt.group_by:
        group_key = key_field(stmt.group_by, stream, "GROUP BY")
        if key is not None and group_key != key:
            raise RuleError(
                f"GROUP BY {group_key} differs from #groupwin({key})",
                stmt.group_by[0].pos,
                hint="a rule is partitioned by one key",
            )
        if key is None and window.kind not in ("time", "keepall") and not unique_on(
                window, group_key):
            raise RuleError(
                f"a #{window.kind} window shared by all keys cannot be partitioned "
                f"by {group_key}",
                stmt.group_by[0].pos,
                hint=f"use #groupwin({group_key})#{window.kind}(...) for a window per key",
            )
        key = group_key
    stream_filter = ctx.types.optional_condition(source.filter, scope, "a stream filter")
    where = ctx.types.optional_condition(stmt.where, scope, "WHERE")
    having = ctx.types.optional_condition(stmt.having, scope, "HAVING", aggregates=True)
    selected = columns(
        ctx, stmt.select, scope, star_qualifier="", star_stream=stream, aggregates=True,
        output=stmt.insert_into is None,
    )
    return ir.WindowRule(name, stream.name, stream_filter, window, where, having, selected, key)
