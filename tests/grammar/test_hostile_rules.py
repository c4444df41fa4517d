"""Hostile rule text: whatever a rule file holds, compiling it ends within seconds, either
with a module or with a RuleError that renders as ``file:line:col: error:`` plus a short
source excerpt and a caret, never with another exception (RecursionError above all), and
no part of the text is ever run as Python."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cep.engine.output import output_records
from cep.engine.table import SEQ
from cep.reference import run_reference
from grammar import ir
from grammar.compile import compile_file, compile_text
from grammar.errors import SHOWN_LINE_CHARS, RuleError
from grammar.parser import MAX_DEPTH, MAX_TEXT_CHARS, MAX_TOKENS, TOKEN_LIMITS

ROOT = Path(__file__).parent.parent.parent
SCHEMA = "CREATE SCHEMA T (k string, a long, ts timestamp, s string) TIMESTAMP ts;\n"
SECONDS = 5.0  # the bound on compiling any one text, on the shared 2-core machine


def _statements(n: int) -> str:
    return SCHEMA + "".join(f"@Name('r{i}') SELECT a, s FROM T WHERE a > {i};\n"
                            for i in range(n))


TOO_DEEP = ("expression nested too deeply (more than 200 levels)",
            "split it with a derived stream (INSERT INTO) or simplify it")
TOO_MANY = ("rule text has too many tokens (more than 10000)",
            "split the rules over several files")

# name → (rule text, None if it compiles, else the error: (message, line, column, hint))
HOSTILE: dict[str, tuple[Callable[[], str], tuple[str, int, int, str | None] | None]] = {
    "10k nested parentheses": (
        lambda: SCHEMA + "SELECT " + "(" * 10_000 + "a" + ")" * 10_000 + " AS x FROM T;",
        (TOO_MANY[0], 2, 9988, TOO_MANY[1])),
    "4k nested parentheses": (
        lambda: SCHEMA + "SELECT " + "(" * 4_000 + "a" + ")" * 4_000 + " AS x FROM T;", None),
    "9k parentheses never closed": (
        lambda: SCHEMA + "SELECT " + "(" * 9_000 + "a FROM T;",
        ("unexpected keyword FROM, expected one of: '(', ')', '.', '[' or an operator", 2,
         9010, "the '(' at line 2, column 9007 is not closed")),
    "10k nested parenthesised sums": (
        lambda: SCHEMA + "SELECT " + "(a + " * 10_000 + "a" + ")" * 10_000 + " AS x FROM T;",
        (TOO_MANY[0], 2, 16641, TOO_MANY[1])),
    "1k nested parenthesised sums": (
        lambda: SCHEMA + "SELECT " + "(a + " * 1_000 + "a" + ")" * 1_000 + " AS x FROM T;",
        (TOO_DEEP[0], 2, 989, TOO_DEEP[1])),
    "1k nested calls": (
        lambda: SCHEMA + "SELECT " + "abs(" * 1_000 + "a" + ")" * 1_000 + " AS x FROM T;",
        (TOO_DEEP[0], 2, 400, TOO_DEEP[1])),
    "1k nested CASE": (
        lambda: SCHEMA + "SELECT " + "CASE WHEN a > 1 THEN " * 1_000 + "1" + " END" * 1_000
        + " AS x FROM T;", (TOO_DEEP[0], 2, 2066, TOO_DEEP[1])),
    "1k nested every": (
        lambda: SCHEMA + "SELECT x.a AS a FROM PATTERN [" + "every " * 1_000 + "x=T];",
        (TOO_DEEP[0], 2, 1207, TOO_DEEP[1])),
    "10 MB string literal": (
        lambda: SCHEMA + "SELECT '" + "y" * 10_000_000 + "' AS x FROM T;",
        ("rule text is too long (10000095 characters; the limit is 2097152)", 1, 1, None)),
    "1 MB string literal": (
        lambda: SCHEMA + "SELECT '" + "y" * 1_000_000 + "' AS x FROM T;",
        ("string literal is too long (1000002 characters; the limit is 65536)", 2, 8, None)),
    "60 kB string literal": (
        lambda: SCHEMA + "SELECT a FROM T WHERE s = '" + "y" * 60_000 + "';", None),
    "1e400": (lambda: SCHEMA + "SELECT 1e400 AS x FROM T;",
              ("number 1e400 is out of range for a double", 2, 8, None)),
    "10**1000": (lambda: SCHEMA + "SELECT 1" + "0" * 1000 + " AS x FROM T;",
                 ("number is too long (1001 characters; the limit is 256)", 2, 8, None)),
    "a 200-digit integer": (
        lambda: SCHEMA + "SELECT " + "9" * 200 + " AS x FROM T;",
        ("integer " + "9" * 37 + "... is out of range (the largest is 9223372036854775807)",
         2, 8, None)),
    "a 1 MB name": (lambda: SCHEMA + "SELECT " + "a" * 1_000_000 + " FROM T;",
                    ("name is too long (1000000 characters; the limit is 256)", 2, 8, None)),
    "a 1 MB number glued to a letter": (
        lambda: SCHEMA + "SELECT " + "9" * 1_000_000 + "x;",
        ("invalid number '" + "9" * 37 + "...'", 2, 8, None)),
    "a 5 MB file of statements": (
        lambda: _statements(120_000),
        ("rule text is too long (6257853 characters; the limit is 2097152)", 1, 1, None)),
    "just too many tokens": (lambda: _statements(MAX_TOKENS // 10),
                             (TOO_MANY[0], 625, 42, TOO_MANY[1])),
    "just few enough tokens": (lambda: _statements(MAX_TOKENS // 17), None),
    "100k OR terms": (lambda: SCHEMA + "SELECT a FROM T WHERE " + " OR ".join(
        ["a = 1"] * 100_000) + ";", (TOO_MANY[0], 2, 22469, TOO_MANY[1])),
    "a 3 MB comment": (
        lambda: SCHEMA + "/*" + "x" * 3_000_000 + "*/ SELECT a FROM T;",
        ("rule text is too long (3000094 characters; the limit is 2097152)", 1, 1, None)),
    "a 1 MB comment": (lambda: SCHEMA + "/*" + "x" * 1_000_000 + "*/ SELECT a FROM T;", None),
    "an unclosed 1 MB comment": (
        lambda: SCHEMA + "SELECT a FROM T; /*" + "x" * 1_000_000,
        ("unterminated comment: '/*' is never closed by '*/'", 2, 18, None)),
    "NUL bytes": (lambda: SCHEMA + "SELECT a FROM T\x00\x00;",
                  ("unexpected character U+0000", 2, 16, None)),
    "a NUL in a string": (lambda: SCHEMA + "SELECT a FROM T WHERE s = 'a\x00b';", None),
    "a right-to-left override": (lambda: SCHEMA + "SELECT a FROM T WHERE s = 'x'\u202e;",
                                 ("unexpected character U+202E", 2, 30, None)),
    "a zero-width space": (lambda: SCHEMA + "SELECT\u200b a FROM T;",
                           ("unexpected character U+200B", 2, 7, None)),
    "a non-ASCII name": (lambda: SCHEMA + "SELECT a AS caf\u00e9 FROM T;",
                         ("unexpected character '\u00e9'", 2, 16, None)),
    "emoji and combining marks in a string": (
        lambda: SCHEMA + "SELECT a FROM T WHERE s = 'e\u0301\U0001f600\u202e';", None),
    "a lone surrogate": (lambda: SCHEMA + "SELECT a FROM T WHERE s = '\ud800';", None),
    "Python in a call": (
        lambda: SCHEMA + "SELECT __import__('os').system('true') FROM T;",
        ("unexpected '.', expected one of: ',', AS, FROM, an operator or a name", 2, 24, None)),
    "eval as a function": (lambda: SCHEMA + "SELECT eval('1 + 1') AS x FROM T;",
                           ("unknown function 'eval'", 2, 8, None)),
    "exec as a function": (lambda: SCHEMA + "SELECT exec('import os') AS x FROM T;",
                           ("unknown function 'exec'", 2, 8, None)),
    "a dunder name": (lambda: SCHEMA + "SELECT __class__ FROM T;",
                      ("unknown field or variable '__class__'", 2, 8, None)),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_text_compiles_or_fails_cleanly_in_bounded_time(name: str) -> None:
    make, expected = HOSTILE[name]
    text = make()
    started = time.perf_counter()
    try:
        compile_text(text, "hostile.epl")
        error = None
    except RuleError as err:
        error = err
    elapsed = time.perf_counter() - started
    assert elapsed < SECONDS, f"{name}: {elapsed:.1f}s"
    if expected is None:
        assert error is None, error
        return
    assert error is not None, f"{name} compiled"
    assert (error.message, error.pos.line, error.pos.column, error.hint) == expected
    _assert_clean_diagnostic(error, text)


def _assert_clean_diagnostic(error: RuleError, text: str) -> None:
    """A located message, one excerpt line no wider than the limit, a caret under it, the
    hint, no control characters, and short however large the text."""
    rendered = error.render()
    head, *rest = rendered.split("\n")
    assert head == (f"hostile.epl:{error.pos.line}:{error.pos.column}: error: "
                    f"{error.message}")
    assert len(rest) == (3 if error.hint else 2)
    assert len(rendered) < 1000
    assert not re.search(r"[\x00-\x08\x0b-\x1f\u200b\u202e]", rendered)
    source_line, caret = rest[0], rest[1]
    assert source_line.startswith(f"{error.pos.line:>4} | ")
    assert len(source_line) <= len(f"{error.pos.line:>4} | ") + SHOWN_LINE_CHARS + 6
    assert set(caret.strip()) == {"^"} and len(caret) <= len(source_line) + 1
    if error.hint:
        assert rest[2] == f"  hint: {error.hint}"


def test_the_caret_points_at_the_mistake_inside_a_long_line() -> None:
    text = SCHEMA + "SELECT a FROM T WHERE " + " AND ".join(["a = 1"] * 500) + " AND a ! 1;"
    with pytest.raises(RuleError) as info:
        compile_text(text, "hostile.epl")
    source_line, caret = info.value.render().split("\n")[1:3]
    column = caret.index("^")
    assert source_line[column] == "!"


def test_limits_are_what_the_messages_say() -> None:
    """The limits the expected messages above spell out."""
    assert (MAX_TEXT_CHARS, MAX_TOKENS, MAX_DEPTH) == (2 * 1024 * 1024, 10_000, 200)
    assert TOKEN_LIMITS == {"STRING": 65_536, "NAME": 256, "NUMBER": 256}


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.epl"
    with path.open("wb") as fh:
        fh.truncate(64 << 20)  # a sparse 64 MiB file of NUL bytes
    started = time.perf_counter()
    with pytest.raises(RuleError, match="too large"):
        compile_file(path)
    assert time.perf_counter() - started < 0.5


def test_a_byte_order_mark_is_not_part_of_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "bom.epl"
    rules = ROOT / "rules" / "sensor_average.epl"
    path.write_bytes(b"\xef\xbb\xbf" + rules.read_bytes())
    with_mark, without = compile_file(path), compile_file(rules)
    assert with_mark == dataclasses.replace(without, source_name=str(path))
    assert len(with_mark.stateful) == 1


def _run(module: ir.CompiledModule, texts: list[str]) -> list[dict]:
    n = len(texts)
    tables = {"T": {SEQ: np.arange(n), "k": np.array(["k"] * n, dtype=object),
                    "a": np.arange(n), "ts": np.arange(n) * 1_000_000,
                    "s": np.array(texts, dtype=object)}}
    return output_records(run_reference(module, tables))


EVENTS = MAX_DEPTH + 10  # events 0, 1, ... with a = seq
CHAIN = MAX_DEPTH - 5  # the pattern's atoms: the first match ends at event CHAIN - 1


@pytest.mark.parametrize(("text", "column", "expected"), [
    (SCHEMA + "SELECT " + "- " * (MAX_DEPTH - 5) + "a AS x FROM T;", "x",
     [(i, -i) for i in range(EVENTS)]),
    (SCHEMA + "SELECT " + "a + " * (MAX_DEPTH - 5) + "a AS x FROM T;", "x",
     [(i, (MAX_DEPTH - 4) * i) for i in range(EVENTS)]),
    (SCHEMA + "SELECT a FROM T WHERE " + "NOT " * (MAX_DEPTH - 6) + "(a >= 0);", "a",
     [(i, i) for i in range(EVENTS)]),
    (SCHEMA + "SELECT count(*) AS n FROM T#groupwin(k)#length(3) HAVING "
     + " OR ".join(["count(*) > 0"] * (MAX_DEPTH - 5)) + ";", "n",
     [(i, min(i + 1, 3)) for i in range(EVENTS)]),
    (SCHEMA + "SELECT x0.a AS a FROM PATTERN [every x0=T"
     + "".join(f" -> x{i}=T" for i in range(1, CHAIN)) + "] PARTITION BY k;", "a",
     [(i, i - CHAIN + 1) for i in range(CHAIN - 1, EVENTS)]),
], ids=["minus", "plus", "not", "having", "followed-by"])
def test_the_deepest_accepted_rules_also_run(text: str, column: str,
                                             expected: list[tuple[int, int]]) -> None:
    """The depth cap is low enough for the checker, the evaluator and the pattern matcher,
    which recurse over the tree, even when called from deep inside a test runner; and
    they compute what the rule says: (seq, value) of every output row."""
    out = _run(compile_text(text, "deep.epl"), ["x"] * EVENTS)
    assert [(r["seq"], r[column]) for r in out] == expected


def test_like_patterns_cannot_make_matching_explode() -> None:
    """``%a%a…%b`` took minutes on an 80-character text with the plain regex."""
    module = compile_text(SCHEMA + "SELECT a FROM T WHERE s LIKE '" + "%a" * 30 + "%b';")
    texts = ["a" * 2000, "a" * 2000 + "b", "ab" * 40, "b"]
    started = time.perf_counter()
    out = _run(module, texts)
    assert time.perf_counter() - started < SECONDS
    assert [r["seq"] for r in out] == [1, 2]


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    ("%", "", True), ("%", "anything", True), ("_", "", False), ("_", "x", True),
    ("a%", "abc", True), ("%c", "abc", True), ("%b%", "abc", True), ("a_c", "abc", True),
    ("a%b%c", "aXbYc", True), ("a%b%c", "acb", False), ("%ab%ab", "abab", True),
    ("%ab%ab", "abb", False), ("%a%a", "a", False), ("%a%a", "aa", True),
    ("%a_a%", "xaxa", True), ("%a_a%", "aa", False), ("100%%", "100% sure", True),
    ("a.b", "aXb", False), ("a.b", "a.b", True), ("(x)*", "(x)*", True),
    ("%\n%", "one\ntwo", True), ("%x", "y\nx", True),
])
def test_like_keeps_its_meaning(pattern: str, text: str, matches: bool) -> None:
    module = compile_text(SCHEMA + f"SELECT a FROM T WHERE s LIKE '{_quote(pattern)}';")
    assert [r["seq"] for r in _run(module, [text])] == ([0] if matches else [])


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "''").replace("\n", "\\n")


def test_no_rule_text_reaches_eval_or_exec() -> None:
    """The package never calls eval, exec or compile (the builtins) at all, so no rule
    text can run as Python; numbers and strings are decoded by the parser itself."""
    calls = []
    for path in sorted((ROOT / "cep").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("eval", "exec", "compile", "__import__")):
                calls.append(f"{path}:{node.lineno}")
    assert calls == []


def test_cep_check_on_a_hostile_file_shows_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.epl"
    path.write_text(SCHEMA + "SELECT " + "-(" * 50_000 + "a" + ")" * 50_000 + " FROM T;")
    proc = subprocess.run([sys.executable, "-m", "cep.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"{path}:2:9988: error: {TOO_MANY[0]}\n")
    assert f"  hint: {TOO_MANY[1]}" in proc.stderr
