"""The parser builds the documented AST for expressions: operator precedence, positions,
calls and attributes, and literals (numbers, strings, booleans, null and time periods).
Whole files, statements, sources and patterns are in tests/grammar/test_parser.py, whose
helpers this module uses."""

from __future__ import annotations

import pytest
from test_parser import MINUTE, expr, rule, sexpr, strip

from grammar import ast
from grammar.errors import Pos

# ---------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a or b and c", "(or a (and b c))"),
        ("a and b or c", "(or (and a b) c)"),
        ("a or b or c", "(or (or a b) c)"),
        ("not a and b", "(and (not a) b)"),
        ("not not a", "(not (not a))"),
        ("not a = b", "(not (= a b))"),
        ("a = b and c <> d", "(and (= a b) (!= c d))"),
        ("a != b", "(!= a b)"),
        ("a < b or a <= b or a > b or a >= b",
         "(or (or (or (< a b) (<= a b)) (> a b)) (>= a b))"),
        ("a = b || c", "(= a (|| b c))"),
        ("a || b || c", "(|| (|| a b) c)"),
        ("a || b + c", "(|| a (+ b c))"),
        ("a + b * c", "(+ a (* b c))"),
        ("a * b + c", "(+ (* a b) c)"),
        ("a - b - c", "(- (- a b) c)"),
        ("a / b % c * d", "(* (% (/ a b) c) d)"),
        ("(a + b) * c", "(* (+ a b) c)"),
        ("-a * b", "(* (- a) b)"),
        ("a * -b", "(* a (- b))"),
        ("- - a", "(- (- a))"),
        ("-a.b", "(- a.b)"),
        ("a - -1", "(- a (- 1))"),
        ("a + b > c * d", "(> (+ a b) (* c d))"),
        ("a is null", "(is-null a)"),
        ("a + 1 IS NOT NULL or b", "(or (is-not-null (+ a 1)) b)"),
        ("a in (1, 'x', b)", "(in a 1 'x' b)"),
        ("a not in (1) and b", "(and (not-in a 1) b)"),
        ("a between 1 and 2 and c", "(and (between a 1 2) c)"),
        ("a not between b + 1 and c * 2", "(not-between a (+ b 1) (* c 2))"),
        ("a like 'x%' and b not like c", "(and (like a 'x%') (not-like b c))"),
        ("not a like b", "(not (like a b))"),
        ("a.b + t[0].c - t[12].d", "(- (+ a.b t[0].c) t[12].d)"),
        ("f(a, b + 1)", "f(a (+ b 1))"),
        ("f()", "f()"),
        ("count(*)", "count(*)"),
        ("count(distinct a)", "count(distinct a)"),
        ("COUNT(DISTINCT a, b)", "count(distinct a b)"),
        ("max(a) - min(b)", "(- max(a) min(b))"),
        ("case when a > 1 then 'hi' when a is null then 'none' else 'lo' end",
         "(case [(> a 1) 'hi'] [(is-null a) 'none'] 'lo')"),
        ("CASE WHEN a THEN 1 END + 1", "(+ (case [a 1]) 1)"),
        ("true and false or null", "(or (and True False) None)"),
    ],
)
def test_expression_precedence(text: str, tree: str) -> None:
    assert sexpr(expr(text)) == tree


def test_binary_positions_span_both_operands() -> None:
    tree = expr("a +\n  b * c")
    assert tree.pos == Pos(1, 8, 2, 8)
    assert tree.right.pos == Pos(2, 3, 2, 8)
    assert tree.left == ast.Name("a", Pos(1, 8, 1, 9))


def test_count_star_and_distinct_nodes() -> None:
    star = expr("count(*)")
    assert star == ast.Call("count", (ast.Star(Pos(1, 14, 1, 15)),), False, Pos(1, 8, 1, 16))
    assert expr("count(distinct x)").distinct is True


def test_attribute_nodes() -> None:
    assert strip(expr("LE.text")) == ast.Attr("LE", "text", None)
    assert strip(expr("t[3].ts")) == ast.IndexedAttr("t", 3, "ts", None)
    assert strip(expr("text")) == ast.Name("text", None)


# ---------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("text", "value", "type_"),
    [
        ("0", 0, "int"),
        ("42", 42, "int"),
        ("2147483647", 2147483647, "int"),
        ("2147483648", 2147483648, "long"),
        ("9223372036854775807", 9223372036854775807, "long"),
        ("007", 7, "int"),
        ("0.2", 0.2, "double"),
        ("1e3", 1000.0, "double"),
        ("2.5E-3", 0.0025, "double"),
        ("'it''s'", "it's", "string"),
        ("'it\\'s'", "it's", "string"),
        ('"say ""hi"""', 'say "hi"', "string"),
        ('"tab\\there"', "tab\there", "string"),
        ("'a\\nb\\\\c\\r\\\"'", 'a\nb\\c\r"', "string"),
        ("''", "", "string"),
        ("'ünï €'", "ünï €", "string"),
        ("true", True, "boolean"),
        ("FALSE", False, "boolean"),
        ("Null", None, "null"),
    ],
)
def test_literals(text: str, value: object, type_: str) -> None:
    literal = expr(text)
    assert isinstance(literal, ast.Literal)
    assert (literal.value, literal.type) == (value, type_)
    assert type(literal.value) is type(value)


def test_negative_numbers_are_unary_minus() -> None:
    assert sexpr(expr("-2147483648")) == "(- 2147483648)"
    assert expr("-1").operand.type == "int"


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("10 min", 10 * MINUTE),
        ("1 hour 30 minutes", 90 * MINUTE),
        ("500 msec", 500_000),
        ("24 hours", 24 * 60 * MINUTE),
        ("2 days", 2 * 24 * 60 * MINUTE),
        ("5 sec", 5_000_000),
        ("1 second", 1_000_000),
        ("1 minute 1 seconds", 61_000_000),
        ("250 ms", 250_000),
        ("3 milliseconds", 3_000),
        ("7 usec", 7),
        ("1.5 sec", 1_500_000),
        ("0.5 ms", 500),
        ("1 day 2 hours 3 min 4 sec 5 msec 6 usec", 93_784_005_006),
        ("10 MIN", 10 * MINUTE),
        ("2 Hours", 120 * MINUTE),
    ],
)
def test_time_periods(text: str, micros: int) -> None:
    literal = expr(text)
    assert literal == ast.Literal(micros, "duration", literal.pos)
    assert literal.pos == Pos(1, 8, 1, 8 + len(text))


def test_time_period_next_to_min_function_and_aliases() -> None:
    statement = rule(
        "SELECT min(x), 10 min, 10 minx, 10 min AS m, max(t) - 1 min, 5 sec + 1 hour "
        "FROM T#time(10 min)"
    )
    assert [(sexpr(i.expr), i.alias) for i in statement.select] == [
        ("min(x)", None),
        (str(10 * MINUTE), None),
        ("10", "minx"),
        (str(10 * MINUTE), "m"),
        (f"(- max(t) {MINUTE})", None),
        (f"(+ 5000000 {60 * MINUTE})", None),
    ]
    assert statement.sources[0].windows[0].args[0].value == 10 * MINUTE
    assert rule("SELECT a FROM T#time(min)").sources[0].windows[0].args == (
        ast.Name("min", Pos(1, 22, 1, 25)),
    )
