"""What the parser's parts share about tokens: where a token or a grammar match stands,
how much of one a message quotes, the time units, and the ranges of integer literals."""

from __future__ import annotations

from lark import Token
from lark.tree import Meta

from grammar.errors import Pos

#: Longest quotation of rule text inside a message (the caret line shows the rest).
QUOTE_CHARS = 40

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

_SECOND = 1_000_000
#: Microseconds in each time unit a rule (or ``parse_duration``) may write.
UNIT_MICROS = {
    "day": 86_400 * _SECOND, "days": 86_400 * _SECOND,
    "hour": 3_600 * _SECOND, "hours": 3_600 * _SECOND,
    "minute": 60 * _SECOND, "minutes": 60 * _SECOND, "min": 60 * _SECOND,
    "second": _SECOND, "seconds": _SECOND, "sec": _SECOND,
    "millisecond": 1_000, "milliseconds": 1_000, "msec": 1_000, "ms": 1_000,
    "microsecond": 1, "microseconds": 1, "usec": 1,
}
UNITS_HELP = (
    "time units are day(s), hour(s), minute(s) or min, second(s) or sec, "
    "millisecond(s), msec or ms, microsecond(s) or usec"
)


def match_pos(meta: Meta) -> Pos:
    """The position of a rule match (``propagate_positions`` fills the meta)."""
    return Pos(meta.line, meta.column, meta.end_line, meta.end_column)


def token_pos(token: Token) -> Pos:
    """The position of a single token (a name whose own place the AST records)."""
    return Pos(token.line, token.column, token.end_line, token.end_column)


def clip(text: str) -> str:
    """``text`` cut to a length a message can quote."""
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."
