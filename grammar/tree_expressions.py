"""The tree builder's expressions: operators, literals, names, calls, CASE, time periods.

Part of :mod:`grammar.tree_builder`. A time period is summed here in exact fractions of
a microsecond, its units checked to run from largest to smallest.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from lark import Token, v_args
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from grammar import ast
from grammar.errors import RuleError
from grammar.tokens import LONG_MAX, UNIT_MICROS, match_pos, token_pos
from grammar.tree_literals import decode_string, number_literal, whole_number
from grammar.types import WrittenDuration


@dataclass(frozen=True)
class _Args:
    """The arguments of a call, with DISTINCT."""

    items: tuple[ast.Expr, ...]
    distinct: bool


@v_args(meta=True)
class ExpressionRules(Transformer_NonRecursive):
    """Expressions, from operators down to names and literals."""

    def or_op(self, meta: Meta, children: list) -> ast.Binary:
        return ast.Binary("or", children[0], children[1], match_pos(meta))

    def and_op(self, meta: Meta, children: list) -> ast.Binary:
        return ast.Binary("and", children[0], children[1], match_pos(meta))

    def not_op(self, meta: Meta, children: list) -> ast.Unary:
        return ast.Unary("not", children[0], match_pos(meta))

    def neg(self, meta: Meta, children: list) -> ast.Unary:
        return ast.Unary("-", children[0], match_pos(meta))

    def binary(self, meta: Meta, children: list) -> ast.Binary:
        left, op, right = children
        return ast.Binary(op, left, right, match_pos(meta))

    def comp_op(self, meta: Meta, children: list) -> str:
        return "!=" if children[0] == "<>" else str(children[0])

    def concat_op(self, meta: Meta, children: list) -> str:
        return "||"

    def add_op(self, meta: Meta, children: list) -> str:
        return str(children[0])

    def mul_op(self, meta: Meta, children: list) -> str:
        return str(children[0])

    def is_null(self, meta: Meta, children: list) -> ast.IsNull:
        return ast.IsNull(children[0], False, match_pos(meta))

    def is_not_null(self, meta: Meta, children: list) -> ast.IsNull:
        return ast.IsNull(children[0], True, match_pos(meta))

    def in_list(self, meta: Meta, children: list) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), False, match_pos(meta))

    def not_in_list(self, meta: Meta, children: list) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), True, match_pos(meta))

    def between(self, meta: Meta, children: list) -> ast.Between:
        return ast.Between(*children, negated=False, pos=match_pos(meta))

    def not_between(self, meta: Meta, children: list) -> ast.Between:
        return ast.Between(*children, negated=True, pos=match_pos(meta))

    def like(self, meta: Meta, children: list) -> ast.Like:
        return ast.Like(children[0], children[1], False, match_pos(meta))

    def not_like(self, meta: Meta, children: list) -> ast.Like:
        return ast.Like(children[0], children[1], True, match_pos(meta))

    def number(self, meta: Meta, children: list) -> ast.Literal:
        return number_literal(children[0])

    def string(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(decode_string(children[0]), "string", match_pos(meta))

    def true(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(True, "boolean", match_pos(meta))

    def false(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(False, "boolean", match_pos(meta))

    def null(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(None, "null", match_pos(meta))

    def period_part(self, meta: Meta, children: list) -> tuple[Token, Token]:
        number, unit = children
        return number, unit

    def time_period(self, meta: Meta, children: list) -> ast.Literal:
        total = Fraction(0)
        previous_size = None
        for number, unit in children:
            number_literal(number)  # range check: keeps Fraction from expanding '1e999999'
            size = UNIT_MICROS[unit.value.lower()]
            if previous_size is not None and size >= previous_size:
                raise RuleError(
                    f"time unit '{unit.value}' out of order",
                    token_pos(unit),
                    hint="write the units from largest to smallest, each once: 1 hour 30 min",
                )
            previous_size = size
            total += Fraction(number.value) * size
        if total.denominator != 1:
            raise RuleError(
                "time period is not a whole number of microseconds", match_pos(meta)
            )
        if total > LONG_MAX:
            raise RuleError("time period is out of range", match_pos(meta))
        written = " ".join(f"{number.value} {unit.value}" for number, unit in children)
        return ast.Literal(WrittenDuration(int(total), written), "duration", match_pos(meta))

    def name(self, meta: Meta, children: list) -> ast.Name:
        return ast.Name(str(children[0]), match_pos(meta))

    def attr(self, meta: Meta, children: list) -> ast.Attr:
        base, name = children
        return ast.Attr(str(base), str(name), match_pos(meta))

    def indexed_attr(self, meta: Meta, children: list) -> ast.IndexedAttr:
        base, index, name = children
        return ast.IndexedAttr(
            str(base), whole_number(index, "an index", 0), str(name), match_pos(meta)
        )

    def call(self, meta: Meta, children: list) -> ast.Call:
        name, *args = children
        arguments = args[0] if args else _Args((), False)
        return ast.Call(name.value.lower(), arguments.items, arguments.distinct, match_pos(meta))

    def mode_call(self, meta: Meta, children: list) -> ast.Semantics:
        mode, *call = children
        return ast.Semantics(str(mode).lower(), self.call(meta, call), match_pos(meta))

    def star_arg(self, meta: Meta, children: list) -> _Args:
        return _Args((ast.Star(match_pos(meta)),), False)

    def distinct_args(self, meta: Meta, children: list) -> _Args:
        return _Args(tuple(children), True)

    def plain_args(self, meta: Meta, children: list) -> _Args:
        return _Args(tuple(children), False)

    def case(self, meta: Meta, children: list) -> ast.Case:
        whens = tuple(c for c in children if isinstance(c, tuple))
        default = children[-1] if not isinstance(children[-1], tuple) else None
        return ast.Case(whens, default, match_pos(meta))

    def when_clause(self, meta: Meta, children: list) -> tuple[ast.Expr, ast.Expr]:
        return children[0], children[1]

    def else_clause(self, meta: Meta, children: list) -> ast.Expr:
        return children[0]
