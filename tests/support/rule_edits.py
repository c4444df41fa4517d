"""Token-level edits of rule text for the parser's and the checker's fuzz tests: whole
tokens dropped, repeated, swapped or replaced, so the text stays lexically plausible."""

from __future__ import annotations

import re

from hypothesis import strategies as st

VOCABULARY = [
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "HAVING", "PARTITION", "INSERT", "INTO", "AS",
    "PATTERN", "every", "not", "and", "or", "WITHIN", "where", "timer", ":", "within", "->",
    "CREATE", "SCHEMA", "VARIABLE", "TIMESTAMP", "CASE", "WHEN", "THEN", "ELSE", "END", "IN",
    "BETWEEN", "LIKE", "IS", "NULL", "DISTINCT", "(", ")", "[", "]", ",", ";", ".", "#", "@",
    "*", "=", "==", "<>", "<=", "-", "||", "'x'", '"', "'", "10", "1.5", "1e999", "min",
    "hour", "sec", "std:", "win:", "length", "lastevent", "groupwin", "/*", "*/", "--", "$",
    "\n", " ", "\t", "é", "\x00", "99999999999999999999",
]
TOKEN = re.compile(r"\s+|--[^\n]*|/\*.*?\*/|'[^'\n]*'|\w+|->|<=|>=|<>|!=|\|\||.", re.S)


def edit_tokens(draw: st.DrawFn, tokens: list[str]) -> str:
    """Drop, repeat, swap or replace whole tokens (keeps the text lexically plausible)."""
    if not tokens:
        return draw(st.sampled_from(VOCABULARY))
    k = draw(st.integers(0, len(tokens) - 1))
    edit = draw(st.sampled_from(["drop", "repeat", "swap", "replace", "insert"]))
    if edit == "drop":
        del tokens[k]
    elif edit == "repeat":
        tokens.insert(k, tokens[k])
    elif edit == "swap" and k + 1 < len(tokens):
        tokens[k], tokens[k + 1] = tokens[k + 1], tokens[k]
    elif edit == "replace":
        tokens[k] = draw(st.sampled_from(VOCABULARY))
    else:
        tokens.insert(k, " " + draw(st.sampled_from(VOCABULARY)) + " ")
    return "".join(tokens)
