"""Rule text to :mod:`cep.lang.ast`: the only way the rest of cep reads rules.

:func:`parse` runs the LALR grammar of ``epl.lark`` (beside this module) and a
transformer that builds the frozen AST nodes. Whatever is wrong with the text comes out
as a :class:`RuleError` at ``file:line:col`` and nothing else does: Lark's exceptions
are rewritten into sentences for people (friendly terminal names, dedicated messages for
frequent slips), the checks a grammar cannot express well (window kinds and arity, type
names, literal ranges) are made here, and the text's size, its number of tokens, each
token's length and the nesting depth are capped, so that no input can exhaust the stack
or take more than about a second. Rule text is never evaluated as Python: numbers and
strings are decoded by this module.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.resources
import re
from dataclasses import dataclass
from fractions import Fraction

from lark import Lark, Token, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from lark.lexer import PatternStr
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from cep.lang import ast
from cep.lang.errors import Pos, RuleError, did_you_mean

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

#: Longest quotation of rule text inside a message (the caret line shows the rest).
_QUOTE_CHARS = 40

_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1

_TYPES = {
    "int": "int", "integer": "int",
    "long": "long", "bigint": "long",
    "double": "double", "float": "double",
    "boolean": "boolean", "bool": "boolean",
    "string": "string",
    "timestamp": "timestamp",
}

_SECOND = 1_000_000
_UNIT_MICROS = {
    "day": 86_400 * _SECOND, "days": 86_400 * _SECOND,
    "hour": 3_600 * _SECOND, "hours": 3_600 * _SECOND,
    "minute": 60 * _SECOND, "minutes": 60 * _SECOND, "min": 60 * _SECOND,
    "second": _SECOND, "seconds": _SECOND, "sec": _SECOND,
    "millisecond": 1_000, "milliseconds": 1_000, "msec": 1_000, "ms": 1_000,
    "microsecond": 1, "microseconds": 1, "usec": 1,
}
_UNITS_HELP = (
    "time units are day(s), hour(s), minute(s) or min, second(s) or sec, "
    "millisecond(s), msec or ms, microsecond(s) or usec"
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


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
        statements = _build(tree)
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
        raise ValueError(f"not a time period: {text!r} (write e.g. '10 min'; {_UNITS_HELP})")
    total = sum(Fraction(number) * _UNIT_MICROS[unit.lower()] for number, unit in parts)
    if total <= 0 or total.denominator != 1 or total > _LONG_MAX:
        raise ValueError(f"a time period must be a positive whole number of microseconds "
                         f"within range, got {text!r}")
    return int(total)


_PERIOD_PART = re.compile(
    r"\s*([0-9]{1,18}(?:\.[0-9]{1,18})?)\s*(" + "|".join(sorted(_UNIT_MICROS, key=len,
                                                                  reverse=True)) + r")\b",
    re.IGNORECASE,
)


@functools.cache
def _lark() -> Lark:
    """The LALR parser, built once on first use (about 0.2 s) and shared afterwards."""
    grammar = importlib.resources.files("cep.lang").joinpath("epl.lark")
    return Lark(
        grammar.read_text(encoding="utf-8"),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
        lexer_callbacks={"BLOCK_COMMENT": _check_block_comment},
    )


def _check_block_comment(token: Token) -> Token:
    """Lexer callback: the comment terminal also matches an unclosed ``/*`` so that it is
    reported as such, instead of as an unexpected ``/`` somewhere later."""
    if len(token.value) < 4 or not token.value.endswith("*/"):
        raise RuleError(
            "unterminated comment: '/*' is never closed by '*/'",
            Pos(token.line, token.column, token.line, token.column + 2),
        )
    return token


class _Accepted:
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
        replay = _lark().parse_interactive("")
        for token in self.tokens:
            replay.feed_token(token)
        return replay.accepts()


def _parse_tree(text: str) -> Tree:
    """Run the LALR parser token by token (to know the context of an error) and return
    the parse tree, or raise RuleError."""
    interactive = _lark().parse_interactive(text)
    accepted = _Accepted()
    try:
        for count, token in enumerate(interactive.lexer_thread.lex(interactive.parser_state)):
            _check_token_size(token, count)
            interactive.feed_token(token)
            accepted.add(token)
        return interactive.feed_eof(accepted.last)
    except UnexpectedCharacters as exc:
        raise _bad_character(text, exc) from None
    except UnexpectedToken as exc:
        raise _unexpected_token(exc.token, accepted) from None


def _check_token_size(token: Token, count: int) -> None:
    """Refuse the token that passes MAX_TOKENS, and tokens longer than TOKEN_LIMITS, before
    the parser spends time on them."""
    if count >= MAX_TOKENS:
        raise RuleError(
            f"rule text has too many tokens (more than {MAX_TOKENS})",
            _tpos(token),
            hint="split the rules over several files",
        )
    limit = TOKEN_LIMITS.get(token.type)
    if limit is not None and len(token.value) > limit:
        raise RuleError(
            f"{_TOKEN_KINDS[token.type]} is too long ({len(token.value)} characters; "
            f"the limit is {limit})",
            Pos(token.line, token.column, token.line, token.column + 1),
        )


def _clip(text: str) -> str:
    """``text`` cut to a length a message can quote."""
    return text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 3] + "..."


def _build(tree: Tree) -> list[ast.Statement]:
    """The statements of a parse tree. Lark wraps whatever a transformer method raises in
    VisitError; unwrapping lets RuleError (and any bug, with its own type) through as is."""
    try:
        return _Builder().transform(tree)
    except VisitError as err:
        raise err.orig_exc from None


def _check_depth(tree: Tree) -> None:
    """Refuse trees deeper than MAX_DEPTH (iteratively, so depth itself is no danger)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RuleError(
                f"expression nested too deeply (more than {MAX_DEPTH} levels)",
                _pos(node.meta),
                hint="split it with a derived stream (INSERT INTO) or simplify it",
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


# ---------------------------------------------------------------- syntax errors

_STATEMENT_STARTS = frozenset({"select", "create", "insert", "@"})
_CLAUSE_KEYWORDS = frozenset({"where", "group", "having", "partition", ";"})
# Tokens that cannot be inside an open bracket or right after a ',': meeting one there
# means the bracket was not closed (or the ',' is one too many).
_BEYOND_BRACKETS = _STATEMENT_STARTS | _CLAUSE_KEYWORDS | {"from", "as", "#", ")", "]", "$END"}
_EXPRESSION_STARTS = frozenset(
    {"NAME", "NUMBER", "STRING", "(", "-", "not", "case", "true", "false", "null"}
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
    pattern = _lark().get_terminal(name).pattern
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


def _describe_token(token: Token) -> str:
    """How an unexpected token is named in a message."""
    if token.type == "$END":
        return "end of input"
    text = _terminal_text(token.type)
    value = _clip(token.value)
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


def _unexpected_token(token: Token, accepted: _Accepted) -> RuleError:
    """A parser error as a message: a dedicated one for frequent mistakes, otherwise
    'unexpected X, expected Y' with a hint where one can be given."""
    prev = accepted.last
    expected = {_terminal_text(name) for name in accepted.expected()}
    found = _describe_token(token)
    text = _terminal_text(token.type)
    at_end = text == "$END"
    pos = _after(prev) if at_end and prev is not None else _pos(token)

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
        unit = difflib.get_close_matches(token.value.lower(), _UNIT_MICROS, n=1, cutoff=0.6)
        if unit:  # 'mins', 'hrs': meant as a unit (not e.g. `1 ORDER BY`)
            return RuleError(
                f"unknown time unit '{token.value}'; did you mean '{unit[0]}'?", pos,
                hint=_UNITS_HELP,
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


def _arrow_hint(accepted: _Accepted) -> str:
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


def _hint(token: Token, text: str, expected: set[str], accepted: _Accepted) -> str | None:
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


def _bad_character(text: str, exc: UnexpectedCharacters) -> RuleError:
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
        if glued and glued.group(2).lower() in _UNIT_MICROS:
            hint = f"put a space between the number and the unit: '{glued[1]} {glued[2]}'"
            return RuleError(f"invalid number '{_clip(word)}'", where, hint=hint)
        return RuleError(f"invalid number '{_clip(word)}'", where)
    if char == "&":
        return RuleError("unexpected character '&'", pos, hint="write AND, not &&")
    shown = f"'{char}'" if char.isprintable() and not char.isspace() else f"U+{ord(char):04X}"
    return RuleError(f"unexpected character {shown}", pos)


# ---------------------------------------------------------------- tree to AST


def _pos(meta: Meta) -> Pos:
    """The position of a rule match (``propagate_positions`` fills the meta)."""
    return Pos(meta.line, meta.column, meta.end_line, meta.end_column)


def _tpos(token: Token) -> Pos:
    """The position of a single token (a name whose own place the AST records)."""
    return Pos(token.line, token.column, token.end_line, token.end_column)


@dataclass(frozen=True)
class _FieldText:
    """A schema field's FROM path or FORMAT text, decoded, with its place."""

    kind: str
    text: str
    pos: Pos


def _attach_paths(parts: list) -> tuple[ast.FieldDecl, ...]:
    """Schema fields with the extra FROM paths (``, 'path' [FORMAT 'f']`` items of the
    field list) attached to the field before them."""
    fields: list[ast.FieldDecl] = []
    for part in parts:
        if isinstance(part, ast.FieldDecl):
            fields.append(part)
            continue
        path, fmt = part
        last = fields[-1]
        if not last.paths:
            raise RuleError("a path can only follow FROM: name type FROM 'path', 'path'",
                            path.pos)
        if last.format is not None:
            raise RuleError("FORMAT goes after the field's last FROM path", last.format_pos)
        fields[-1] = dataclasses.replace(
            last, paths=(*last.paths, path.text), paths_pos=(*last.paths_pos, path.pos),
            format=fmt.text if fmt else None, format_pos=fmt.pos if fmt else None,
        )
    return tuple(fields)


@dataclass(frozen=True)
class _Clause:
    """A SELECT statement part on its way up to ``select_stmt`` (which reads them by kind);
    ``pos`` is kept where the AST wants it (the INSERT INTO stream name)."""

    kind: str
    value: object
    pos: Pos | None = None


@dataclass(frozen=True)
class _Filter:
    """``(expr)`` after a stream name; marks the filter among a source's children."""

    expr: ast.Expr | None


@dataclass(frozen=True)
class _Args:
    """The arguments of a call, with DISTINCT."""

    items: tuple[ast.Expr, ...]
    distinct: bool


def _type_name(token: Token) -> str:
    """A schema or variable type, normalised (``integer`` → ``int``, ...)."""
    try:
        return _TYPES[token.value.lower()]
    except KeyError:
        known = sorted(set(_TYPES.values()))
        raise RuleError(
            f"unknown type '{token.value}'; the types are {', '.join(known)}",
            _tpos(token),
            hint=did_you_mean(token.value.lower(), _TYPES),
        ) from None


def _whole_number(token: Token, what: str, minimum: int) -> int:
    """A small non-negative integer written in the syntax (a repeat count, an index)."""
    if token.value.isdigit() and len(token.value) <= 9 and int(token.value) >= minimum:
        return int(token.value)
    raise RuleError(f"{what} must be a whole number of at least {minimum}", _tpos(token))


def _number(token: Token) -> ast.Literal:
    """An int (32-bit), long (64-bit) or double literal."""
    text = token.value
    if text.isdigit():
        # Length first: int() refuses over 4300 digits and the range is known anyway.
        if len(text.lstrip("0")) <= 19 and int(text) <= _LONG_MAX:
            value = int(text)
            return ast.Literal(value, "int" if value <= _INT_MAX else "long", _tpos(token))
        raise RuleError(
            f"integer {_clip(text)} is out of range (the largest is {_LONG_MAX})", _tpos(token)
        )
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise RuleError(f"number {_clip(text)} is out of range for a double", _tpos(token))
    return ast.Literal(value, "double", _tpos(token))


def _string(token: Token) -> str:
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


def _window(
    meta: Meta, name: Token, args: tuple[ast.Expr, ...], namespace: Token | None
) -> ast.Window:
    """A window view, the same node for ``#kind(...)`` and ``.ns:kind(...)``."""
    kind = name.value.lower()
    spec = _WINDOWS.get(kind)
    if spec is None:
        raise RuleError(
            f"unknown window '{name.value}'; the windows are {', '.join(sorted(_WINDOWS))}",
            _tpos(name),
            hint=did_you_mean(kind, _WINDOWS),
        )
    if namespace is not None and namespace.value.lower() != spec.namespace:
        raise RuleError(
            f"the window '{kind}' is '{spec.namespace}:{kind}', not '{namespace.value}:{kind}'",
            _tpos(namespace),
        )
    if len(args) < spec.min_args or (spec.max_args is not None and len(args) > spec.max_args):
        raise RuleError(
            f"wrong number of arguments for window '{kind}' ({len(args)} given)",
            _pos(meta),
            hint=f"write it as {spec.usage}",
        )
    return ast.Window(kind, args, _pos(meta))


def _split_alias(children: list) -> tuple[list, str | None]:
    """Children of a source without its trailing alias (a Token, left by ``alias``)."""
    if len(children) > 1 and isinstance(children[-1], Token):
        return children[:-1], str(children[-1])
    return children, None


@v_args(meta=True)
class _Builder(Transformer_NonRecursive):
    """Bottom-up construction of the AST; method names are the grammar's rule aliases.

    Non-recursive so that tree depth never meets Python's recursion limit here.
    """

    # -- statements

    def start(self, meta: Meta, children: list) -> list:
        return children

    def create_schema(self, meta: Meta, children: list) -> ast.CreateSchema:
        name, *rest = children
        timestamp = rest.pop() if isinstance(rest[-1], Token) else None
        return ast.CreateSchema(
            name=str(name),
            fields=_attach_paths(rest),
            timestamp=str(timestamp) if timestamp is not None else None,
            pos=_pos(meta),
            timestamp_pos=_tpos(timestamp) if timestamp is not None else None,
        )

    def field_decl(self, meta: Meta, children: list) -> ast.FieldDecl:
        name, type_, *more = children
        path = next((c for c in more if isinstance(c, _FieldText) and c.kind == "from"), None)
        fmt = next((c for c in more if isinstance(c, _FieldText) and c.kind == "format"), None)
        return ast.FieldDecl(
            str(name), _type_name(type_), _pos(meta),
            paths=(path.text,) if path else (), paths_pos=(path.pos,) if path else (),
            format=fmt.text if fmt else None, format_pos=fmt.pos if fmt else None,
        )

    def field_from(self, meta: Meta, children: list) -> _FieldText:
        return _FieldText("from", _string(children[0]), _tpos(children[0]))

    def field_format(self, meta: Meta, children: list) -> _FieldText:
        return _FieldText("format", _string(children[0]), _tpos(children[0]))

    def field_path(self, meta: Meta, children: list) -> tuple[_FieldText, _FieldText | None]:
        path = _FieldText("from", _string(children[0]), _tpos(children[0]))
        return path, children[1] if len(children) > 1 else None

    def schema_timestamp(self, meta: Meta, children: list) -> Token:
        return children[0]

    def create_variable(self, meta: Meta, children: list) -> ast.CreateVariable:
        type_, name, *default = children
        return ast.CreateVariable(
            _type_name(type_), str(name), default[0] if default else None, _pos(meta)
        )

    def select_stmt(self, meta: Meta, children: list) -> ast.SelectStatement:
        clauses = {c.kind: c for c in children if isinstance(c, _Clause)}
        insert = clauses.get("insert_into")
        selector = clauses.get("stream_selector")
        return ast.SelectStatement(
            annotations=tuple(c for c in children if isinstance(c, ast.Annotation)),
            insert_into=insert.value if insert else None,
            select=clauses["select"].value,
            sources=clauses["sources"].value,
            where=clauses["where"].value if "where" in clauses else None,
            group_by=clauses["group_by"].value if "group_by" in clauses else (),
            having=clauses["having"].value if "having" in clauses else None,
            partition_by=clauses["partition_by"].value if "partition_by" in clauses else (),
            pos=_pos(meta),
            insert_into_pos=insert.pos if insert else None,
            stream_selector=selector.value if selector else "istream",
            stream_selector_pos=selector.pos if selector else None,
            output=clauses["output"].value if "output" in clauses else None,
        )

    def annotation(self, meta: Meta, children: list) -> ast.Annotation:
        name, *value = children
        return ast.Annotation(str(name), value[0].value if value else None, _pos(meta))

    def stream_selector(self, meta: Meta, children: list) -> _Clause:
        return _Clause("stream_selector", str(children[0]).lower(), _pos(meta))

    def insert_into(self, meta: Meta, children: list) -> _Clause:
        return _Clause("insert_into", str(children[0]), _tpos(children[0]))

    def select_list(self, meta: Meta, children: list) -> _Clause:
        return _Clause("select", tuple(children))

    def select_star(self, meta: Meta, children: list) -> ast.SelectItem:
        return ast.SelectItem(ast.Star(_pos(meta)), None, _pos(meta))

    def select_alias_star(self, meta: Meta, children: list) -> ast.SelectItem:
        return ast.SelectItem(ast.Star(_pos(meta), base=str(children[0])), None, _pos(meta))

    def select_expr(self, meta: Meta, children: list) -> ast.SelectItem:
        expr, *alias = children
        return ast.SelectItem(expr, str(alias[0]) if alias else None, _pos(meta))

    def source_list(self, meta: Meta, children: list) -> _Clause:
        return _Clause("sources", tuple(children))

    def where_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("where", children[0])

    def group_by_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("group_by", tuple(children))

    def having_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("having", children[0])

    def partition_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("partition_by", tuple(children))

    def output_clause(self, meta: Meta, children: list) -> _Clause:
        kind = str(children[0]) if len(children) == 2 else "all"
        every = children[-1]
        if isinstance(every, Token):  # EVERY n EVENTS
            limit = ast.OutputLimit(kind, _whole_number(every, "an event count", 1), None,
                                    _pos(meta))
        else:
            limit = ast.OutputLimit(kind, None, every, _pos(meta))
        return _Clause("output", limit)

    def output_kind(self, meta: Meta, children: list) -> str:
        return str(children[0]).lower()

    # -- sources

    def stream_source(self, meta: Meta, children: list) -> ast.StreamSource:
        (name, *rest), alias = _split_alias(children)
        filters = [c.expr for c in rest if isinstance(c, _Filter)]
        windows = tuple(c for c in rest if isinstance(c, ast.Window))
        return ast.StreamSource(
            str(name), filters[0] if filters else None, windows, alias, _pos(meta)
        )

    def filter(self, meta: Meta, children: list) -> _Filter:
        if not children:
            return _Filter(None)
        combined = children[0]
        for expr in children[1:]:  # Esper's `S(a = 1, b > 2)` is `S(a = 1 AND b > 2)`
            combined = ast.Binary("and", combined, expr, Pos(
                combined.pos.line, combined.pos.column, expr.pos.end_line, expr.pos.end_column))
        return _Filter(combined)

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
        (pattern,), alias = _split_alias(children)
        return ast.PatternSource(pattern, alias, _pos(meta))

    # -- MATCH_RECOGNIZE

    def recognize_source(self, meta: Meta, children: list) -> ast.RecognizeSource:
        children, alias = _split_alias(children)
        stream, *rest = children
        parts = {c.kind: c.value for c in rest if isinstance(c, _Clause)}
        filters = [c.expr for c in rest if isinstance(c, _Filter)]
        return ast.RecognizeSource(
            stream=str(stream), filter=filters[0] if filters else None,
            partition_by=parts.get("partition_by", ()), measures=parts["measures"],
            skip=parts.get("skip", "past last row"),
            pattern=next(c for c in rest if isinstance(c, ast.RowPattern)),
            within=parts.get("within"), defines=parts["defines"], alias=alias, pos=_pos(meta))

    def mr_partition(self, meta: Meta, children: list) -> _Clause:
        return _Clause("partition_by", tuple(children))

    def mr_measures(self, meta: Meta, children: list) -> _Clause:
        return _Clause("measures", tuple(children))

    def mr_measure(self, meta: Meta, children: list) -> tuple:
        return children[0], str(children[1]), _pos(meta)

    def mr_after(self, meta: Meta, children: list) -> _Clause:
        return _Clause("skip", children[0])

    def mr_skip(self, meta: Meta, children: list) -> str:
        return " ".join(str(c).lower() for c in children)

    def mr_within(self, meta: Meta, children: list) -> _Clause:
        return _Clause("within", children[0])

    def mr_define(self, meta: Meta, children: list) -> _Clause:
        return _Clause("defines", tuple(children))

    def mr_def(self, meta: Meta, children: list) -> tuple:
        return str(children[0]), children[1], _tpos(children[0])

    def mr_alt(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        return ast.RowPattern("alt", _pos(meta), items=tuple(children))

    def mr_seq(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        return ast.RowPattern("seq", _pos(meta), items=tuple(children))

    def mr_item(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        item, (low, high, greedy) = children
        return ast.RowPattern("repeat", _pos(meta), items=(item,), low=low, high=high,
                              greedy=greedy)

    def mr_var(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("var", _pos(meta), name=str(children[0]))

    def mr_quantifier(self, meta: Meta, children: list) -> tuple:
        low, high = children[0]
        return low, high, len(children) == 1

    def mr_count(self, meta: Meta, children: list) -> tuple[int, int | None]:
        texts = [str(c) for c in children]
        if texts[0] in ("*", "+", "?"):
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[texts[0]]
        numbers = [_whole_number(c, "a repetition bound", 0) for c in children
                   if c.type == "NUMBER"]
        if len(texts) == 3:  # {n}
            return numbers[0], numbers[0]
        if texts[1] == ",":  # {,m}
            return 0, numbers[0]
        if texts[2] == "," and texts[3] == "}":  # {n,}
            return numbers[0], None
        return numbers[0], numbers[1]

    # -- patterns

    def pat_within(self, meta: Meta, children: list) -> ast.PatWithin:
        operand, duration = children
        return ast.PatWithin(operand, duration, _pos(meta))

    def pat_followed_by(self, meta: Meta, children: list) -> ast.PatFollowedBy:
        return ast.PatFollowedBy(children[0], children[1], _pos(meta))

    def pat_or_op(self, meta: Meta, children: list) -> ast.PatOr:
        return ast.PatOr(children[0], children[1], _pos(meta))

    def pat_and_op(self, meta: Meta, children: list) -> ast.PatAnd:
        return ast.PatAnd(children[0], children[1], _pos(meta))

    def pat_every(self, meta: Meta, children: list) -> ast.PatEvery:
        return ast.PatEvery(children[0], _pos(meta))

    def pat_not(self, meta: Meta, children: list) -> ast.PatNot:
        return ast.PatNot(children[0], _pos(meta))

    def pat_repeat(self, meta: Meta, children: list) -> ast.PatRepeat:
        count, operand = children
        n = _whole_number(count, "a repeat count", 1)
        return ast.PatRepeat(n, operand, _pos(meta), high=n)

    def pat_repeat_range(self, meta: Meta, children: list) -> ast.PatRepeat:
        low, high, operand = children
        return ast.PatRepeat(_whole_number(low, "a repeat bound", 0), operand, _pos(meta),
                             high=_whole_number(high, "a repeat bound", 1))

    def pat_repeat_from(self, meta: Meta, children: list) -> ast.PatRepeat:
        low, operand = children
        return ast.PatRepeat(_whole_number(low, "a repeat bound", 0), operand, _pos(meta))

    def pat_repeat_upto(self, meta: Meta, children: list) -> ast.PatRepeat:
        high, operand = children
        return ast.PatRepeat(0, operand, _pos(meta), high=_whole_number(high, "a repeat bound",
                                                                        1))

    def pat_until(self, meta: Meta, children: list) -> ast.PatRepeat:
        operand, until = children
        if isinstance(operand, ast.PatRepeat) and operand.until is None:
            return ast.PatRepeat(operand.count, operand.operand, _pos(meta), high=operand.high,
                                 until=until)
        return ast.PatRepeat(0, operand, _pos(meta), until=until)

    def pat_tagged(self, meta: Meta, children: list) -> ast.PatAtom:
        tag, stream, *filter_ = children
        return ast.PatAtom(str(tag), str(stream), filter_[0].expr if filter_ else None, _pos(meta))

    def pat_timer(self, meta: Meta, children: list) -> ast.PatTimer:
        return ast.PatTimer(children[0], _pos(meta))

    def pat_untagged(self, meta: Meta, children: list) -> ast.PatAtom:
        stream, *filter_ = children
        return ast.PatAtom(None, str(stream), filter_[0].expr if filter_ else None, _pos(meta))

    # -- expressions

    def or_op(self, meta: Meta, children: list) -> ast.Binary:
        return ast.Binary("or", children[0], children[1], _pos(meta))

    def and_op(self, meta: Meta, children: list) -> ast.Binary:
        return ast.Binary("and", children[0], children[1], _pos(meta))

    def not_op(self, meta: Meta, children: list) -> ast.Unary:
        return ast.Unary("not", children[0], _pos(meta))

    def neg(self, meta: Meta, children: list) -> ast.Unary:
        return ast.Unary("-", children[0], _pos(meta))

    def binary(self, meta: Meta, children: list) -> ast.Binary:
        left, op, right = children
        return ast.Binary(op, left, right, _pos(meta))

    def comp_op(self, meta: Meta, children: list) -> str:
        return "!=" if children[0] == "<>" else str(children[0])

    def concat_op(self, meta: Meta, children: list) -> str:
        return "||"

    def add_op(self, meta: Meta, children: list) -> str:
        return str(children[0])

    def mul_op(self, meta: Meta, children: list) -> str:
        return str(children[0])

    def is_null(self, meta: Meta, children: list) -> ast.IsNull:
        return ast.IsNull(children[0], False, _pos(meta))

    def is_not_null(self, meta: Meta, children: list) -> ast.IsNull:
        return ast.IsNull(children[0], True, _pos(meta))

    def in_list(self, meta: Meta, children: list) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), False, _pos(meta))

    def not_in_list(self, meta: Meta, children: list) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), True, _pos(meta))

    def between(self, meta: Meta, children: list) -> ast.Between:
        return ast.Between(*children, negated=False, pos=_pos(meta))

    def not_between(self, meta: Meta, children: list) -> ast.Between:
        return ast.Between(*children, negated=True, pos=_pos(meta))

    def like(self, meta: Meta, children: list) -> ast.Like:
        return ast.Like(children[0], children[1], False, _pos(meta))

    def not_like(self, meta: Meta, children: list) -> ast.Like:
        return ast.Like(children[0], children[1], True, _pos(meta))

    def number(self, meta: Meta, children: list) -> ast.Literal:
        return _number(children[0])

    def string(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(_string(children[0]), "string", _pos(meta))

    def true(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(True, "boolean", _pos(meta))

    def false(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(False, "boolean", _pos(meta))

    def null(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(None, "null", _pos(meta))

    def period_part(self, meta: Meta, children: list) -> tuple[Token, Token]:
        number, unit = children
        return number, unit

    def time_period(self, meta: Meta, children: list) -> ast.Literal:
        total = Fraction(0)
        previous_size = None
        for number, unit in children:
            _number(number)  # range check: keeps Fraction from expanding '1e999999'
            size = _UNIT_MICROS[unit.value.lower()]
            if previous_size is not None and size >= previous_size:
                raise RuleError(
                    f"time unit '{unit.value}' out of order",
                    _tpos(unit),
                    hint="write the units from largest to smallest, each once: 1 hour 30 min",
                )
            previous_size = size
            total += Fraction(number.value) * size
        if total.denominator != 1:
            raise RuleError(
                "time period is not a whole number of microseconds", _pos(meta)
            )
        if total > _LONG_MAX:
            raise RuleError("time period is out of range", _pos(meta))
        return ast.Literal(int(total), "duration", _pos(meta))

    def name(self, meta: Meta, children: list) -> ast.Name:
        return ast.Name(str(children[0]), _pos(meta))

    def attr(self, meta: Meta, children: list) -> ast.Attr:
        base, name = children
        return ast.Attr(str(base), str(name), _pos(meta))

    def indexed_attr(self, meta: Meta, children: list) -> ast.IndexedAttr:
        base, index, name = children
        return ast.IndexedAttr(
            str(base), _whole_number(index, "an index", 0), str(name), _pos(meta)
        )

    def call(self, meta: Meta, children: list) -> ast.Call:
        name, *args = children
        arguments = args[0] if args else _Args((), False)
        return ast.Call(name.value.lower(), arguments.items, arguments.distinct, _pos(meta))

    def star_arg(self, meta: Meta, children: list) -> _Args:
        return _Args((ast.Star(_pos(meta)),), False)

    def distinct_args(self, meta: Meta, children: list) -> _Args:
        return _Args(tuple(children), True)

    def plain_args(self, meta: Meta, children: list) -> _Args:
        return _Args(tuple(children), False)

    def case(self, meta: Meta, children: list) -> ast.Case:
        whens = tuple(c for c in children if isinstance(c, tuple))
        default = children[-1] if not isinstance(children[-1], tuple) else None
        return ast.Case(whens, default, _pos(meta))

    def when_clause(self, meta: Meta, children: list) -> tuple[ast.Expr, ast.Expr]:
        return children[0], children[1]

    def else_clause(self, meta: Meta, children: list) -> ast.Expr:
        return children[0]
