"""Resolving and typing expressions: AST expressions → typed IR expressions.

Every clause of every rule kind comes here with the :class:`Scope` it is read in. Names
resolve to fields of the scope's streams (bare, ``alias.f``, ``tag.f``, ``tag[i].f``) or to
variables (replaced by their value); functions resolve to the language's signatures
(:mod:`grammar.signatures`), aggregates and Esper's window functions (``prev`` ...) to
where the scope allows them. Each operator and function gets the types it accepts, and
arithmetic on constants is folded (window sizes like ``2 * H`` need it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from grammar import ast, ir, signatures
from grammar.check.scope import Scope, constants_only, without_aggregates
from grammar.errors import Pos, RuleError, did_you_mean
from grammar.types import (
    INTEGRAL,
    NUMERIC,
    ORDERED,
    comparable,
    is_numeric,
    numeric_result,
    unify,
)

AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "stddev", "first", "last"})
#: aggregates only MATCH_RECOGNIZE's DEFINE and MEASURES have (Trino's): ``arbitrary(x)``
#: (the first non-null x in match order), ``max_by(x, y)`` / ``min_by(x, y)`` (x of the
#: first row, in match order, with the largest / smallest non-null y)
ROW_PATTERN_AGGREGATES = frozenset({"arbitrary", "max_by", "min_by"})
#: what min, max and the ordering argument of max_by / min_by compare in MATCH_RECOGNIZE
ROW_ORDERED = NUMERIC | {"timestamp", "string", "null"}
# Esper's data-window functions: (fewest, most) arguments; with two the first is n.
WINDOW_FUNCTIONS = {"prev": (1, 2), "prevtail": (1, 2), "prevcount": (1, 1), "prior": (2, 2)}
MICROS_PER_SECOND = 1_000_000
# prior(n, ...) keeps n events per key beyond the window: the index is capped
MAX_WINDOW_INDEX = 10_000


class ExpressionTyper:
    """Types expressions against the variables declared so far (``variables`` is the
    checker's own dict, so later declarations are seen)."""

    def __init__(self, variables: Mapping[str, ir.Variable]) -> None:
        self.variables = variables

    def condition(
        self, expr: ast.Expr, scope: Scope, clause: str, aggregates: bool = False
    ) -> ir.TExpr:
        """A boolean expression of a clause (``clause`` names it in messages)."""
        checked = self.expr(expr, scope if aggregates else without_aggregates(scope, clause))
        if checked.type not in ("boolean", "null"):
            raise RuleError(f"{clause} must be a condition, but this is {checked.type}", expr.pos)
        return checked

    def optional_condition(
        self, expr: ast.Expr | None, scope: Scope, clause: str, aggregates: bool = False
    ) -> ir.TExpr | None:
        """:meth:`condition` of a clause that may be absent."""
        if expr is None:
            return None
        return self.condition(expr, scope, clause, aggregates)

    def constant(self, node: ast.Expr) -> ir.TExpr:
        """An expression that may read variables but no fields (a constant once folded)."""
        return self.expr(node, constants_only())

    def positive_duration_us(self, node: ast.Expr, what: str,
                             constant: str = "a constant duration",
                             positive: str = "a positive duration") -> int:
        """A constant, positive time period in microseconds (WITHIN, timer:interval,
        OUTPUT EVERY); ``what`` needs ``constant`` / ``positive`` say the messages."""
        arg = self.constant(node)
        if not isinstance(arg, ir.Const):
            raise RuleError(f"{what} needs {constant}", node.pos)
        us = duration_us(arg, node.pos)
        if us <= 0:
            raise RuleError(f"{what} needs {positive}", node.pos)
        return us

    def expr(self, node: ast.Expr, scope: Scope) -> ir.TExpr:
        method: Callable[[ast.Expr, Scope], ir.TExpr] = getattr(
            self, "_e_" + type(node).__name__
        )
        return method(node, scope)

    def _e_Literal(self, node: ast.Literal, scope: Scope) -> ir.TExpr:
        return ir.Const(node.value, node.type)

    def _e_Semantics(self, node: ast.Semantics, scope: Scope) -> ir.TExpr:
        raise RuleError(f"{node.mode.upper()} applies only in MATCH_RECOGNIZE's MEASURES "
                        "and DEFINE", node.pos,
                        hint=f"{node.mode.upper()} chooses which rows of a match "
                             f"{node.call.name}() reads")

    def _e_Star(self, node: ast.Star, scope: Scope) -> ir.TExpr:
        raise RuleError("'*' is only allowed in SELECT and count(*)", node.pos)

    def _e_Name(self, node: ast.Name, scope: Scope) -> ir.TExpr:
        matches = []
        for q in scope.bare:
            stream = scope.stream_of(q)
            t = stream.field_type(node.name)
            if t is not None:
                matches.append((q, t))
        if len(matches) > 1:
            raise RuleError(
                f"'{node.name}' is ambiguous: it is a field of "
                + " and ".join(q for q, _ in matches),
                node.pos,
                hint=f"qualify it, e.g. {matches[0][0]}.{node.name}",
            )
        if matches:
            q, t = matches[0]
            self._check_visible(q, node.pos, scope)
            if q in scope.repeated:
                raise RuleError(
                    f"'{node.name}' belongs to a repeated tag; write {q}[0].{node.name}", node.pos
                )
            return ir.FieldRef(q, node.name, t)
        var = self.variables.get(node.name)
        if var is not None:
            return ir.Const(var.value, var.type)
        if node.name in scope.qualifiers:
            raise RuleError(
                f"'{node.name}' is a stream or tag, not a value",
                node.pos,
                hint=f"name one of its fields, e.g. {node.name}.<field>",
            )
        candidates = set(self.variables)
        for q in scope.bare:
            candidates.update(dict(scope.stream_of(q).fields))
        what = "field or variable" if scope.bare else "variable"
        raise RuleError(
            f"unknown {what} '{node.name}'", node.pos, hint=did_you_mean(node.name, candidates)
        )

    def _qualified(self, base: str, name: str, pos: Pos, scope: Scope) -> tuple[str, str]:
        if base not in scope.qualifiers:
            raise RuleError(
                f"unknown stream, alias or tag '{base}'",
                pos,
                hint=did_you_mean(base, scope.qualifiers),
            )
        qualifier, stream = scope.qualifiers[base]
        t = stream.field_type(name)
        if t is None:
            raise RuleError(
                f"stream '{stream.name}' has no field '{name}'",
                pos,
                hint=did_you_mean(name, dict(stream.fields)),
            )
        self._check_visible(qualifier, pos, scope)
        return qualifier, t

    def _e_Attr(self, node: ast.Attr, scope: Scope) -> ir.TExpr:
        qualifier, t = self._qualified(node.base, node.name, node.pos, scope)
        if qualifier in scope.repeated:
            raise RuleError(
                f"'{node.base}' is a repeated tag; write {node.base}[0].{node.name}", node.pos
            )
        return ir.FieldRef(qualifier, node.name, t)

    def _e_IndexedAttr(self, node: ast.IndexedAttr, scope: Scope) -> ir.TExpr:
        qualifier, t = self._qualified(node.base, node.name, node.pos, scope)
        if qualifier not in scope.repeated:
            raise RuleError(f"'{node.base}' is not a repeated tag; write {node.base}.{node.name}",
                            node.pos)
        if node.index < 0:
            raise RuleError("an index must not be negative", node.pos)
        return ir.FieldRef(qualifier, node.name, t, node.index)

    def _check_visible(self, qualifier: str, pos: Pos, scope: Scope) -> None:
        if qualifier in scope.outside_aggregate_only:
            raise RuleError(
                f"'{qualifier}' fields need an aggregate here",
                pos,
                hint=scope.forbidden_hint.get(qualifier),
            )

    def _e_Unary(self, node: ast.Unary, scope: Scope) -> ir.TExpr:
        operand = self.expr(node.operand, scope)
        if node.op == "not":
            _expect(operand, ("boolean",), node.operand.pos, "NOT")
            return ir.Op("not", (operand,), "boolean")
        if not (is_numeric(operand.type) or operand.type == "duration"):
            raise RuleError(f"cannot negate a {operand.type}", node.pos)
        if isinstance(operand, ir.Const) and operand.value is not None:
            return ir.Const(-operand.value, operand.type)  # type: ignore[operator]
        return ir.Op("neg", (operand,), operand.type)

    def _e_Binary(self, node: ast.Binary, scope: Scope) -> ir.TExpr:
        left = self.expr(node.left, scope)
        right = self.expr(node.right, scope)
        op = node.op
        if op in ("and", "or"):
            _expect(left, ("boolean",), node.left.pos, op.upper())
            _expect(right, ("boolean",), node.right.pos, op.upper())
            return ir.Op(op, (left, right), "boolean")
        if op in ("=", "!=", "<", "<=", ">", ">="):
            if not comparable(left.type, right.type):
                raise RuleError(f"cannot compare {left.type} with {right.type}", node.pos)
            if op not in ("=", "!=") and left.type not in ORDERED | {"null"}:
                raise RuleError(f"'{op}' needs ordered values, not {left.type}", node.pos)
            return ir.Op(op, (left, right), "boolean")
        if op == "||":
            _expect(left, ("string",), node.left.pos, "||")
            _expect(right, ("string",), node.right.pos, "||")
            return _fold(ir.Op("||", (left, right), "string"))
        return _fold(ir.Op(op, (left, right), _arith_type(op, left, right, node)))

    def _e_InList(self, node: ast.InList, scope: Scope) -> ir.TExpr:
        operand = self.expr(node.operand, scope)
        items = tuple(self.expr(i, scope) for i in node.items)
        for item, src in zip(items, node.items, strict=True):
            if not comparable(operand.type, item.type):
                raise RuleError(f"IN list item is {item.type}, not {operand.type}", src.pos)
        return ir.InList(operand, items, node.negated)

    def _e_Between(self, node: ast.Between, scope: Scope) -> ir.TExpr:
        operand = self.expr(node.operand, scope)
        low, high = self.expr(node.low, scope), self.expr(node.high, scope)
        for bound, src in ((low, node.low), (high, node.high)):
            if not comparable(operand.type, bound.type):
                raise RuleError(f"BETWEEN bound is {bound.type}, not {operand.type}", src.pos)
        return ir.Between(operand, low, high, node.negated)

    def _e_Like(self, node: ast.Like, scope: Scope) -> ir.TExpr:
        operand = self.expr(node.operand, scope)
        _expect(operand, ("string",), node.operand.pos, "LIKE")
        pattern = self.expr(node.pattern, scope)
        if not (isinstance(pattern, ir.Const) and isinstance(pattern.value, str)):
            raise RuleError("LIKE needs a constant string pattern", node.pattern.pos)
        return ir.Like(operand, _like_regex(pattern.value), node.negated,
                       pattern=pattern.value)

    def _e_IsNull(self, node: ast.IsNull, scope: Scope) -> ir.TExpr:
        return ir.IsNull(self.expr(node.operand, scope), node.negated)

    def _e_Case(self, node: ast.Case, scope: Scope) -> ir.TExpr:
        whens = []
        result_type = "null"
        for cond, value in node.whens:
            c = self.expr(cond, scope)
            _expect(c, ("boolean",), cond.pos, "WHEN")
            v = self.expr(value, scope)
            unified = unify(result_type, v.type)
            if unified is None:
                raise RuleError(f"CASE branches mix {result_type} and {v.type}", value.pos)
            result_type = unified
            whens.append((c, v))
        default = None
        if node.default is not None:
            default = self.expr(node.default, scope)
            unified = unify(result_type, default.type)
            if unified is None:
                raise RuleError(
                    f"CASE branches mix {result_type} and {default.type}", node.default.pos
                )
            result_type = unified
        return ir.CaseWhen(tuple(whens), default, result_type)

    def _e_Call(self, node: ast.Call, scope: Scope) -> ir.TExpr:
        name = node.name
        if name in AGGREGATES or (name in ROW_PATTERN_AGGREGATES and scope.row_pattern):
            return self._aggregate(node, scope)
        if name in ROW_PATTERN_AGGREGATES:
            raise RuleError(f"{name}() is an aggregate of MATCH_RECOGNIZE's DEFINE and "
                            "MEASURES only", node.pos)
        if name in WINDOW_FUNCTIONS:
            return self._window_function(node, scope)
        if node.distinct:
            raise RuleError(f"DISTINCT is only meaningful in aggregates, not {name}()", node.pos)
        args = tuple(self.expr(a, scope) for a in node.args)
        if name == "coalesce":
            if not args:
                raise RuleError("coalesce() needs at least one argument", node.pos)
            t = "null"
            for a, src in zip(args, node.args, strict=True):
                unified = unify(t, a.type)
                if unified is None:
                    raise RuleError(f"coalesce() mixes {t} and {a.type}", src.pos)
                t = unified
            return ir.Coalesce(args, t)
        spec = signatures.lookup(name)
        if spec is None:
            known = set(signatures.SIGNATURES) | AGGREGATES | {"coalesce"}
            raise RuleError(
                f"unknown function '{name}'", node.pos, hint=did_you_mean(name, known)
            )
        if not spec.min_args <= len(args) <= spec.max_args:
            expected = (
                str(spec.min_args)
                if spec.min_args == spec.max_args
                else f"{spec.min_args} to {spec.max_args}"
            )
            raise RuleError(f"{name}() takes {expected} arguments, got {len(args)}", node.pos)
        try:
            result = spec.result_type([a.type for a in args])
        except TypeError as err:
            raise RuleError(f"{name}(): {err}", node.pos) from None
        return ir.Func(name, args, result)

    def _window_function(self, node: ast.Call, scope: Scope) -> ir.TExpr:
        """``prev(n, e)``, ``prevtail(n, e)``, ``prevcount(e)``, ``prior(n, e)`` (Esper):
        values read off the trigger's data window, so only where aggregates are."""
        name = node.name
        if not scope.window_functions or scope.aggregate is None:
            raise RuleError(
                f"{name}() reads a data window: it is allowed only in SELECT and HAVING of a "
                "rule with a data window", node.pos,
                hint="e.g. SELECT prev(1, price) FROM S#groupwin(k)#length(5)",
            )
        fewest, most = WINDOW_FUNCTIONS[name]
        if not fewest <= len(node.args) <= most or node.distinct:
            usage = {"prev": "prev([n,] expr)", "prevtail": "prevtail([n,] expr)",
                     "prevcount": "prevcount(expr)", "prior": "prior(n, expr)"}[name]
            raise RuleError(f"wrong arguments for {name}()", node.pos, hint=f"write {usage}")
        n = 0 if name in ("prevtail", "prevcount") else 1
        if len(node.args) == 2:
            n = self._window_index(node.args[0], name)
        inner = without_aggregates(scope.aggregate, "an aggregate's argument")
        arg = self.expr(node.args[-1], inner)
        return ir.Prev(name, n, arg, "long" if name == "prevcount" else arg.type)

    def _window_index(self, node: ast.Expr, name: str) -> int:
        """The constant index ``n`` of ``prev(n, e)`` and friends."""
        message = (f"the index of {name}() must be a whole-number constant from 0 to "
                   f"{MAX_WINDOW_INDEX}")
        try:
            index = self.constant(node)
        except RuleError:
            raise RuleError(message, node.pos) from None
        value = index.value if isinstance(index, ir.Const) else None
        if not (index.type in INTEGRAL and isinstance(value, int)
                and 0 <= value <= MAX_WINDOW_INDEX):
            raise RuleError(message, node.pos)
        return value

    def _aggregate(self, node: ast.Call, scope: Scope) -> ir.TExpr:
        name = node.name
        if scope.aggregate is None:
            raise RuleError(
                f"aggregate function {name}() is not allowed here", node.pos,
                hint=scope.aggregate_hint,
            )
        if node.distinct:
            raise RuleError(f"{name}(DISTINCT ...) is not supported", node.pos)
        inner = without_aggregates(scope.aggregate, "an aggregate's argument")
        if name == "count" and len(node.args) == 1 and isinstance(node.args[0], ast.Star):
            return ir.Agg("count", None, "long")
        if name in ("max_by", "min_by"):
            return self._aggregate_by(node, inner)
        if len(node.args) != 1:
            raise RuleError(f"{name}() takes one argument", node.pos)
        arg = self.expr(node.args[0], inner)
        t = arg.type
        if name == "count":
            return ir.Agg("count", arg, "long")
        if name in ("sum", "avg", "stddev"):
            if not is_numeric(t):
                raise RuleError(f"{name}() needs a number, not {t}", node.args[0].pos)
            if name == "sum":
                return ir.Agg("sum", arg, "long" if t in INTEGRAL else "double")
            return ir.Agg(name, arg, "double")
        if name in ("min", "max") and t not in NUMERIC | {"timestamp", "null"} and not (
                scope.row_pattern and t in ROW_ORDERED):
            raise RuleError(f"{name}() needs a number or timestamp, not {t}", node.args[0].pos)
        return ir.Agg(name, arg, t)

    def _aggregate_by(self, node: ast.Call, inner: Scope) -> ir.TExpr:
        """``max_by(x, y)`` / ``min_by(x, y)``: x's type; y must be ordered."""
        if len(node.args) != 2:
            raise RuleError(f"{node.name}() takes two arguments", node.pos,
                            hint=f"write {node.name}(value, ordering)")
        arg, by = (self.expr(a, inner) for a in node.args)
        if by.type not in ROW_ORDERED:
            raise RuleError(f"{node.name}() orders by a number, timestamp or string, not "
                            f"{by.type}", node.args[1].pos)
        return ir.Agg(node.name, arg, arg.type, by)


def _expect(expr: ir.TExpr, types: tuple[str, ...], pos: Pos, what: str) -> None:
    if expr.type not in types and expr.type != "null":
        raise RuleError(f"{what} needs {' or '.join(types)}, not {expr.type}", pos)


def _arith_type(op: str, left: ir.TExpr, right: ir.TExpr, node: ast.Binary) -> str:
    lt, rt = left.type, right.type
    if lt == "timestamp" or rt == "timestamp":
        if op == "-" and lt == rt == "timestamp":
            return "duration"
        if op in ("+", "-") and lt == "timestamp" and rt in ("duration", "null"):
            return "timestamp"
        raise RuleError(f"cannot apply '{op}' to {lt} and {rt}", node.pos)
    if "duration" in (lt, rt):
        if op in ("+", "-") and {lt, rt} <= {"duration", "null"}:
            return "duration"
        if op in ("*", "/") and (lt in INTEGRAL or rt in INTEGRAL):
            return "duration"
        raise RuleError(f"cannot apply '{op}' to {lt} and {rt}", node.pos)
    if not (is_numeric(lt) and is_numeric(rt)):
        bad = lt if not is_numeric(lt) else rt
        raise RuleError(f"'{op}' needs numbers, not {bad}", node.pos)
    if op == "/":
        return "double"
    return numeric_result(lt, rt) if "null" not in (lt, rt) else (lt if rt == "null" else rt)


def _fold(expr: ir.Op) -> ir.TExpr:
    """Fold arithmetic on constants (window sizes like ``2 * H`` need it)."""
    if not all(isinstance(a, ir.Const) for a in expr.args):
        return expr
    values = [a.value for a in expr.args]  # type: ignore[union-attr]
    if any(v is None for v in values):
        return ir.Const(None, expr.type)
    a, b = values
    try:
        result = {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: a / b,
            "%": lambda: a % b,
            "||": lambda: a + b,
        }[expr.op]()
    except (ZeroDivisionError, TypeError, OverflowError):
        return expr
    if expr.type in INTEGRAL or expr.type == "duration":
        if isinstance(result, float):
            return expr
        result = int(result)
    return ir.Const(result, expr.type)


def duration_us(arg: ir.Const, pos: Pos) -> int:
    """A duration literal, or a number of seconds (Esper's convention)."""
    if arg.type == "duration":  # an int, written (grammar.types.WrittenDuration) or folded
        return arg.value if isinstance(arg.value, int) else int(arg.value)  # type: ignore
    if arg.type in NUMERIC:
        return round(float(arg.value) * MICROS_PER_SECOND)  # type: ignore[arg-type]
    raise RuleError(f"expected a time period such as 10 min, not {arg.type}", pos)


def _like_regex(pattern: str) -> str:
    """A LIKE pattern as a regular expression for ``fullmatch`` that never backtracks
    more than linearly.

    The plain translation (``%`` → ``.*``) lets ``'%a%a%a%a%a%b'`` take minutes on an
    80-character text. Between two ``%`` a piece has a fixed length, so its leftmost
    occurrence is as good as any later one: each middle piece is found with a lazy scan
    in an atomic group, which commits to that occurrence. Only the last ``.*`` backtracks.
    """
    pieces = ["".join("." if ch == "_" else re.escape(ch) for ch in piece)
              for piece in pattern.split("%")]
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>.*?{piece})" for piece in pieces[1:-1] if piece)
    return f"{pieces[0]}{middle}.*{pieces[-1]}"


def and_all(conds: list[ir.TExpr]) -> ir.TExpr | None:
    """The conjunction of typed conditions (None for none)."""
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = ir.Op("and", (out, c), "boolean")
    return out


def qualifiers_of(expr: ir.TExpr) -> set[str]:
    """The qualifiers an expression reads."""
    if isinstance(expr, ir.FieldRef):
        return {expr.qualifier}
    out: set[str] = set()
    for child in ir.children(expr):
        out |= qualifiers_of(child)
    return out
