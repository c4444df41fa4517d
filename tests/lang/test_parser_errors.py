"""Parse errors are RuleErrors that point at the mistake and read like a compiler's.

Every file in ``tests/data/broken`` holds one realistic mistake. Its first line is
``-- expect: L:C`` (where the error must be reported) and its second ``-- says: text``
(a piece of the message or its hint that shows the message is the helpful one);
:data:`MESSAGES` holds each file's whole message and hint.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cep.lang.errors import RuleError
from cep.lang.parser import MAX_DEPTH, MAX_TEXT_CHARS, parse

BROKEN = sorted((Path(__file__).parent.parent / "data" / "broken").glob("*.epl"))
TOO_DEEP = ("expression nested too deeply (more than 200 levels)",
            "split it with a derived stream (INSERT INTO) or simplify it")

# each broken file's (message, hint)
MESSAGES: dict[str, tuple[str, str | None]] = {
    'annotation_unclosed': (
        "unexpected keyword SELECT, expected ')'",
        "the '(' at line 3, column 6 is not closed"),
    'annotation_with_name_value': (
        "unexpected name 'first_story', expected one of: FALSE, NULL, TRUE, a number or a string",
        "if 'first_story' is a text value, quote it: 'first_story'"),
    'bad_type_in_schema': (
        "unknown type 'integr'; the types are boolean, double, int, long, string, timestamp",
        "did you mean 'integer'?"),
    'bad_type_in_variable': (
        "unknown type 'real'; the types are boolean, double, int, long, string, timestamp",
        None),
    'between_without_and': (
        'unexpected number 20, expected one of: AND, an operator or a time unit',
        None),
    'case_without_end': ('unexpected keyword AS, expected one of: END or an operator', None),
    'chained_comparison': (
        "unexpected '<', expected one of: '(', '.', ';', '[', GROUP, HAVING, OUTPUT, "
        'PARTITION, an operator or end of input',
        'comparisons do not chain: write a < b AND b < c'),
    'count_distinct_nothing': ("unexpected ')', expected an expression", None),
    'create_table': ("unexpected name 'TABLE', expected one of: SCHEMA or VARIABLE", None),
    'dangling_dot': (
        "unexpected keyword FROM, expected one of: '*' or a name",
        "'FROM' is a reserved word and cannot be used as a name"),
    'double_equals': ("'==' is not an operator; compare with a single '='", None),
    'double_semicolon': (
        "unexpected ';', expected one of: '@', CREATE, INSERT, SELECT or end of input",
        "remove the extra ';'"),
    'empty_pattern': ("unexpected ']', expected a pattern", None),
    'every_with_nothing': ("unexpected ']', expected a pattern", None),
    'followed_by_with_nothing_after': ("unexpected ']', expected a pattern", None),
    'group_without_by': ("unexpected name 'topic', expected BY", None),
    'in_without_parens': ("unexpected string 'en', expected '('", None),
    'insert_without_into': ("unexpected name 'KeyedTweet', expected INTO", None),
    'integer_out_of_range': (
        'integer 99999999999999999999 is out of range (the largest is 9223372036854775807)',
        None),
    'invalid_number': ("invalid number '1.2.3'", None),
    'is_not_without_null': ("unexpected string 'en', expected NULL", None),
    'match_recognize_bad_quantifier': (
        "unexpected name 'x', expected one of: '}' or a number",
        None),
    'match_recognize_without_define': ("unexpected ')', expected one of: DEFINE or WITHIN", None),
    'missing_alias_after_as': (
        'unexpected keyword WHERE, expected a name',
        "'WHERE' is a reserved word and cannot be used as a name"),
    'missing_comma_between_sources': (
        "unexpected name 'Tweet', expected one of: ',', ';', GROUP, HAVING, OUTPUT, PARTITION, "
        'WHERE or end of input',
        "is a ',' missing before 'Tweet'?"),
    'missing_from': (
        'missing FROM clause before keyword WHERE',
        'a rule reads FROM a stream or pattern'),
    'missing_from_at_end': (
        'missing FROM clause before end of input',
        'a rule reads FROM a stream or pattern'),
    'missing_semicolon_before_annotation': (
        "missing ';' at the end of this statement",
        "every statement ends with ';' (the next one starts at line 4)"),
    'missing_semicolon_between_statements': (
        "missing ';' at the end of this statement",
        "every statement ends with ';' (the next one starts at line 4)"),
    'misspelled_select': (
        "unexpected name 'SELEC', expected one of: ';', '@', CREATE, INSERT, SELECT or end of "
        'input',
        'did you mean SELECT?'),
    'number_glued_to_unit': (
        "invalid number '10min'",
        "put a space between the number and the unit: '10 min'"),
    'old_view_without_parens': (
        "unexpected number 5, expected one of: '#', '(', ',', '.', ';', AS, GROUP, HAVING, "
        'OUTPUT, PARTITION, WHERE, a name or end of input',
        'window arguments go in parentheses: length(...)'),
    'pattern_unclosed_bracket': (
        "unexpected keyword PARTITION, expected one of: '(', '->', ']', AND, OR, UNTIL, WHERE "
        'or WITHIN',
        "the '[' at line 3, column 26 is not closed"),
    'pattern_without_brackets': ("unexpected keyword EVERY, expected '['", None),
    'repeat_count_zero': ('a repeat count must be a whole number of at least 1', None),
    'repeat_range_unclosed': ("unexpected name 'b', expected one of: ']' or a number", None),
    'reserved_word_as_field': (
        'unexpected keyword END, expected one of: a name or a string',
        "'end' is a reserved word and cannot be used as a name"),
    'schema_field_without_type': ("unexpected ',', expected a name", None),
    'schema_format_before_a_path': ("FORMAT goes after the field's last FROM path", None),
    'schema_path_without_from': (
        "a path can only follow FROM: name type FROM 'path', 'path'",
        None),
    'schema_trailing_comma': (
        "unexpected ')', expected one of: a name or a string",
        "remove the trailing ','"),
    'select_distinct': (
        "unexpected keyword DISTINCT, expected one of: '*', IRSTREAM, ISTREAM, RSTREAM or an "
        'expression',
        'SELECT DISTINCT is not supported (count(DISTINCT x) is)'),
    'stray_ampersand': ("unexpected character '&'", 'write AND, not &&'),
    'stray_dollar': ("unexpected character '$'", None),
    'time_units_out_of_order': (
        "time unit 'hour' out of order",
        'write the units from largest to smallest, each once: 1 hour 30 min'),
    'timer_interval_without_parens': (
        "unexpected number 10, expected '('",
        'window arguments go in parentheses: interval(...)'),
    'timer_within_without_where': (
        "unexpected keyword TIMER, expected one of: '(', '->', ']', AND, OR, UNTIL, WHERE or "
        'WITHIN',
        'a pattern guard is written: where timer:within(10 sec)'),
    'trailing_comma_in_select': (
        "unexpected keyword FROM, expected one of: '*' or an expression",
        "remove the trailing ','"),
    'unclosed_comment': ("unterminated comment: '/*' is never closed by '*/'", None),
    'unclosed_comment_at_end': ("unterminated comment: '/*' is never closed by '*/'", None),
    'unclosed_double_quoted_string': (
        'unterminated string: no closing " on this line',
        "strings cannot span lines; write a quote inside one as '' or \\'"),
    'unclosed_paren_in_call': (
        "unexpected keyword AS, expected one of: ')', ',' or an operator",
        "the '(' at line 3, column 11 is not closed"),
    'unclosed_paren_in_filter': (
        "unexpected '#', expected one of: ')', ',' or an operator",
        "the '(' at line 4, column 11 is not closed"),
    'unclosed_string': (
        "unterminated string: no closing ' on this line",
        "strings cannot span lines; write a quote inside one as '' or \\'"),
    'unknown_escape': (
        "unknown escape sequence '\\%' in a string",
        'the escapes are \\n \\t \\r \\\\ \\\' and \\"; write \'\\\\\' for a backslash'),
    'unknown_old_view': (
        "unknown window 'sliding'; the windows are ext_timed, firstlength, firsttime, "
        'groupwin, keepall, lastevent, length, length_batch, time, time_batch, '
        'time_length_batch, unique',
        None),
    'unknown_time_unit': (
        "unknown time unit 'mins'; did you mean 'min'?",
        "time units are day(s), hour(s), minute(s) or min, second(s) or sec, "
        "millisecond(s), msec or ms, microsecond(s) or usec"),
    'unknown_window_kind': (
        "unknown window 'lenght'; the windows are ext_timed, firstlength, firsttime, groupwin, "
        'keepall, lastevent, length, length_batch, time, time_batch, time_length_batch, unique',
        "did you mean 'length'?"),
    'unmatched_close_paren': ("unmatched ')'", 'there is no open bracket to close'),
    'variable_without_type': (
        "unexpected '=', expected a name",
        'a variable is declared with its type: CREATE VARIABLE double tau = 0.2'),
    'where_without_condition': ("unexpected ';', expected an expression", None),
    'window_missing_argument': (
        "wrong number of arguments for window 'time' (0 given)",
        'write it as #time(T)'),
    'window_too_many_arguments': (
        "wrong number of arguments for window 'length' (2 given)",
        'write it as #length(n)'),
    'window_without_parens': (
        "unexpected number 5, expected one of: '#', '(', ',', '.', ';', AS, GROUP, HAVING, "
        'OUTPUT, PARTITION, WHERE, a name or end of input',
        'window arguments go in parentheses: length(...)'),
    'within_without_duration': ("unexpected ']', expected an expression", None),
    'wrong_view_namespace': (
        "the window 'lastevent' is 'std:lastevent', not 'win:lastevent'",
        None),
}


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
    assert (err.message, err.hint) == MESSAGES[path.stem]
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
