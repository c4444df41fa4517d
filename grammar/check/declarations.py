"""Declarations: ``CREATE SCHEMA`` (an input stream) and ``CREATE VARIABLE`` (a constant).

A schema's FROM paths and FORMAT are checked here, by their syntax only
(:mod:`grammar.path_syntax`, :mod:`grammar.format_syntax`); reading them is the input
layer's job. A variable takes its ``--set`` value if one is given, else its default, which
must be a constant of its type.
"""

from __future__ import annotations

from grammar import ast, ir
from grammar.check.context import Context
from grammar.check.expressions import duration_us
from grammar.errors import RuleError, did_you_mean
from grammar.format_syntax import to_strptime
from grammar.path_syntax import split_path
from grammar.types import INTEGRAL, NUMERIC, normalise


def declare_schema(ctx: Context, stmt: ast.CreateSchema) -> None:
    """CREATE SCHEMA: an input stream with its field types, FROM paths, FORMAT and
    TIMESTAMP."""
    if stmt.name in ctx.streams:
        raise RuleError(f"stream '{stmt.name}' is already defined", stmt.pos)
    names: set[str] = set()
    fields = []
    sources: list[tuple[str, ir.FieldSource]] = []
    for f in stmt.fields:
        if f.name in names:
            raise RuleError(f"field '{f.name}' is declared twice", f.pos)
        t = normalise(f.type)
        if t is None:
            raise RuleError(
                f"unknown type '{f.type}'",
                f.pos,
                hint="types are int, long, double, boolean, string, timestamp",
            )
        names.add(f.name)
        fields.append((f.name, t))
        if (source := _field_source(f, t)) is not None:
            sources.append((f.name, source))
    if stmt.timestamp is not None:
        ts_type = dict(fields).get(stmt.timestamp)
        pos = stmt.timestamp_pos or stmt.pos
        if ts_type is None:
            raise RuleError(
                f"TIMESTAMP names unknown field '{stmt.timestamp}'",
                pos,
                hint=did_you_mean(stmt.timestamp, names),
            )
        if ts_type != "timestamp":
            raise RuleError(
                f"TIMESTAMP field '{stmt.timestamp}' has type {ts_type}, not timestamp", pos
            )
    ctx.streams[stmt.name] = ir.StreamDef(stmt.name, tuple(fields), stmt.timestamp,
                                           sources=tuple(sources),
                                           lateness_us=_lateness_us(ctx, stmt))
    ctx.input_streams.append(stmt.name)


def _lateness_us(ctx: Context, stmt: ast.CreateSchema) -> int | None:
    """``LATENESS T``: a constant time period, zero or more (None when not declared)."""
    if stmt.lateness is None:
        return None
    arg = ctx.types.constant(stmt.lateness)
    if not isinstance(arg, ir.Const):
        raise RuleError("LATENESS needs a constant time period", stmt.lateness.pos)
    us = duration_us(arg, stmt.lateness.pos)
    if us < 0:
        raise RuleError("LATENESS cannot be negative", stmt.lateness.pos,
                        hint="LATENESS is how far an event's timestamp may trail the "
                             "largest one seen before it, e.g. LATENESS 10 sec")
    return us


def declare_variable(ctx: Context, stmt: ast.CreateVariable) -> None:
    """CREATE VARIABLE: a constant, its ``--set`` override or else its default."""
    if stmt.name in ctx.variables:
        raise RuleError(f"variable '{stmt.name}' is already defined", stmt.pos)
    t = normalise(stmt.type)
    if t is None:
        raise RuleError(f"unknown type '{stmt.type}'", stmt.pos)
    if stmt.name in ctx.overrides:
        value = _parse_override(stmt.name, t, ctx.overrides[stmt.name])
    elif stmt.default is None:
        raise RuleError(
            f"variable '{stmt.name}' has no value",
            stmt.pos,
            hint=f"give a default (= ...) or pass --set {stmt.name}=VALUE",
        )
    else:
        expr = ctx.types.constant(stmt.default)
        if not isinstance(expr, ir.Const):
            raise RuleError("a variable's default must be a constant", stmt.default.pos)
        fits = expr.type == t or (t in NUMERIC and expr.type in NUMERIC) or (
            t == "long" and expr.type == "duration")
        if not fits:
            raise RuleError(
                f"variable '{stmt.name}' is {t} but its default is {expr.type}",
                stmt.default.pos,
            )
        value = float(expr.value) if t == "double" else expr.value
    ctx.variables[stmt.name] = ir.Variable(stmt.name, t, value)


def _parse_override(name: str, t: str, raw: str) -> object:
    """Turn a ``--set name=value`` string into a value of the variable's type."""
    try:
        if t in INTEGRAL:
            return int(raw)
        if t == "double":
            return float(raw)
        if t == "boolean":
            low = raw.strip().lower()
            if low not in ("true", "false"):
                raise ValueError
            return low == "true"
        if t == "string":
            return raw
    except ValueError:
        pass
    raise RuleError(f"--set {name}={raw}: '{raw}' is not a valid {t}")


def _field_source(f: ast.FieldDecl, ftype: str) -> ir.FieldSource | None:
    """A schema field's FROM paths and FORMAT, checked (None if it declares neither)."""
    for text, pos in zip(f.paths, f.paths_pos, strict=True):
        try:
            split_path(text)
        except ValueError as err:
            raise RuleError(str(err), pos) from None
    if f.format is not None:
        if ftype != "timestamp":
            raise RuleError(f"FORMAT is for timestamp fields; '{f.name}' is {ftype}",
                            f.format_pos or f.pos)
        try:
            to_strptime(f.format)
        except ValueError as err:
            raise RuleError(
                f"bad timestamp format '{f.format}': {err}", f.format_pos or f.pos,
                hint="FORMAT 'epoch_s', 'epoch_ms', 'epoch_us', 'iso', or a pattern such as "
                     "'yyyy-MM-dd HH:mm:ss' or '%Y-%m-%d %H:%M:%S'",
            ) from None
    if not f.paths and f.format is None:
        return None
    return ir.FieldSource(f.paths or (f.name,), f.format)
