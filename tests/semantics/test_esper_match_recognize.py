"""MATCH_RECOGNIZE (Esper's and SQL:2016's row pattern recognition), hand-checked row by
row; semantics in ``cep.engine.row_patterns.rule`` and docs/esper.md#match_recognize."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, v double) TIMESTAMP ts;\n"
PRICES = [10, 12, 11, 9, 8, 7, 10, 12, 13, 9, 8, 11]
V_SHAPE = ("SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k "
           "MEASURES A.v AS top, LAST(B.v) AS bottom, COUNT(B.v) AS falls, C.v AS back {skip}"
           "PATTERN (A B+ C) {within} DEFINE B AS B.v < prev(B.v), C AS C.v > prev(C.v) );")


def rows(prices, key="x"):
    return [dict(k=key, ts=i * SEC, v=float(p)) for i, p in enumerate(prices)]


def run(run_epl, rule, events):
    out = run_epl(SCHEMA + rule, events)
    for size in (1, 4):
        assert run_epl(SCHEMA + rule, events, batch_size=size) == out
    return out


def v_shapes(out):
    return [(r["ts"][17:19], r["top"], r["bottom"], r["falls"], r["back"]) for r in out]


def test_v_shape_past_last_row(run_epl):
    # start 1 (12) falls 11 9 8 7 and rises at 10 (6 s); the next match starts after it:
    # 12 does not fall to 13, 13 falls 9 8 and rises at 11
    out = run(run_epl, V_SHAPE.format(skip="", within=""), rows(PRICES))
    assert v_shapes(out) == [("06", 12.0, 7.0, 4, 10.0), ("11", 13.0, 8.0, 2, 11.0)]


def test_v_shape_to_next_row_overlaps(run_epl):
    out = run(run_epl, V_SHAPE.format(skip="AFTER MATCH SKIP TO NEXT ROW ", within=""),
              rows(PRICES))
    assert v_shapes(out) == [
        ("06", 12.0, 7.0, 4, 10.0), ("06", 11.0, 7.0, 3, 10.0), ("06", 9.0, 7.0, 2, 10.0),
        ("06", 8.0, 7.0, 1, 10.0), ("11", 13.0, 8.0, 2, 11.0), ("11", 9.0, 8.0, 1, 11.0)]


def test_within_drops_starts_that_run_out_of_time(run_epl):
    out = run(run_epl, V_SHAPE.format(skip="", within="WITHIN 4 sec "), rows(PRICES))
    # from 1 s and 2 s the rise at 6 s is 4 s or more away; from 3 s (9) it is not
    assert v_shapes(out) == [("06", 9.0, 7.0, 2, 10.0), ("11", 13.0, 8.0, 2, 11.0)]


def test_partitions_are_independent(run_epl):
    events = sorted(rows(PRICES, "x") + rows([5, 4, 6, 1], "y"), key=lambda e: e["ts"])
    out = run(run_epl, V_SHAPE.format(skip="", within=""), events)
    assert [(r["key"], r["top"], r["back"]) for r in out] == [
        ("y", 5.0, 6.0), ("x", 12.0, 10.0), ("x", 13.0, 11.0)]


def test_after_the_esper_reference_example_two_readings_apart(run_epl):
    # Esper reference, "EPL Reference: Match Recognize", first example: pattern (A B) with
    # B defined as a temperature at least 10 away from A's
    rule = ("SELECT a_v, b_v FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a_v, "
            "B.v AS b_v PATTERN (A B) DEFINE B AS abs(B.v - A.v) >= 10 );")
    out = run(run_epl, rule, rows([99, 100, 98, 110, 100, 85, 95]))
    # (99,100) no; from 100: 98 no; from 98: 110 yes; from 100 (4 s): 85 yes
    assert [(r["a_v"], r["b_v"]) for r in out] == [(98.0, 110.0), (100.0, 85.0)]


def test_greedy_and_reluctant_choose_among_matches_ending_on_one_row(run_epl):
    rule = ("SELECT x, y FROM S MATCH_RECOGNIZE ( MEASURES X.v AS x, Y.v AS y "
            "PATTERN (A X{q} Y? Z) DEFINE A AS A.v = 0, X AS X.v = 1, Y AS Y.v = 1, "
            "Z AS Z.v = 2 );")
    events = rows([0, 1, 2])
    assert [(r["x"], r["y"]) for r in run(run_epl, rule.format(q="?"), events)] == [
        (1.0, None)]
    assert [(r["x"], r["y"]) for r in run(run_epl, rule.format(q="??"), events)] == [
        (None, 1.0)]


def test_alternation_prefers_the_left_branch_and_aggregates(run_epl):
    rule = ("SELECT n, s, lo, hi FROM S MATCH_RECOGNIZE ( MEASURES count(*) AS n, "
            "sum(B.v) AS s, min(B.v) AS lo, max(C.v) AS hi PATTERN (A (B | C){2,3} D) "
            "DEFINE A AS A.v = 0, B AS B.v < 5, C AS C.v < 10, D AS D.v >= 10 );")
    out = run(run_epl, rule, rows([0, 3, 7, 4, 20]))
    assert [(r["n"], r["s"], r["lo"], r["hi"]) for r in out] == [(5, 7.0, 3.0, 7.0)]


@pytest.mark.parametrize(("rule", "message"), [
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A) DEFINE Q AS Q.v > 1 );",
     "DEFINE names 'Q'"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A) DEFINE A AS A.v > 1 ) "
     "WHERE a > 1;", "WHERE is not allowed with MATCH_RECOGNIZE"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A{3,2}) "
     "DEFINE A AS A.v > 1 );", "is empty"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A B) "
     "DEFINE B AS B.v > prev(B.v, 0) );", "row offset of prev()"),
    # an aggregate's argument may be an expression (sum(A.v * 2)), of one variable's rows
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES sum(A.v * B.v) AS a PATTERN (A B) "
     "DEFINE A AS A.v > 1 );", "reads the rows of one pattern variable"),
    # SQL:2016 allows aggregates in DEFINE (issue 43): count(*) > 1 is no misuse now
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A B) "
     "DEFINE A AS sum(A.v * B.v) > 1 );", "reads the rows of one pattern variable"),
    # SQL:2016 allows NEXT in DEFINE (issue 43): next(A.v) is no misuse now, nested is
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A B) "
     "DEFINE B AS B.v > next(next(A.v)) );", "navigates to a field"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a AFTER MATCH SKIP TO LAST Q "
     "PATTERN (A) DEFINE A AS A.v > 1 );", "names 'Q'"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (A) "
     "DEFINE A AS A.v > MATCH_NUMBER() );", "MATCH_NUMBER\\(\\) is not allowed in DEFINE"),
    ("SELECT v FROM S MATCH_RECOGNIZE ( MEASURES A.v AS v ALL ROWS PER MATCH PATTERN (A) "
     "DEFINE A AS A.v > 1 );", "measure 'v' has the name of a field"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES A.v AS a PATTERN (PERMUTE(A, B, C, D, E, F)) "
     "DEFINE A AS A.v > 1 );", "PERMUTE takes at most"),
    ("SELECT a FROM S MATCH_RECOGNIZE ( MEASURES FIRST(A.v + 1) AS a PATTERN (A) "
     "DEFINE A AS A.v > 1 );", "navigates to a field"),
])
def test_misuse(rule, message):
    with pytest.raises(RuleError, match=message):
        compile_text(SCHEMA + rule)


def test_state_time_to_live_bounds_undecided_starts():
    rule = SCHEMA + V_SHAPE.format(skip="", within="")
    assert compile_text(rule, state_ttl_us=5_000_000).stateful[0].within_us == 5_000_000
    assert compile_text(rule).stateful[0].within_us is None
    with pytest.raises(RuleError, match="state time-to-live needs event time"):
        compile_text(rule.replace("TIMESTAMP ts", ""), state_ttl_us=5_000_000)
