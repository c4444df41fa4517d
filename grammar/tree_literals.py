"""Tokens decoded into values for the tree builder: type names, numbers, strings.

Part of :mod:`grammar.tree_builder`. Numbers and strings are decoded here, never
evaluated as Python, and their ranges checked: an int is 32-bit, a long 64-bit, a
double finite, a count or an index a small whole number; a string's escapes are the
language's few.
"""

from __future__ import annotations

from lark import Token

from grammar import ast
from grammar.errors import Pos, RuleError, did_you_mean
from grammar.tokens import INT_MAX, LONG_MAX, clip, token_pos

_TYPES = {
    "int": "int", "integer": "int",
    "long": "long", "bigint": "long",
    "double": "double", "float": "double",
    "boolean": "boolean", "bool": "boolean",
    "string": "string",
    "timestamp": "timestamp",
}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def type_name(token: Token) -> str:
    """A schema or variable type, normalised (``integer`` → ``int``, ...)."""
    try:
        return _TYPES[token.value.lower()]
    except KeyError:
        known = sorted(set(_TYPES.values()))
        raise RuleError(
            f"unknown type '{token.value}'; the types are {', '.join(known)}",
            token_pos(token),
            hint=did_you_mean(token.value.lower(), _TYPES),
        ) from None


def whole_number(token: Token, what: str, minimum: int) -> int:
    """A small non-negative integer written in the syntax (a repeat count, an index)."""
    if token.value.isdigit() and len(token.value) <= 9 and int(token.value) >= minimum:
        return int(token.value)
    raise RuleError(f"{what} must be a whole number of at least {minimum}", token_pos(token))


def number_literal(token: Token) -> ast.Literal:
    """An int (32-bit), long (64-bit) or double literal."""
    text = token.value
    if text.isdigit():
        # Length first: int() refuses over 4300 digits and the range is known anyway.
        if len(text.lstrip("0")) <= 19 and int(text) <= LONG_MAX:
            value = int(text)
            return ast.Literal(value, "int" if value <= INT_MAX else "long", token_pos(token))
        raise RuleError(
            f"integer {clip(text)} is out of range (the largest is {LONG_MAX})",
            token_pos(token),
        )
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise RuleError(f"number {clip(text)} is out of range for a double", token_pos(token))
    return ast.Literal(value, "double", token_pos(token))


def decode_string(token: Token) -> str:
    """Decode a quoted literal: doubled quotes and backslash escapes (n, t, r, \\, ', ")."""
    raw = token.value
    quote, body = raw[0], raw[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            escaped = body[i + 1]  # the STRING terminal guarantees one more character
            if escaped not in _ESCAPES:
                column = token.column + 1 + i
                raise RuleError(
                    f"unknown escape sequence '\\{escaped}' in a string",
                    Pos(token.line, column, token.line, column + 2),
                    hint=(
                        "the escapes are \\n \\t \\r \\\\ \\' and \\\"; "
                        "write '\\\\' for a backslash"
                    ),
                )
            out.append(_ESCAPES[escaped])
            i += 2
        elif char == quote:  # the first of a doubled quote
            out.append(quote)
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)
