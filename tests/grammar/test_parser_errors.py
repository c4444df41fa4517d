"""Parse errors are RuleErrors that point at the mistake and read like a compiler's.

Every file in ``tests/data/broken`` holds one realistic mistake. Its first line is
``-- expect: L:C`` (where the error must be reported) and its second ``-- says: text``
(a piece of the message or its hint that shows the message is the helpful one);
``broken_messages.json`` holds each file's whole message and hint.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grammar.errors import RuleError
from grammar.parser import MAX_DEPTH, MAX_TEXT_CHARS, parse

BROKEN = sorted((Path(__file__).parent.parent / "data" / "broken").glob("*.epl"))
TOO_DEEP = ("expression nested too deeply (more than 200 levels)",
            "split it with a derived stream (INSERT INTO) or simplify it")

# each broken file's message and hint (None: no hint)
MESSAGES: dict[str, dict[str, str | None]] = json.loads(
    (Path(__file__).parent / "broken_messages.json").read_text(encoding="utf-8"))


def _header(text: str) -> tuple[int, int, str]:
    expect = re.match(r"-- expect: (\d+):(\d+)\n-- says: (.*)\n", text)
    assert expect, "a broken file starts with '-- expect: L:C' and '-- says: ...' lines"
    return int(expect[1]), int(expect[2]), expect[3]


def _error(text: str, source_name: str = "<rule>") -> RuleError:
    with pytest.raises(RuleError) as info:
        parse(text, source_name)
    return info.value


def test_there_are_enough_distinct_broken_files() -> None:
    assert len(BROKEN) >= 35
    bodies = [p.read_text().split("\n", 2)[2] for p in BROKEN]
    assert len(set(bodies)) == len(bodies)
    assert [p.stem for p in BROKEN] == sorted(MESSAGES)


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_file_is_reported_at_the_mistake(path: Path) -> None:
    text = path.read_text()
    line, column, says = _header(text)
    err = _error(text, str(path))
    assert {"message": err.message, "hint": err.hint} == MESSAGES[path.stem]
    assert says in err.message or says in (err.hint or "")
    head, source_line, caret_line, *hint = str(err).splitlines()
    assert head == f"{path}:{line}:{column}: error: {err.message}"
    assert source_line == f"{line:>4} | {text.splitlines()[line - 1]}"
    assert caret_line.index("^") == len(f"{line:>4} | ") + column - 1
    assert set(caret_line.strip()) == {"^"}
    assert hint == ([f"  hint: {err.hint}"] if err.hint else [])
    assert err.source == text and err.source_name == str(path)


def test_end_of_input_points_just_after_the_last_token() -> None:
    err = _error("SELECT a FROM T WHERE x >\n\n-- trailing comment\n")
    assert err.message == "unexpected end of input, expected an expression"
    assert (err.pos.line, err.pos.column) == (1, 26)


@pytest.mark.parametrize(("text", "message", "column", "hint"), [
    ("SELECT a FROM T WHERE (a",
     "unexpected end of input, expected one of: '(', ')', '.', '[' or an operator", 25,
     "the '(' at line 1, column 23 is not closed"),
    ("SELECT a <= FROM T", "unexpected keyword FROM, expected an expression", 13,
     "'FROM' is a reserved word and cannot be used as a name"),
    ("SELECT a FROM T#time(5",
     "unexpected end of input, expected one of: ')', ',', an operator or a time unit", 23,
     "the '(' at line 1, column 21 is not closed"),
])
def test_lark_terminal_names_never_reach_the_user(text: str, message: str, column: int,
                                                  hint: str) -> None:
    err = _error(text)
    assert (err.message, err.pos.line, err.pos.column, err.hint) == (message, 1, column, hint)
    assert not re.search(r"\b(LPAR|RPAR|SEMICOLON|__ANON|NAME|NUMBER|\$END)\b", err.message)


def test_too_long_input_is_refused_before_parsing() -> None:
    err = _error("SELECT a FROM T;\n" * (MAX_TEXT_CHARS // 17 + 1))
    assert err.message == "rule text is too long (2097154 characters; the limit is 2097152)"
    assert (err.pos.line, err.pos.column) == (1, 1)


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("SELECT " + "- " * (MAX_DEPTH + 10) + "1 FROM T;", 400),
        ("SELECT " + "1 + " * (MAX_DEPTH + 10) + "1 FROM T;", 68),
        ("SELECT a FROM T WHERE " + "NOT " * 5000 + "a;", 811),
        ("SELECT a FROM PATTERN [" + "every " * 5000 + "a=A];", 1200),
        ("SELECT a FROM PATTERN [a=A" + " -> a=A" * (MAX_DEPTH + 10) + "];", 129),
    ],
    ids=["minus", "plus-chain", "not", "every", "followed-by-chain"],
)
def test_deep_nesting_is_a_rule_error(text: str, column: int) -> None:
    err = _error(text)
    assert (err.message, err.hint) == TOO_DEEP
    assert (err.pos.line, err.pos.column) == (1, column)


def test_deep_but_allowed_nesting_parses() -> None:
    module = parse("SELECT " + "- " * (MAX_DEPTH - 10) + "1 FROM T;")
    assert len(module.statements) == 1
    # Parentheses add no tree level, so they are only bounded by the text size.
    module = parse("SELECT " + "(" * 3000 + "1" + ")" * 3000 + " FROM T;")
    assert module.statements[0].select[0].expr.value == 1  # type: ignore[union-attr]


def test_an_unclosed_deep_bracket_is_still_a_rule_error() -> None:
    err = _error("SELECT " + "(" * 3000 + "1 FROM T;")
    assert err.message == ("unexpected keyword FROM, expected one of: ')', an operator or a "
                           "time unit")
    assert err.hint == "the '(' at line 1, column 3007 is not closed"
    assert (err.pos.line, err.pos.column) == (1, 3010)


@pytest.mark.parametrize(
    ("text", "message", "column", "hint"),
    [
        ("SELECT a FROM T WHERE b = 1 ORDER BY a;",
         "unexpected name 'ORDER', expected one of: ';', GROUP, HAVING, OUTPUT, PARTITION, an "
         "operator, a time unit or end of input", 29, None),
        ("SELECT a FROM T#time(10 min",
         "unexpected end of input, expected one of: ')', ',', an operator or a number", 28,
         "the '(' at line 1, column 21 is not closed"),
        ("SELECT a FROM T\u00e9;", "unexpected character '\u00e9'", 16, None),
        ("SELECT a FROM T WHERE b = 1\x00;", "unexpected character U+0000", 28, None),
        ("CREATE SCHEMA T (a long) TIMESTAMP;", "unexpected ';', expected a name", 35, None),
        ("SELECT t[1.5].a FROM PATTERN [[2] t=T];",
         "an index must be a whole number of at least 0", 10, None),
        ("SELECT a FROM PATTERN [[2.5] t=T];",
         "a repeat count must be a whole number of at least 1", 25, None),
        ("SELECT 0.0000001 sec FROM T;", "time period is not a whole number of microseconds",
         8, None),
        ("SELECT 1e999 FROM T;", "number 1e999 is out of range for a double", 8, None),
        ("SELECT 1e999 sec FROM T;", "number 1e999 is out of range for a double", 8, None),
        ("SELECT 99999999999 days FROM T;", "time period is out of range", 8, None),
        ("SELECT " + "9" * 200 + " FROM T;",
         "integer " + "9" * 37 + "... is out of range (the largest is 9223372036854775807)",
         8, None),
        ("SELECT " + "9" * 5000 + " FROM T;",
         "number is too long (5000 characters; the limit is 256)", 8, None),
        ("SELECT a FROM T WHERE a IN ();", "unexpected ')', expected an expression", 29, None),
        ("SELECT CASE a WHEN 1 THEN 2 END FROM T;", "unexpected name 'a', expected WHEN", 13,
         None),
    ],
)
def test_other_mistakes(text: str, message: str, column: int, hint: str | None) -> None:
    err = _error(text)
    assert (err.message, err.pos.line, err.pos.column, err.hint) == (message, 1, column, hint)
