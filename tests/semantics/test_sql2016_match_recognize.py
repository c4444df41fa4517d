"""MATCH_RECOGNIZE's matching as SQL:2016 defines it and Trino runs it (issue 43):
preferment (greedy prefers more rows, reluctant fewer, alternation its left branch), the
most preferred match of each start, matches held until a row, WITHIN or the end of the
input decides them, and no match lost to merged threads. Hand-checked row by row; every
case also runs in batches of 1, 2 and 3 rows, which must not change a single event."""

from __future__ import annotations

import pytest

from cep.engine.row_patterns import interpreter as matcher
from cep.engine.row_patterns.rule import MatchRecognizeOperator
from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, v double) TIMESTAMP ts;\n"


def rows(values, key="x"):
    return [dict(k=key, ts=i * SEC, v=float(p)) for i, p in enumerate(values)]


def run(run_epl, rule, events):
    out = run_epl(SCHEMA + rule, events)
    for size in (1, 2, 3):
        assert run_epl(SCHEMA + rule, events, batch_size=size) == out
    return out


def rule(measures, pattern, defines, extra="", within=""):
    return (f"SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES {measures} {extra}"
            f"PATTERN ({pattern}) {within}{defines} );")


def test_greedy_a_plus_takes_every_row_and_waits_for_the_end_of_the_input(run_epl):
    # the first example: one match of three rows, not three of one row
    out = run(run_epl, rule("A.v AS a, count(*) AS n", "A+", "DEFINE A AS true"),
              rows([10, 20, 30]))
    assert [(r["seq"], r["a"], r["n"]) for r in out] == [("end", 30.0, 3)]
    # reported with the time of the key's last row
    assert out[0]["ts"].endswith("00:00:02.000Z")


def test_a_held_match_is_decided_by_the_row_that_cannot_extend_it(run_epl):
    out = run(run_epl, rule("A.v AS a, count(*) AS n", "A+", "DEFINE A AS A.v < 25"),
              rows([10, 20, 30, 5]))
    # rows 0-1 match; row 2 (30) cannot extend it and decides it; row 3 starts another,
    # which the input's end decides
    assert [(r["seq"], r["a"], r["n"]) for r in out] == [(2, 20.0, 2), ("end", 5.0, 1)]


V_SHAPE = rule("FIRST(A.v) AS top, LAST(B.v) AS bottom, LAST(C.v) AS back, count(*) AS n",
               "A B+ C+", "DEFINE B AS B.v < prev(B.v), C AS C.v > prev(C.v)")


def test_the_v_shape_takes_the_whole_rise(run_epl):
    # the V: 90 80 70 80 90 | 50 40 60 gives rows 1-5 and 6-8 (1-based)
    out = run(run_epl, V_SHAPE, rows([90, 80, 70, 80, 90, 50, 40, 60]))
    assert [(r["seq"], r["top"], r["bottom"], r["back"], r["n"]) for r in out] == [
        (5, 90.0, 70.0, 90.0, 5), ("end", 50.0, 40.0, 60.0, 3)]


def test_greedy_against_reluctant(run_epl):
    # the worked example of docs/esper.md: B+ takes the whole rise, B+? one row of it
    values = [10, 11, 12, 13, 9]
    measures = "A.v AS a, LAST(B.v) AS b, count(B.v) AS n"
    defines = "DEFINE B AS B.v > prev(B.v)"
    greedy = run(run_epl, rule(measures, "A B+", defines), rows(values))
    assert [(r["seq"], r["a"], r["b"], r["n"]) for r in greedy] == [(4, 10.0, 13.0, 3)]
    reluctant = run(run_epl, rule(measures, "A B+?", defines), rows(values))
    assert [(r["seq"], r["a"], r["b"], r["n"]) for r in reluctant] == [
        (1, 10.0, 11.0, 1), (3, 12.0, 13.0, 1)]


def test_a_reluctant_loop_before_a_greedy_one(run_epl):
    # A*? gives up every row it can to the B+ after it: Trino's preferment
    out = run(run_epl, rule("count(A.v) AS na, count(B.v) AS nb", "A*? B+",
                            "DEFINE B AS B.v > 0"), rows([1, 2, 3]))
    assert [(r["seq"], r["na"], r["nb"]) for r in out] == [("end", 0, 3)]


def test_alternation_prefers_its_left_branch_even_when_the_right_one_is_longer(run_epl):
    out = run(run_epl, rule("count(*) AS n, count(A.v) AS na", "A | B C",
                            "DEFINE A AS A.v = 1, B AS B.v = 1, C AS C.v = 2"),
              rows([1, 2]))
    assert [(r["seq"], r["n"], r["na"]) for r in out] == [(0, 1, 1)]


def test_the_match_of_an_earlier_start_comes_first_and_skips_the_later_one(run_epl):
    # start 0 (A=1) holds its growing match while start 1's shorter one is complete; the
    # earlier start wins and PAST LAST ROW drops start 1
    out = run(run_epl, rule("FIRST(A.v) AS a, count(*) AS n", "A B+",
                            "DEFINE A AS A.v < 3, B AS B.v >= 2"), rows([1, 2, 3, 4, 0]))
    assert [(r["seq"], r["a"], r["n"]) for r in out] == [(4, 1.0, 4)]


def test_to_next_row_reports_every_start_in_start_order(run_epl):
    out = run(run_epl, rule("FIRST(A.v) AS a, count(*) AS n", "A B+",
                            "DEFINE A AS A.v < 3, B AS B.v >= 2",
                            "AFTER MATCH SKIP TO NEXT ROW "), rows([1, 2, 3, 4, 0]))
    assert [(r["seq"], r["a"], r["n"]) for r in out] == [(4, 1.0, 4), (4, 2.0, 3)]


def test_within_ends_a_held_match(run_epl):
    # every row is an A; WITHIN 2 sec ends start 0 at 2 s, deciding its rows 0-1; start 2
    # runs out at 4 s, past the input's end, where the watermark reaches it
    out = run(run_epl, rule("FIRST(A.v) AS a, count(*) AS n", "A+", "DEFINE A AS true",
                            within="WITHIN 2 sec "), rows([1, 2, 3, 4]))
    assert [(r["seq"], r["ts"][17:23], r["a"], r["n"]) for r in out] == [
        (2, "02.000", 1.0, 2), ("end", "04.000", 3.0, 2)]


def test_empty_matches_are_matches(run_epl):
    # A* may match no row: a start where A fails has an empty match (SQL:2016, Trino)
    out = run(run_epl, rule("count(*) AS n, LAST(A.v) AS a", "A*", "DEFINE A AS A.v > 5"),
              rows([1, 7, 8, 2]))
    assert [(r["seq"], r["n"], r["a"]) for r in out] == [
        (0, 0, None), (3, 2, 8.0), (3, 0, None)]


# ---- no match lost: threads merge only when no later DEFINE tells them apart

LOST = "DEFINE X AS X.v = B.v"


@pytest.mark.parametrize("pattern", ["(A | B)* X", "(A | B) X", "A? B? X", "(B | A) X"])
def test_a_thread_a_later_define_tells_apart_is_kept(run_epl, pattern):
    out = run(run_epl, rule("B.v AS b, X.v AS x, count(*) AS n, count(A.v) AS na",
                            pattern, LOST), rows([1, 1]))
    assert [(r["b"], r["x"], r["n"], r["na"]) for r in out] == [(1.0, 1.0, 2, 0)]


def _program(text):
    module = compile_text(SCHEMA + text)
    rule = module.stateful[0]
    return MatchRecognizeOperator(rule, module.streams[rule.stream]).program


def _feed(program, n_rows):
    state = matcher.new_state()
    for i in range(n_rows):
        matcher.open_start(program, state, i)
        matcher.advance(program, state, [True] * len(state["threads"]))
    return state


def test_threads_nothing_tells_apart_merge():
    # (A | B)* X with X reading nothing of A or B: one thread per instruction and start,
    # however many label sequences reach it (2^n without merging)
    program = _program(rule("count(*) AS n", "(A | B)* X", "DEFINE X AS X.v > 100"))
    state = _feed(program, 12)
    per_start = {}
    for start, *_ in state["threads"]:
        per_start[start] = per_start.get(start, 0) + 1
    assert max(per_start.values()) <= len(program.ops)
    # X reading B's last row keeps one thread per place of B's last row
    program = _program(rule("count(*) AS n", "(A | B)* X", LOST))
    state = _feed(program, 12)
    assert max(sum(1 for t in state["threads"] if t[0] == 0), 0) <= 3 * 13
    assert program.reads[0] == (("B",), (), False)


def test_subset_unions_variables_for_navigation_aggregates_and_skip(run_epl):
    # U = (B, C): sum(U.v) in DEFINE counts the candidate row, LAST(U.v) in MEASURES is
    # the last row of B or C, SKIP TO FIRST U the match's first B or C row
    text = rule("FIRST(A.v) AS a, LAST(U.v) AS u, sum(U.v) AS s, count(*) AS n",
                "A (B | C)+", "SUBSET U = (B, C) DEFINE A AS A.v = 0, B AS sum(U.v) < 10, "
                "C AS C.v = 5", "AFTER MATCH SKIP TO FIRST U ")
    out = run(run_epl, text, rows([0, 3, 5, 0, 1]))
    # start 0: U's running sums 3, 8, 8, 9 stay below 10, so (B | C)+ takes every row to
    # the end; the next match may start at row 1 (the first U row), and does at row 3
    # (A = 0, then B = 1)
    assert [(r["seq"], r["a"], r["u"], r["s"], r["n"]) for r in out] == [
        ("end", 0.0, 1.0, 9.0, 5), ("end", 0.0, 1.0, 1.0, 2)]
    with pytest.raises(RuleError, match="SUBSET U names 'Q'") as error:
        compile_text(SCHEMA + rule("A.v AS a", "A B", "SUBSET U = (A, Q) DEFINE A AS true"))
    assert error.value.pos.line == 2


def test_a_follow_run_is_warned_about_matches_only_the_input_end_reports():
    from cep.cli.run import follow_warnings

    anchored = compile_text(SCHEMA + rule("count(*) AS n", "A+ $", "DEFINE A AS true"))
    assert [w.split(":")[0] for w in follow_warnings(anchored)] == ["warning"]
    assert "never reaches" in follow_warnings(anchored)[0]
    assert follow_warnings(compile_text(SCHEMA + rule("count(*) AS n", "^ A+",
                                                      "DEFINE A AS true"))) == []


def test_the_input_end_satisfies_dollar_before_within_runs_out(run_epl):
    # the last start's WITHIN runs out only after the input's end: $ holds first
    text = rule("count(*) AS n", "A+ $", "DEFINE A AS A.v > 0", within="WITHIN 10 sec ")
    out = run(run_epl, text, rows([0, 1, 2]))
    assert [(r["seq"], r["n"]) for r in out] == [("end", 2)]
    # a start whose WITHIN ran out before the input's end is not at the end
    text = rule("count(*) AS n", "A+ $", "DEFINE A AS A.v > 0", within="WITHIN 2 sec ")
    assert [(r["seq"], r["n"]) for r in run(run_epl, text, rows([1, 1, 1, 1]))] == [
        ("end", 2)]


def test_state_of_the_old_matcher_is_refused_not_misread():
    from cep.engine.codec import StateFormatError

    module = compile_text(SCHEMA + rule("count(*) AS n", "A+", "DEFINE A AS true"))
    op = MatchRecognizeOperator(module.stateful[0], module.streams["S"])
    old = {"rows": [], "base": 0, "threads": [[0, 0, []]], "found": {}, "resume": 0}
    with pytest.raises(StateFormatError, match="another layout"):
        op.import_states({"x": old})
    op.import_states({"x": matcher.new_state()})
    assert op.keys() == {"x"}


def test_measures_are_optional(run_epl):
    # SQL:2016 (and Trino) need no MEASURES: one row per match then carries no measure,
    # and ALL ROWS PER MATCH the matched rows' own fields
    pattern = "PATTERN (A B+) DEFINE B AS B.v > prev(B.v)"
    one = run(run_epl, f"SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k {pattern} );",
              rows([1, 2, 3, 1]))
    assert [r["seq"] for r in one] == [3]
    every = run(run_epl, "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k ALL ROWS PER "
                f"MATCH {pattern} );", rows([1, 2, 3, 1]))
    assert [(r["seq"], r["v"]) for r in every] == [(3, 1.0), (3, 2.0), (3, 3.0)]
