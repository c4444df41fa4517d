"""Syntax errors as sentences: Lark's exceptions → located :class:`RuleError` messages.

Lark names terminals (``LPAR``, ``__ANON_3``) and knows only the offending token; a
message for people names what was found and what would have fitted (``unexpected
keyword FROM, expected an expression``), groups long lists (every operator, every way to
start an expression), and has dedicated sentences and hints for frequent slips: a
missing ';', an unclosed bracket, ``==``, a misspelt time unit, a reserved word used as
a name, ``->`` outside a pattern, ... For that it keeps the tokens the parser accepted
(:class:`AcceptedTokens`).
"""

from __future__ import annotations

import difflib
import re

from lark import Token
from lark.exceptions import UnexpectedCharacters
from lark.lexer import PatternStr

from grammar.errors import Pos, RuleError
from grammar.grammar import lalr
from grammar.tokens import UNIT_MICROS, UNITS_HELP, clip, token_pos


class AcceptedTokens:
    """The tokens the parser has accepted so far, and the brackets still open.

    Lark's exceptions only know the offending token; good messages also need the tokens
    before it (a missing ';' belongs after the last one) and the bracket left open.
    """

    def __init__(self) -> None:
        self.tokens: list[Token] = []
        self.open: list[Token] = []

    @property
    def last(self) -> Token | None:
        """The last accepted token (None before the first)."""
        return self.tokens[-1] if self.tokens else None

    def add(self, token: Token) -> None:
        """Record a token the parser accepted."""
        self.tokens.append(token)
        if token.value in ("(", "["):
            self.open.append(token)
        elif token.value in (")", "]"):
            self.open.pop()

    def expected(self) -> set[str]:
        """The terminals the parser accepts after these tokens.

        Lark's own expected set is taken after the reductions the bad token triggered
        (LALR reduces on lookaheads merged from other contexts), which loses for instance
        the time unit after a number; replaying the accepted tokens gives the exact set.
        """
        replay = lalr().parse_interactive("")
        for token in self.tokens:
            replay.feed_token(token)
        return replay.accepts()


_STATEMENT_STARTS = frozenset({"select", "create", "insert", "@"})
_CLAUSE_KEYWORDS = frozenset({"where", "group", "having", "partition", ";"})
# Tokens that cannot be inside an open bracket or right after a ',': meeting one there
# means the bracket was not closed (or the ',' is one too many).
_BEYOND_BRACKETS = _STATEMENT_STARTS | _CLAUSE_KEYWORDS | {"from", "as", "#", ")", "]", "$END"}
_EXPRESSION_STARTS = frozenset(
    {"NAME", "NUMBER", "STRING", "(", "-", "not", "case", "true", "false", "null", "MR_MODE"}
)
_PATTERN_STARTS = frozenset({"NAME", "every", "not", "(", "[", "timer"})
_COMPARISONS = frozenset({"=", "!=", "<>", "<", "<=", ">", ">="})
_OPERATORS = _COMPARISONS | {
    "+", "-", "*", "/", "%", "||", "and", "or", "is", "in", "not", "between", "like",
}
_PHRASES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "UNIT": "a time unit",
    "$END": "end of input",
}


def _terminal_text(name: str) -> str:
    """The literal text of a string terminal (keywords lower-cased), else its name
    (NAME, NUMBER, STRING, UNIT, $END)."""
    if name == "$END":
        return name
    pattern = lalr().get_terminal(name).pattern
    return pattern.value.lower() if isinstance(pattern, PatternStr) else name


def _is_keyword(text: str) -> bool:
    """Whether a ``_terminal_text`` is a keyword (lower-case word; the regex terminals'
    names are upper-case)."""
    return text.isalpha() and text.islower()


def _describe_expected(expected: set[str]) -> str:
    """Expected terminals (as ``_terminal_text`` gives them) as a phrase, grouping the long
    lists a user does not want to read (every operator, every way to start an expression)."""
    texts = set(expected)
    phrases = []
    if {"NAME", "NUMBER", "STRING"} <= texts:
        texts -= _EXPRESSION_STARTS
        phrases.append("an expression")
    elif "every" in texts:
        texts -= _PATTERN_STARTS
        phrases.append("a pattern")
    operators = texts & _OPERATORS
    if "and" in operators and "or" not in operators:
        operators.discard("and")  # `x BETWEEN low . AND high`: AND is what is missing
    if len(operators) >= 3:
        texts -= operators
        phrases.append("an operator")
    words = sorted(f"'{t}'" for t in texts if not t.isalpha() and t not in _PHRASES)
    words += sorted(t.upper() for t in texts if _is_keyword(t))
    words += phrases + sorted(_PHRASES[t] for t in texts if t in _PHRASES)
    if len(words) == 1:
        return words[0]
    return "one of: " + ", ".join(words[:-1]) + " or " + words[-1]


#: the row pattern anchors, terminals nowhere else
_PATTERN_ONLY = frozenset({"$", "^"})


def _describe_token(token: Token) -> str:
    """How an unexpected token is named in a message."""
    if token.type == "$END":
        return "end of input"
    text = _terminal_text(token.type)
    value = clip(token.value)
    if _is_keyword(text):
        return f"keyword {value.upper()}"
    if text == "NAME":
        return f"name '{value}'"
    if text == "UNIT":
        return f"time unit '{value}'"
    if text == "NUMBER":
        return f"number {value}"
    if text == "STRING":
        return f"string {value}"
    return f"'{value}'"


def _after(token: Token) -> Pos:
    """The position just after a token (where something missing should have been)."""
    return Pos(token.end_line, token.end_column, token.end_line, token.end_column + 1)


def unexpected_token(token: Token, accepted: AcceptedTokens) -> RuleError:
    """A parser error as a message: a dedicated one for frequent mistakes, otherwise
    'unexpected X, expected Y' with a hint where one can be given."""
    prev = accepted.last
    expected = {_terminal_text(name) for name in accepted.expected()}
    found = _describe_token(token)
    text = _terminal_text(token.type)
    at_end = text == "$END"
    pos = _after(prev) if at_end and prev is not None else token_pos(token)

    if text in _PATTERN_ONLY and text not in expected:
        # a character that means something in a row pattern only (its anchors) is, as
        # anywhere else, a character the language does not have
        return RuleError(f"unexpected character '{token.value}'", token_pos(token))
    if text == "=" and prev is not None and prev.value == "=" and prev.end_pos == token.start_pos:
        return RuleError(
            "'==' is not an operator; compare with a single '='",
            Pos(prev.line, prev.column, token.end_line, token.end_column),
        )
    if ";" in expected and text in _STATEMENT_STARTS and prev is not None:
        return RuleError(
            "missing ';' at the end of this statement",
            _after(prev),
            hint=f"every statement ends with ';' (the next one starts at line {token.line})",
        )
    if "from" in expected and (text in _CLAUSE_KEYWORDS or at_end):
        return RuleError(
            f"missing FROM clause before {found}", pos, hint="a rule reads FROM a stream or pattern"
        )
    if prev is not None and prev.type == "NUMBER" and text == "NAME" and "UNIT" in expected:
        unit = difflib.get_close_matches(token.value.lower(), UNIT_MICROS, n=1, cutoff=0.6)
        if unit:  # 'mins', 'hrs': meant as a unit (not e.g. `1 ORDER BY`)
            return RuleError(
                f"unknown time unit '{token.value}'; did you mean '{unit[0]}'?", pos,
                hint=UNITS_HELP,
            )
    if text == ">" and prev is not None and prev.value == "-" and prev.end_pos == token.start_pos:
        # The contextual lexer read '-' (minus) where '->' cannot follow, then '>'.
        return RuleError(
            "unexpected '->'",
            Pos(prev.line, prev.column, token.end_line, token.end_column),
            hint=_arrow_hint(accepted),
        )
    if text in (")", "]") and not accepted.open:
        return RuleError(f"unmatched '{text}'", pos, hint="there is no open bracket to close")

    message = f"unexpected {found}, expected {_describe_expected(expected)}"
    return RuleError(message, pos, hint=_hint(token, text, expected, accepted))


def _arrow_hint(accepted: AcceptedTokens) -> str:
    """Why '->' does not fit: after WITHIN, or outside a pattern."""
    for token in reversed(accepted.tokens):
        if token.value == "[":
            break
        if _terminal_text(token.type) == "within":
            return (
                "WITHIN applies to the whole pattern before it and ends it; use parentheses: "
                "(a=A -> b=B WITHIN 1 min) -> c=C"
            )
    return "'->' joins patterns, inside PATTERN [ ... ]"


def _hint(token: Token, text: str, expected: set[str], accepted: AcceptedTokens) -> str | None:
    """The most likely cause of a generic syntax error, when there is a good guess.

    ``text`` is the unexpected token as ``_terminal_text`` gives it, ``expected`` the
    terminals the parser would have taken instead.
    """
    prev = accepted.last
    before = accepted.tokens[-2] if len(accepted.tokens) > 1 else None
    prev_text = _terminal_text(prev.type) if prev is not None else None
    opened = accepted.open[-1] if accepted.open else None
    closer = {"(": ")", "[": "]"}.get(opened.value) if opened is not None else None
    if opened is not None and closer in expected and text in _BEYOND_BRACKETS:
        return f"the '{opened.value}' at line {opened.line}, column {opened.column} is not closed"
    if prev_text == "," and text in _BEYOND_BRACKETS:
        return "remove the trailing ','"
    if prev_text == ";" and text == ";":
        return "remove the extra ';'"
    if "(" in expected and prev is not None and before is not None and before.value in ("#", ":"):
        return f"window arguments go in parentheses: {prev.value}(...)"
    if text in _COMPARISONS and "+" in expected and not expected & _COMPARISONS:
        return "comparisons do not chain: write a < b AND b < c"
    if text == "=" and before is not None and _terminal_text(before.type) == "variable":
        return "a variable is declared with its type: CREATE VARIABLE double tau = 0.2"
    if text == "timer":
        return "a pattern guard is written: where timer:within(10 sec)"
    if text == "lateness":
        return "LATENESS follows the TIMESTAMP clause: ... ) TIMESTAMP ts LATENESS 10 sec"
    if text == "distinct" and prev_text == "select":
        return "SELECT DISTINCT is not supported (count(DISTINCT x) is)"
    if _is_keyword(text) and "NAME" in expected:
        return f"'{token.value}' is a reserved word and cannot be used as a name"
    if text == "NAME" and "STRING" in expected and "NAME" not in expected:
        return f"if '{token.value}' is a text value, quote it: '{token.value}'"
    if text == "NAME" and prev_text == "NAME" and "," in expected:
        return f"is a ',' missing before '{token.value}'?"
    if text == "NAME":
        keywords = [t.upper() for t in expected if _is_keyword(t)]
        # Stricter than did_you_mean(): 'TABLE' must not suggest 'VARIABLE'.
        close = difflib.get_close_matches(token.value.upper(), keywords, n=1, cutoff=0.75)
        return f"did you mean {close[0]}?" if close else None
    return None


def bad_character(text: str, exc: UnexpectedCharacters) -> RuleError:
    """A lexer error: text no terminal matches (open string, bad number, stray symbol)."""
    index, line, column = exc.pos_in_stream, exc.line, exc.column
    char = text[index]
    pos = Pos(line, column, line, column + 1)
    if char in "'\"":
        return RuleError(
            f"unterminated string: no closing {char} on this line", pos,
            hint="strings cannot span lines; write a quote inside one as '' or \\'",
        )
    if "0" <= char <= "9":
        word = re.compile(r"[0-9][0-9A-Za-z_.]*").match(text, index).group()
        where = Pos(line, column, line, column + len(word))
        glued = re.fullmatch(r"([0-9.]+)([A-Za-z]+)", word)
        if glued and glued.group(2).lower() in UNIT_MICROS:
            hint = f"put a space between the number and the unit: '{glued[1]} {glued[2]}'"
            return RuleError(f"invalid number '{clip(word)}'", where, hint=hint)
        return RuleError(f"invalid number '{clip(word)}'", where)
    if char == "&":
        return RuleError("unexpected character '&'", pos, hint="write AND, not &&")
    shown = f"'{char}'" if char.isprintable() and not char.isspace() else f"U+{ord(char):04X}"
    return RuleError(f"unexpected character {shown}", pos)
