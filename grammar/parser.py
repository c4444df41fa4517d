"""Rule text to :mod:`grammar.ast`: the only way the rest of cep reads rules.

:func:`parse` runs the LALR grammar of ``epl.lark`` (:mod:`grammar.grammar`) token by
token and hands the tree to :mod:`grammar.tree.builder`, which builds the frozen AST
nodes and makes the checks a grammar cannot express well. Whatever is wrong with the text
comes out as a :class:`RuleError` at ``file:line:col`` and nothing else does: Lark's
exceptions become sentences for people (:mod:`grammar.syntax_errors`), and this module
caps the text's size, its number of tokens, each token's length and the nesting depth,
so that no input can exhaust the stack or take more than about a second. Rule text is
never evaluated as Python: numbers and strings are decoded by the tree builder.
"""

from __future__ import annotations

import re
from fractions import Fraction

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from grammar import ast
from grammar.errors import Pos, RuleError
from grammar.grammar import lalr
from grammar.syntax_errors import AcceptedTokens, bad_character, unexpected_token
from grammar.tokens import LONG_MAX, UNIT_MICROS, UNITS_HELP, match_pos, token_pos
from grammar.tree.builder import build

__all__ = ["MAX_DEPTH", "MAX_TEXT_CHARS", "MAX_TOKENS", "TOKEN_LIMITS", "parse",
           "parse_duration"]

#: Longest accepted rule text, in characters. Real rule files are a few kB; the cap keeps a
#: wrong path (a data file given as rules) from costing minutes before it fails.
MAX_TEXT_CHARS = 2 * 1024 * 1024

#: Most tokens accepted in one rule text. Lark's LALR parser costs some 40-80 µs a token
#: in Python, so this cap, not the character count, is what bounds the time to parse
#: and check a file (about a second at worst on a busy 2-core machine); the example
#: rules have 90-160 tokens each, so it leaves room for some 70 rules in a file.
MAX_TOKENS = 10_000

#: Longest accepted token of each kind, in characters. A string literal may carry a long
#: text to compare with; names and numbers never need more, and capping them keeps every
#: message that quotes one short.
TOKEN_LIMITS = {"STRING": 65_536, "NAME": 256, "NUMBER": 256}
_TOKEN_KINDS = {"STRING": "string literal", "NAME": "name", "NUMBER": "number"}

#: Deepest accepted syntax tree. Later passes (checker, dataclass ``==`` and ``repr``,
#: the expression evaluator and the pattern matcher) recurse over the tree, so depth is
#: bounded here, far above anything written by hand.
MAX_DEPTH = 200


# ---------------------------------------------------------------- entry point


def parse(text: str, source_name: str = "<rule>") -> ast.Module:
    """Parse a whole rule file into an :class:`ast.Module`.

    Raises :class:`RuleError` (with ``source_name`` and ``text`` attached, so it renders
    the line and a caret) for every problem in the text, and never anything else.
    """
    if len(text) > MAX_TEXT_CHARS:
        raise RuleError(
            f"rule text is too long ({len(text)} characters; the limit is {MAX_TEXT_CHARS})",
            source_name=source_name, source=text,
        )
    try:
        tree = _parse_tree(text)
        _check_depth(tree)
        statements = build(tree)
    except RuleError as err:
        raise err.located(source_name, text) from None
    except RecursionError:
        # The depth cap makes this unreachable from an ordinary call stack; it remains the
        # last line of defence when parse() itself is called very deep.
        raise RuleError(
            "expression nested too deeply", source_name=source_name, source=text
        ) from None
    return ast.Module(tuple(statements), source_name, text)


def parse_duration(text: str) -> int:
    """A time period written as in rules (``10 min``, ``1 hour 30 min``; the space before
    the unit may be left out on a command line: ``90sec``) in microseconds.

    Raises ValueError with a message for anything else, or a period that is not positive.
    """
    parts = _PERIOD_PART.findall(text)
    if not parts or _PERIOD_PART.sub("", text).strip():
        raise ValueError(f"not a time period: {text!r} (write e.g. '10 min'; {UNITS_HELP})")
    total = sum(Fraction(number) * UNIT_MICROS[unit.lower()] for number, unit in parts)
    if total <= 0 or total.denominator != 1 or total > LONG_MAX:
        raise ValueError(f"a time period must be a positive whole number of microseconds "
                         f"within range, got {text!r}")
    return int(total)


_PERIOD_PART = re.compile(
    r"\s*([0-9]{1,18}(?:\.[0-9]{1,18})?)\s*(" + "|".join(sorted(UNIT_MICROS, key=len,
                                                                  reverse=True)) + r")\b",
    re.IGNORECASE,
)


def _parse_tree(text: str) -> Tree:
    """Run the LALR parser token by token (to know the context of an error) and return
    the parse tree, or raise RuleError."""
    interactive = lalr().parse_interactive(text)
    accepted = AcceptedTokens()
    try:
        for count, token in enumerate(interactive.lexer_thread.lex(interactive.parser_state)):
            _check_token_size(token, count)
            interactive.feed_token(token)
            accepted.add(token)
        return interactive.feed_eof(accepted.last)
    except UnexpectedCharacters as exc:
        raise bad_character(text, exc) from None
    except UnexpectedToken as exc:
        raise unexpected_token(exc.token, accepted) from None


def _check_token_size(token: Token, count: int) -> None:
    """Refuse the token that passes MAX_TOKENS, and tokens longer than TOKEN_LIMITS, before
    the parser spends time on them."""
    if count >= MAX_TOKENS:
        raise RuleError(
            f"rule text has too many tokens (more than {MAX_TOKENS})",
            token_pos(token),
            hint="split the rules over several files",
        )
    limit = TOKEN_LIMITS.get(token.type)
    if limit is not None and len(token.value) > limit:
        raise RuleError(
            f"{_TOKEN_KINDS[token.type]} is too long ({len(token.value)} characters; "
            f"the limit is {limit})",
            Pos(token.line, token.column, token.line, token.column + 1),
        )


def _check_depth(tree: Tree) -> None:
    """Refuse trees deeper than MAX_DEPTH (iteratively, so depth itself is no danger)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RuleError(
                f"expression nested too deeply (more than {MAX_DEPTH} levels)",
                match_pos(node.meta),
                hint="split it with a derived stream (INSERT INTO) or simplify it",
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))
