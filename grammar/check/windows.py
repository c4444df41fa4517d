"""Data windows: ``#length(n)``, ``#time(T)``, ``#groupwin(k)#...``, ``#lastevent`` ...

A stream source may carry one data window, before it a ``#groupwin(k)`` (a window per
key) and instead of it ``#lastevent`` (a join's trigger side). Sizes are constants
(variables allowed): a positive count, or a positive time period, which needs the
stream's TIMESTAMP since windows run on event time.
"""

from __future__ import annotations

from grammar import ast, ir
from grammar.check.context import Context, ttl_needs_time
from grammar.check.expressions import duration_us
from grammar.check.scope import single_scope
from grammar.check.stages import key_field
from grammar.errors import RuleError
from grammar.types import INTEGRAL

WINDOW_KINDS = frozenset({"length", "length_batch", "time", "time_batch", "keepall",
                          "ext_timed", "firstlength", "firsttime", "time_length_batch",
                          "unique"})
TIME_SIZED = frozenset({"time", "time_batch", "firsttime", "time_length_batch"})
# the windows a #lastevent join can read
SLIDING = frozenset({"length", "time", "keepall"})


def windows(
    ctx: Context, source: ast.StreamSource, stream: ir.StreamDef
) -> tuple[ir.WindowSpec | None, str | None]:
    """The data window of a source and its #groupwin key (either may be None)."""
    key: str | None = None
    window: ir.WindowSpec | None = None
    lastevent = False
    for w in source.windows:
        if w.kind == "groupwin":
            if window is not None or lastevent:
                raise RuleError("#groupwin must come before the window it groups", w.pos)
            key = key_field(w.args, stream, "#groupwin")
        elif w.kind == "lastevent":
            if window is not None or lastevent or key is not None:
                raise RuleError("#lastevent cannot be combined with other windows", w.pos)
            lastevent = True
        elif w.kind in WINDOW_KINDS:
            if window is not None or lastevent:
                raise RuleError("only one data window per stream is supported", w.pos)
            window = _window_spec(ctx, w, stream)
        else:
            raise RuleError(f"unknown window '{w.kind}'", w.pos)
    if key is not None and window is None:
        pos = source.windows[-1].pos
        raise RuleError(
            "#groupwin needs a data window after it", pos, hint="e.g. #groupwin(k)#length(10)"
        )
    return window, key


def _window_spec(ctx: Context, w: ast.Window, stream: ir.StreamDef) -> ir.WindowSpec:
    if w.kind == "ext_timed":
        return _window_spec(ctx, _ext_timed(w, stream), stream)
    if w.kind == "keepall":
        if w.args:
            raise RuleError("#keepall takes no arguments", w.pos)
        if ctx.state_ttl_us is not None:
            ttl_needs_time([stream], w.pos, "#keepall")
        return ir.WindowSpec("keepall", 0, ctx.state_ttl_us)
    if w.kind == "unique":
        scope = single_scope(stream, None)
        return ir.WindowSpec("unique", 0, unique_by=tuple(
            ctx.types.expr(arg, scope) for arg in w.args))
    if w.kind == "time_length_batch":
        if len(w.args) != 2:
            raise RuleError("#time_length_batch takes a time period and a count", w.pos)
        size = _window_size(ctx, w, w.args[0], stream, time=True)
        limit = _window_size(ctx, w, w.args[1], stream, time=False)
        return ir.WindowSpec(w.kind, size, limit=limit)
    if len(w.args) != 1:
        raise RuleError(f"#{w.kind} takes one argument", w.pos)
    return ir.WindowSpec(w.kind, _window_size(ctx, w, w.args[0], stream,
                                          time=w.kind in TIME_SIZED))


def _window_size(ctx: Context, w: ast.Window, expr: ast.Expr, stream: ir.StreamDef,
                 time: bool) -> int:
    """A window's size argument: a positive count, or a positive time period."""
    try:
        arg = ctx.types.constant(expr)
    except RuleError as err:
        if not (isinstance(expr, ast.Name) and stream.field_type(expr.name) is not None):
            raise
        raise RuleError(
            f"the size of #{w.kind} must be a constant or a variable, not a field",
            expr.pos,
        ) from err
    if not isinstance(arg, ir.Const):
        raise RuleError(
            f"the size of #{w.kind} must be a constant or a variable", expr.pos
        )
    if time:
        if stream.timestamp is None:
            raise RuleError(
                f"#{w.kind} needs event time, but stream '{stream.name}' has no TIMESTAMP",
                w.pos,
                hint=f"declare it: CREATE SCHEMA {stream.name} (...) TIMESTAMP field",
            )
        size = duration_us(arg, expr.pos)
    else:
        if arg.type not in INTEGRAL:
            raise RuleError(f"#{w.kind} needs a whole number, got {arg.type}", expr.pos)
        size = int(arg.value)  # type: ignore[call-overload]
    if size <= 0:
        raise RuleError(f"#{w.kind} needs a positive size", expr.pos)
    return size


def _ext_timed(w: ast.Window, stream: ir.StreamDef) -> ast.Window:
    """Esper's ``#ext_timed(field, T)`` is ``#time(T)`` when ``field`` is the stream's
    TIMESTAMP (cep's windows always run on event time); other fields are refused."""
    ts_expr = w.args[0]
    name = ts_expr.name if isinstance(ts_expr, ast.Name | ast.Attr) else None
    if stream.timestamp is None or name != stream.timestamp:
        raise RuleError(
            "#ext_timed must name the stream's TIMESTAMP field"
            + (f" ('{stream.timestamp}')" if stream.timestamp else
               f", but stream '{stream.name}' has none"),
            ts_expr.pos,
            hint="cep's time windows run on the TIMESTAMP field declared in CREATE SCHEMA",
        )
    return ast.Window("time", w.args[1:], w.pos)
