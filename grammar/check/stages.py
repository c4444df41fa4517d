"""Keys and stages: which stage a rule belongs to, and the one partition key of a stage.

A stage is the set of rules reading the complex events that earlier stages' stateful
INSERT INTO rules produce (``ir.Stage``): a rule's stage is the latest stage of the
streams it reads. The stateful rules of a stage share one key field (from
``#groupwin(k)``, ``GROUP BY k`` or ``PARTITION BY k``), or all have none. An INSERT INTO
target is a stream of the rule's stage (fed by a stateless rule) or of the next one (fed
by a stateful rule's output rows), never of both.
"""

from __future__ import annotations

import dataclasses

from grammar import ast, ir
from grammar.check.context import Context, Stage
from grammar.errors import Pos, RuleError, did_you_mean
from grammar.types import schema_type


def enter_stage(ctx: Context, stmt: ast.SelectStatement) -> None:
    """Make the stage of the streams the rule reads the one being checked."""
    ctx.stage_index = max((ctx.stream_stage.get(n, 0) for n in source_streams(stmt)),
                          default=0)
    ctx.stages.setdefault(ctx.stage_index, Stage())


def source_streams(stmt: ast.SelectStatement) -> list[str]:
    """The streams named in a rule's FROM clause (pattern atoms included)."""
    names: list[str] = []
    todo: list[object] = list(stmt.sources)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.StreamSource | ast.PatAtom | ast.RecognizeSource):
            names.append(node.stream)
        elif isinstance(node, ast.PatTimer):
            continue
        elif isinstance(node, ast.PatternSource):
            todo.append(node.pattern)
        elif hasattr(node, "operand"):
            todo.append(node.operand)
            if getattr(node, "until", None) is not None:
                todo.append(node.until)
        else:
            todo.extend((node.left, node.right))  # type: ignore[attr-defined]
    return names


def rule_streams(rule: ir.StatefulRule) -> tuple[str, ...]:
    """The streams a stateful rule reads."""
    if isinstance(rule, ir.WindowRule):
        return (rule.stream,)
    if isinstance(rule, ir.JoinRule):
        return (rule.trigger_stream, rule.window_stream)
    return rule.streams


def stream_timestamps(ctx: Context, streams: tuple[str, ...]) -> frozenset[str]:
    """The TIMESTAMP fields of the streams a rule reads."""
    return frozenset(ctx.streams[s].timestamp for s in streams  # type: ignore[misc]
                     if ctx.streams[s].timestamp)


def key_field(exprs: tuple[ast.Expr, ...], stream: ir.StreamDef, clause: str) -> str:
    """The one key field a ``#groupwin(...)`` or ``GROUP BY`` names."""
    if len(exprs) != 1:
        pos = exprs[1].pos if len(exprs) > 1 else None
        raise RuleError(f"{clause} takes exactly one key field", pos)
    expr = exprs[0]
    name = expr.name if isinstance(expr, ast.Name | ast.Attr) else None
    if name is None:
        raise RuleError(f"{clause} needs a field name as the key", expr.pos)
    if stream.field_type(name) is None:
        raise RuleError(
            f"unknown field '{name}' in stream '{stream.name}'",
            expr.pos,
            hint=did_you_mean(name, dict(stream.fields)),
        )
    return name


def claim_key(stage: Stage, rule: str, key: str | None, pos: Pos) -> None:
    """All stateful rules of a stage are partitioned by the same key field, or none is."""
    same_key = "every stateful rule in a file must be partitioned by the same key"
    conflict = None
    if key is None and stage.key_owner is not None:
        conflict = (f"rule '{rule}' has no key, but rule '{stage.key_owner[0]}' is keyed by "
                    f"{stage.key}", same_key)
    elif key is not None and stage.unkeyed_owner is not None:
        conflict = (f"rule '{rule}' is keyed by {key}, but rule '{stage.unkeyed_owner[0]}' "
                    "has no key", same_key)
    elif key is not None and stage.key_owner is not None and stage.key != key:
        conflict = (f"rule '{rule}' is keyed by {key}, but rule '{stage.key_owner[0]}' "
                    f"is keyed by {stage.key}", "all keyed rules in one file must share one key")
    if conflict is not None:
        message, hint = conflict
        raise RuleError(message, pos, hint=hint)
    if key is None:
        stage.unkeyed_owner = stage.unkeyed_owner or (rule, pos)
    else:
        stage.key = key
        stage.key_owner = stage.key_owner or (rule, pos)


def unique_on(window: ir.WindowSpec, key: str) -> bool:
    """Whether a shared ``#unique`` window splits by ``key`` anyway (it is one of its
    expressions), so that GROUP BY key gives each key its own window."""
    return window.kind == "unique" and any(
        isinstance(e, ir.FieldRef) and e.name == key for e in window.unique_by)


def define_stream(
    ctx: Context, target: str, pos: Pos, columns: tuple[ir.Column, ...],
    timestamps: frozenset[str],
) -> None:
    """Declare (or check against) an INSERT INTO stream. It has a TIMESTAMP when a
    column passes on a TIMESTAMP field of the rule's streams under its own name
    (``SELECT ts, ...`` or ``b.ts AS ts``)."""
    fields = tuple((c.name, schema_type(c.expr.type)) for c in columns)
    ts = next((c.name for c in columns if c.name in timestamps
               and isinstance(c.expr, ir.FieldRef) and c.expr.name == c.name), None)
    existing = ctx.streams.get(target)
    if existing is not None:
        if existing.fields != fields:
            raise RuleError(
                f"INSERT INTO '{target}' produces columns {_fmt_fields(fields)} but the "
                f"stream has {_fmt_fields(existing.fields)}",
                pos,
            )
        return
    ctx.streams[target] = ir.StreamDef(target, fields, ts, derived=True)


def place_target(ctx: Context, stmt: ast.SelectStatement, stateful: bool, name: str) -> None:
    """An INSERT INTO target is a stream of this stage (fed by a stateless rule) or of
    the next one (fed by a stateful rule's output rows); it is fed from one stage."""
    target, pos = stmt.insert_into, stmt.insert_into_pos or stmt.pos
    stage = ctx.stage_index + 1 if stateful else ctx.stage_index
    if ctx.stream_stage.setdefault(target, stage) != stage:  # type: ignore[arg-type]
        raise RuleError(
            f"stream '{target}' is fed both by rules with state and by rules reading "
            "their results (or their inputs): its events would come from two stages",
            pos, hint="insert into two streams",
        )
    if stateful:
        rule = ctx.stage.stateful[-1]
        define_stream(ctx, target, pos, rule.columns,  # type: ignore[arg-type]
                      stream_timestamps(ctx, rule_streams(rule)))
        ctx.outputs.remove(name)
        ctx.stage.stateful[-1] = dataclasses.replace(rule, target=target)


def _fmt_fields(fields: tuple[tuple[str, str], ...]) -> str:
    return "(" + ", ".join(f"{n} {t}" for n, t in fields) + ")"
