"""``#lastevent`` joins: each event of one stream meets the keyed window of another.

``FROM S#lastevent AS LE, W#groupwin(k)#length(10) AS TW WHERE LE.k = TW.k``: the
trigger side (``#lastevent``) is the event that arrives, the window side the rows of its
key in a sliding window. WHERE must equate the key; its other conjuncts that read the
trigger alone filter triggers, the rest filter pairs. The window side has many rows per
event, so outside aggregates only the trigger's fields may be selected.
"""

from __future__ import annotations

from collections.abc import Iterable

from grammar import ast, ir
from grammar.check.context import Context, refuse_clause
from grammar.check.expressions import and_all, qualifiers_of
from grammar.check.scope import Scope, single_scope
from grammar.check.select import columns
from grammar.check.stages import key_field
from grammar.check.windows import SLIDING, windows
from grammar.errors import RuleError


def join_rule(ctx: Context, stmt: ast.SelectStatement, name: str, first: ast.StreamSource,
              second: ast.StreamSource) -> ir.JoinRule:
    """The IR of a join of two stream sources (either order), or a located RuleError."""

    def is_last(s: ast.StreamSource) -> bool:
        return any(w.kind == "lastevent" for w in s.windows)

    if is_last(first) == is_last(second):
        raise RuleError(
            "a join needs one #lastevent stream and one keyed window",
            stmt.sources[0].pos,
            hint="e.g. FROM S#lastevent AS LE, S#groupwin(k)#length(10) AS W "
            "WHERE LE.k = W.k",
        )
    trig, win = (first, second) if is_last(first) else (second, first)
    trig_stream = ctx.stream(trig.stream, trig.pos)
    win_stream = ctx.stream(win.stream, win.pos)
    trig_window, _ = windows(ctx, trig, trig_stream)
    window, key = windows(ctx, win, win_stream)
    if trig_window is not None:
        raise RuleError("#lastevent cannot be combined with a data window", trig.pos)
    if window is None or key is None:
        raise RuleError(
            "the joined window must be keyed: #groupwin(k)#length(n) or #time(T)", win.pos
        )
    if window.is_batch:
        raise RuleError("a #lastevent join needs a sliding window, not a batch", win.pos)
    if window.kind not in SLIDING:
        raise RuleError(f"a #lastevent join supports #length, #time and #keepall windows, "
                        f"not #{window.kind}", win.pos)
    t_alias = trig.alias or trig.stream
    w_alias = win.alias or win.stream
    if t_alias == w_alias:
        raise RuleError("the two sides of a join need different aliases", win.pos)
    if trig_stream.field_type(key) is None:
        raise RuleError(
            f"the #lastevent stream '{trig_stream.name}' has no key field '{key}'", trig.pos
        )
    refuse_clause(stmt.partition_by, "PARTITION BY", "a join")
    if stmt.group_by:
        gk = key_field(stmt.group_by, trig_stream, "GROUP BY")
        if gk != key:
            raise RuleError(f"GROUP BY {gk} differs from #groupwin({key})",
                            stmt.group_by[0].pos)
    t_scope = single_scope(trig_stream, trig.alias)
    w_scope = single_scope(win_stream, win.alias)
    quals = {t_alias: (t_alias, trig_stream), w_alias: (w_alias, win_stream)}
    pair_scope = Scope(quals, (t_alias, w_alias))
    outer = Scope(
        quals,
        (t_alias, w_alias),
        aggregate=pair_scope,
        outside_aggregate_only=frozenset({w_alias}),
        forbidden_hint={
            w_alias: f"'{w_alias}' has many rows per event: use it inside an aggregate, "
            f"e.g. max({w_alias}.x)"
        },
    )
    trig_filter = ctx.types.optional_condition(trig.filter, t_scope, "a stream filter")
    win_filter = ctx.types.optional_condition(win.filter, w_scope, "a stream filter")
    trig_conds: list[ir.TExpr] = []
    pair_conds: list[ir.TExpr] = []
    has_key_equality = False
    for conj in _conjuncts(stmt.where):
        cond = ctx.types.condition(conj, pair_scope, "WHERE")
        quals_used = qualifiers_of(cond)
        if _is_key_equality(cond, t_alias, w_alias, key):
            has_key_equality = True
        elif quals_used <= {t_alias}:
            trig_conds.append(cond)
        else:
            pair_conds.append(cond)
    if not has_key_equality:
        raise RuleError(
            f"a #lastevent join must match the key: add WHERE {t_alias}.{key} = "
            f"{w_alias}.{key}",
            stmt.where.pos if stmt.where is not None else stmt.pos,
        )
    having = ctx.types.optional_condition(stmt.having, outer, "HAVING", aggregates=True)
    selected = columns(
        ctx, stmt.select, outer, star_qualifier=t_alias, star_stream=trig_stream,
        aggregates=True, output=stmt.insert_into is None,
    )
    return ir.JoinRule(
        name=name,
        trigger_stream=trig_stream.name,
        trigger_alias=t_alias,
        trigger_filter=trig_filter,
        trigger_where=and_all(trig_conds),
        window_stream=win_stream.name,
        window_alias=w_alias,
        window_filter=win_filter,
        window=window,
        pair_where=and_all(pair_conds),
        having=having,
        columns=selected,
        key=key,
    )


def _conjuncts(expr: ast.Expr | None) -> Iterable[ast.Expr]:
    """The operands of a chain of ANDs."""
    if expr is None:
        return
    if isinstance(expr, ast.Binary) and expr.op == "and":
        yield from _conjuncts(expr.left)
        yield from _conjuncts(expr.right)
    else:
        yield expr


def _is_key_equality(cond: ir.TExpr, a: str, b: str, key: str) -> bool:
    if not (isinstance(cond, ir.Op) and cond.op == "="):
        return False
    left, right = cond.args
    if not (isinstance(left, ir.FieldRef) and isinstance(right, ir.FieldRef)):
        return False
    return {left.qualifier, right.qualifier} == {a, b} and left.name == right.name == key
