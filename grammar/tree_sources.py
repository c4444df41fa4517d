"""The tree builder's sources: streams with their filters and windows, event patterns.

Part of :mod:`grammar.tree_builder`. A window is checked here against what its kind
accepts (namespace and number of arguments), the same node for ``#kind(...)`` and
``.ns:kind(...)``; an event pattern (``every a -> b``) is built operator by operator.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token, v_args
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from grammar import ast
from grammar.errors import Pos, RuleError, did_you_mean
from grammar.tokens import match_pos, token_pos
from grammar.tree_literals import whole_number


@dataclass(frozen=True)
class _WindowSpec:
    """What a window kind accepts: its Esper namespace and its number of arguments."""

    namespace: str
    min_args: int
    max_args: int | None
    usage: str


_WINDOWS = {
    "length": _WindowSpec("win", 1, 1, "#length(n)"),
    "length_batch": _WindowSpec("win", 1, 1, "#length_batch(n)"),
    "time": _WindowSpec("win", 1, 1, "#time(T)"),
    "time_batch": _WindowSpec("win", 1, 1, "#time_batch(T)"),
    "keepall": _WindowSpec("win", 0, 0, "#keepall"),
    "ext_timed": _WindowSpec("win", 2, 2, "#ext_timed(timestamp_field, T)"),
    "firstlength": _WindowSpec("win", 1, 1, "#firstlength(n)"),
    "firsttime": _WindowSpec("win", 1, 1, "#firsttime(T)"),
    "time_length_batch": _WindowSpec("win", 2, 2, "#time_length_batch(T, n)"),
    "unique": _WindowSpec("std", 1, None, "#unique(expression, ...)"),
    "lastevent": _WindowSpec("std", 0, 0, "#lastevent"),
    "groupwin": _WindowSpec("std", 1, None, "#groupwin(key, ...)"),
}


@dataclass(frozen=True)
class Filter:
    """``(expr)`` after a stream name; marks the filter among a source's children."""

    expr: ast.Expr | None


def _window(
    meta: Meta, name: Token, args: tuple[ast.Expr, ...], namespace: Token | None
) -> ast.Window:
    """A window view, the same node for ``#kind(...)`` and ``.ns:kind(...)``."""
    kind = name.value.lower()
    spec = _WINDOWS.get(kind)
    if spec is None:
        raise RuleError(
            f"unknown window '{name.value}'; the windows are {', '.join(sorted(_WINDOWS))}",
            token_pos(name),
            hint=did_you_mean(kind, _WINDOWS),
        )
    if namespace is not None and namespace.value.lower() != spec.namespace:
        raise RuleError(
            f"the window '{kind}' is '{spec.namespace}:{kind}', not '{namespace.value}:{kind}'",
            token_pos(namespace),
        )
    if len(args) < spec.min_args or (spec.max_args is not None and len(args) > spec.max_args):
        raise RuleError(
            f"wrong number of arguments for window '{kind}' ({len(args)} given)",
            match_pos(meta),
            hint=f"write it as {spec.usage}",
        )
    return ast.Window(kind, args, match_pos(meta))


def split_alias(children: list) -> tuple[list, str | None]:
    """Children of a source without its trailing alias (a Token, left by ``alias``)."""
    if len(children) > 1 and isinstance(children[-1], Token):
        return children[:-1], str(children[-1])
    return children, None


@v_args(meta=True)
class SourceRules(Transformer_NonRecursive):
    """Stream and pattern sources, filters, windows and event patterns."""

    def stream_source(self, meta: Meta, children: list) -> ast.StreamSource:
        (name, *rest), alias = split_alias(children)
        filters = [c.expr for c in rest if isinstance(c, Filter)]
        windows = tuple(c for c in rest if isinstance(c, ast.Window))
        return ast.StreamSource(
            str(name), filters[0] if filters else None, windows, alias, match_pos(meta)
        )

    def filter(self, meta: Meta, children: list) -> Filter:
        if not children:
            return Filter(None)
        combined = children[0]
        for expr in children[1:]:  # Esper's `S(a = 1, b > 2)` is `S(a = 1 AND b > 2)`
            combined = ast.Binary("and", combined, expr, Pos(
                combined.pos.line, combined.pos.column, expr.pos.end_line, expr.pos.end_column))
        return Filter(combined)

    def hash_window(self, meta: Meta, children: list) -> ast.Window:
        name, *args = children
        return _window(meta, name, args[0] if args else (), None)

    def view_window(self, meta: Meta, children: list) -> ast.Window:
        namespace, name, *args = children
        return _window(meta, name, args[0] if args else (), namespace)

    def window_args(self, meta: Meta, children: list) -> tuple[ast.Expr, ...]:
        return tuple(children)

    def alias(self, meta: Meta, children: list) -> Token:
        return children[0]

    def pattern_source(self, meta: Meta, children: list) -> ast.PatternSource:
        (pattern,), alias = split_alias(children)
        return ast.PatternSource(pattern, alias, match_pos(meta))

    # -- patterns

    def pat_within(self, meta: Meta, children: list) -> ast.PatWithin:
        operand, duration = children
        return ast.PatWithin(operand, duration, match_pos(meta))

    def pat_followed_by(self, meta: Meta, children: list) -> ast.PatFollowedBy:
        return ast.PatFollowedBy(children[0], children[1], match_pos(meta))

    def pat_or_op(self, meta: Meta, children: list) -> ast.PatOr:
        return ast.PatOr(children[0], children[1], match_pos(meta))

    def pat_and_op(self, meta: Meta, children: list) -> ast.PatAnd:
        return ast.PatAnd(children[0], children[1], match_pos(meta))

    def pat_every(self, meta: Meta, children: list) -> ast.PatEvery:
        return ast.PatEvery(children[0], match_pos(meta))

    def pat_not(self, meta: Meta, children: list) -> ast.PatNot:
        return ast.PatNot(children[0], match_pos(meta))

    def pat_repeat(self, meta: Meta, children: list) -> ast.PatRepeat:
        count, operand = children
        n = whole_number(count, "a repeat count", 1)
        return ast.PatRepeat(n, operand, match_pos(meta), high=n)

    def pat_repeat_range(self, meta: Meta, children: list) -> ast.PatRepeat:
        low, high, operand = children
        return ast.PatRepeat(whole_number(low, "a repeat bound", 0), operand, match_pos(meta),
                             high=whole_number(high, "a repeat bound", 1))

    def pat_repeat_from(self, meta: Meta, children: list) -> ast.PatRepeat:
        low, operand = children
        return ast.PatRepeat(whole_number(low, "a repeat bound", 0), operand, match_pos(meta))

    def pat_repeat_upto(self, meta: Meta, children: list) -> ast.PatRepeat:
        high, operand = children
        return ast.PatRepeat(0, operand, match_pos(meta), high=whole_number(high, "a repeat bound",
                                                                        1))

    def pat_until(self, meta: Meta, children: list) -> ast.PatRepeat:
        operand, until = children
        if isinstance(operand, ast.PatRepeat) and operand.until is None:
            return ast.PatRepeat(operand.count, operand.operand, match_pos(meta), high=operand.high,
                                 until=until)
        return ast.PatRepeat(0, operand, match_pos(meta), until=until)

    def pat_tagged(self, meta: Meta, children: list) -> ast.PatAtom:
        tag, stream, *filter_ = children
        return ast.PatAtom(str(tag), str(stream), filter_[0].expr if filter_ else None,
                           match_pos(meta))

    def pat_timer(self, meta: Meta, children: list) -> ast.PatTimer:
        return ast.PatTimer(children[0], match_pos(meta))

    def pat_untagged(self, meta: Meta, children: list) -> ast.PatAtom:
        stream, *filter_ = children
        return ast.PatAtom(None, str(stream), filter_[0].expr if filter_ else None, match_pos(meta))
