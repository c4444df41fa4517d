"""Esper's match-until in patterns: ``[n:m] x``, ``[n:] x until u``, ``[:m] x until u``,
``x until u``, ``[n] x until u`` (hand-checked; semantics in
``cep.engine.patterns.interpreter``)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, kind string, v int) TIMESTAMP ts;\n"
SELECT = ("SELECT b[0].v AS b0, b[1].v AS b1, b[2].v AS b2, c.v AS cv FROM PATTERN [{}] "
          "PARTITION BY k;")


def events(word):
    """``"B B C"``: one event per letter, kind = the letter, v = its position."""
    return [dict(k="x", ts=i * SEC, kind=kind, v=i) for i, kind in enumerate(word.split())]


def run(run_epl, pattern, word):
    select = SELECT if "until" in pattern else SELECT.replace("c.v AS cv", "NULL AS cv")
    rule = SCHEMA + select.format(pattern)
    out = run_epl(rule, events(word))
    assert run_epl(rule, events(word), batch_size=1) == out
    return [(r["b0"], r["b1"], r["b2"], r["cv"]) for r in out]


B, C = "b=S(kind = 'B')", "c=S(kind = 'C')"


@pytest.mark.parametrize(("pattern", "word", "expected"), [
    # at least two B, ended by C: all the B before it, and the C
    (f"[2:] {B} until {C}", "B B B C B", [(0, 1, 2, 3)]),
    # C after one B only: permanently false, nothing more
    (f"[2:] {B} until {C}", "B C B B C", []),
    # every restarts it after it turned false (Esper): the second try matches
    (f"every ([2:] {B} until {C})", "B C B B C", [(2, 3, None, 4)]),
    # a range without until completes on its upper bound
    (f"[2:3] {B}", "B A B B B", [(0, 2, 3, None)]),
    (f"[2:3] {B} until {C}", "B C", []),
    (f"[2:3] {B} until {C}", "B B C B", [(0, 1, None, 2)]),
    # at most two: C with none is a match; the upper bound ends it without C
    (f"[:2] {B} until {C}", "C B", [(None, None, None, 0)]),
    (f"[:2] {B} until {C}", "B B C", [(0, 1, None, None)]),
    # zero or more B until C
    (f"{B} until {C}", "B A B C", [(0, 2, None, 3)]),
    # [n] with until: n B before C, or false
    (f"[2] {B} until {C}", "B C B B", []),
    (f"[2] {B} until {C}", "B B C", [(0, 1, None, None)]),
    # an event that completes both: until goes first
    (f"[1:3] {B} until c=S(v >= 1)", "B B B", [(0, None, None, 1)]),
])
def test_match_until(run_epl, pattern, word, expected):
    assert run(run_epl, pattern, word) == expected


def test_match_until_after_followed_by_sees_earlier_tags(run_epl):
    rule = SCHEMA + ("SELECT a.v AS av, b[0].v AS b0, c.v AS cv FROM PATTERN [every a=S(kind = 'A')"
                     " -> ([1:] b=S(kind = 'B', v > a.v) until c=S(kind = 'C'))] PARTITION BY k;")
    out = run_epl(rule, events("A B A B C"))
    assert [(r["av"], r["b0"], r["cv"]) for r in out] == [(0, 1, 4), (2, 3, 4)]


@pytest.mark.parametrize(("pattern", "message"), [
    (f"[2:] {B}", "needs 'until'"),
    (f"[3:2] {B} until {C}", "is empty"),
])
def test_misuse(pattern, message):
    with pytest.raises(RuleError, match=message):
        compile_text(SCHEMA + SELECT.format(pattern))
