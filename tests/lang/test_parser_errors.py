"""Parse errors are RuleErrors that point at the mistake and read like a compiler's.

Every file in ``tests/data/broken`` holds one realistic mistake. Its first line is
``-- expect: L:C`` (where the error must be reported) and its second ``-- says: text``
(a piece of the rendered message that shows the message is the helpful one).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cep.lang.errors import RuleError
from cep.lang.parser import MAX_DEPTH, MAX_TEXT_CHARS, parse

BROKEN = sorted((Path(__file__).parent.parent / "data" / "broken").glob("*.epl"))


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


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_file_is_reported_at_the_mistake(path: Path) -> None:
    text = path.read_text()
    line, column, says = _header(text)
    err = _error(text, str(path))
    rendered = str(err)
    head, source_line, caret_line, *_ = rendered.splitlines()
    assert head.startswith(f"{path}:{line}:{column}: error: ")
    assert source_line == f"{line:>4} | {text.splitlines()[line - 1]}"
    assert caret_line.index("^") == len(f"{line:>4} | ") + column - 1
    assert set(caret_line.strip()) == {"^"}
    assert says in rendered
    assert err.source == text and err.source_name == str(path)


def test_end_of_input_points_just_after_the_last_token() -> None:
    err = _error("SELECT a FROM T WHERE x >\n\n-- trailing comment\n")
    assert err.message.startswith("unexpected end of input, expected an expression")
    assert (err.pos.line, err.pos.column) == (1, 26)


def test_lark_terminal_names_never_reach_the_user() -> None:
    for text in ("SELECT a FROM T WHERE (a", "SELECT a <= FROM T", "SELECT a FROM T#time(5"):
        message = _error(text).message
        assert not re.search(r"\b(LPAR|RPAR|SEMICOLON|__ANON|NAME|NUMBER|\$END)\b", message)


def test_too_long_input_is_refused_before_parsing() -> None:
    err = _error("SELECT a FROM T;\n" * (MAX_TEXT_CHARS // 17 + 1))
    assert "too long" in err.message
    assert (err.pos.line, err.pos.column) == (1, 1)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT " + "- " * (MAX_DEPTH + 10) + "1 FROM T;",
        "SELECT " + "1 + " * (MAX_DEPTH + 10) + "1 FROM T;",
        "SELECT a FROM T WHERE " + "NOT " * 5000 + "a;",
        "SELECT a FROM PATTERN [" + "every " * 5000 + "a=A];",
        "SELECT a FROM PATTERN [a=A" + " -> a=A" * (MAX_DEPTH + 10) + "];",
    ],
    ids=["minus", "plus-chain", "not", "every", "followed-by-chain"],
)
def test_deep_nesting_is_a_rule_error(text: str) -> None:
    assert "nested too deeply" in _error(text).message


def test_deep_but_allowed_nesting_parses() -> None:
    parse("SELECT " + "- " * (MAX_DEPTH - 10) + "1 FROM T;")
    # Parentheses add no tree level, so they are only bounded by the text size.
    parse("SELECT " + "(" * 3000 + "1" + ")" * 3000 + " FROM T;")


def test_an_unclosed_deep_bracket_is_still_a_rule_error() -> None:
    err = _error("SELECT " + "(" * 3000 + "1 FROM T;")
    assert "is not closed" in str(err)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("SELECT a FROM T WHERE b = 1 ORDER BY a;", "unexpected name 'ORDER'"),
        ("SELECT a FROM T#time(10 min", "unexpected end of input, expected one of: ')'"),
        ("SELECT a FROM T\u00e9;", "unexpected character '\u00e9'"),
        ("SELECT a FROM T WHERE b = 1\x00;", "unexpected character U+0000"),
        ("CREATE SCHEMA T (a long) TIMESTAMP;", "expected a name"),
        ("SELECT t[1.5].a FROM PATTERN [[2] t=T];", "an index must be a whole number"),
        ("SELECT a FROM PATTERN [[2.5] t=T];", "a repeat count must be a whole number"),
        ("SELECT 0.0000001 sec FROM T;", "not a whole number of microseconds"),
        ("SELECT 1e999 FROM T;", "out of range for a double"),
        ("SELECT 1e999 sec FROM T;", "out of range for a double"),
        ("SELECT 99999999999 days FROM T;", "time period is out of range"),
        ("SELECT " + "9" * 200 + " FROM T;", "is out of range"),
        ("SELECT " + "9" * 5000 + " FROM T;", "number is too long"),
        ("SELECT a FROM T WHERE a IN ();", "expected an expression"),
        ("SELECT CASE a WHEN 1 THEN 2 END FROM T;", "expected WHEN"),
    ],
)
def test_other_mistakes(text: str, says: str) -> None:
    assert says in str(_error(text))
