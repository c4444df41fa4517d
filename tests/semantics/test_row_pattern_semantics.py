"""RUNNING and FINAL written before a call inside a MATCH_RECOGNIZE expression, as SQL:2016
and Trino have them: each applies to the navigation or aggregate it is written before
(``FINAL LAST(A.value) - RUNNING FIRST(A.value)``, ``RUNNING count(*) * 2``,
``PREV(FINAL LAST(value))``); RUNNING is the default; with ONE ROW PER MATCH the two
coincide. Hand-checked; each query also runs in batches of one and two events. The
Spark test tests/spark/test_trino_cases_on_spark.py runs these cases too."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA T (id int, value int, ts timestamp) TIMESTAMP ts;\n"


def query(run_epl, text, values, columns):
    """The rows ``text`` outputs over ``values`` (ids from 1), in output order."""
    events = [dict(id=i, value=v, ts=i * SEC) for i, v in enumerate(values, start=1)]
    out = run_epl(SCHEMA + text, events)
    for size in (1, 2):
        assert run_epl(SCHEMA + text, events, batch_size=size) == out
    return [tuple(r[c] for c in columns) for r in out]


def test_each_call_has_its_own_semantics(run_epl):
    text = ("SELECT id, d, c, rest, p, s FROM T MATCH_RECOGNIZE ( MEASURES "
            "FINAL LAST(A.value) - RUNNING FIRST(A.value) AS d, RUNNING count(*) * 2 AS c, "
            "FINAL count(*) - count(*) AS rest, PREV(FINAL LAST(value)) AS p, "
            "FINAL sum(A.value) - sum(value) AS s ALL ROWS PER MATCH PATTERN (A+) "
            "DEFINE A AS true );")
    # one match of three rows: FINAL reads all of it, RUNNING (the default) up to the row
    assert query(run_epl, text, [10, 20, 30], ("id", "d", "c", "rest", "p", "s")) == [
        (1, 20, 2, 2, 20, 50), (2, 20, 4, 1, 20, 30), (3, 20, 6, 0, 20, 0)]


def test_running_and_final_coincide_with_one_row_per_match(run_epl):
    text = ("SELECT r, f, z FROM T MATCH_RECOGNIZE ( MEASURES RUNNING count(*) AS r, "
            "FINAL count(*) AS f, RUNNING LAST(value) - FINAL LAST(value) AS z "
            "ONE ROW PER MATCH PATTERN (A+) DEFINE A AS true );")
    assert query(run_epl, text, [10, 20, 30], ("r", "f", "z")) == [(3, 3, 0)]


def test_a_measure_starting_with_final_is_final_but_where_a_call_says_running(run_epl):
    # FINAL before a parenthesis or a field applies to the whole measure (cep's older
    # form); a call's own RUNNING inside it still wins
    text = ("SELECT id, x, fa FROM T MATCH_RECOGNIZE ( MEASURES "
            "FINAL (sum(value) - RUNNING sum(value)) AS x, FINAL A.value AS fa "
            "ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true );")
    assert query(run_epl, text, [10, 20, 30], ("id", "x", "fa")) == [
        (1, 50, 30), (2, 30, 30), (3, 0, 30)]


def test_running_in_define_is_the_default(run_epl):
    text = ("SELECT n FROM T MATCH_RECOGNIZE ( MEASURES count(*) AS n PATTERN (A+) "
            "DEFINE A AS {mode}count(*) <= 2 AND {mode}LAST(A.value) > 0 );")
    assert query(run_epl, text.format(mode="RUNNING "), [1, 2, 3, 4, 5], ("n",)) == query(
        run_epl, text.format(mode=""), [1, 2, 3, 4, 5], ("n",)) == [(2,), (2,), (1,)]


def test_fields_named_running_and_final_stay_usable(run_epl):
    schema = "CREATE SCHEMA F (running int, final int, ts timestamp) TIMESTAMP ts;\n"
    text = ("SELECT x FROM F MATCH_RECOGNIZE ( MEASURES 1 + final + running AS x "
            "PATTERN (A) DEFINE A AS final in (1, 2) AND running > 0 );")
    out = run_epl(schema + text, [dict(running=5, final=f, ts=f * SEC) for f in (1, 3)])
    assert [r["x"] for r in out] == [7]


@pytest.mark.parametrize(("rule", "message"), [
    ("MEASURES A.value AS v PATTERN (A B) DEFINE B AS FINAL LAST(A.value) > 1",
     "FINAL is not allowed in DEFINE"),
    ("MEASURES FINAL MATCH_NUMBER() AS v PATTERN (A) DEFINE A AS true",
     "FINAL does not apply to match_number()"),
    ("MEASURES 1 + RUNNING lower(CLASSIFIER()) AS v PATTERN (A) DEFINE A AS true", None),
])
def test_misplaced_semantics_are_refused_where_written(rule, message):
    head = "SELECT v FROM T MATCH_RECOGNIZE ( "
    text = SCHEMA + head + rule + " );"
    column = len(head) + rule.find("FINAL") + 1  # the error points at FINAL
    if message is None:  # RUNNING before another function is not a keyword: a syntax error
        with pytest.raises(RuleError) as error:
            compile_text(text, "r.epl")
        assert error.value.pos.line == 2
        return
    with pytest.raises(RuleError, match=message) as error:
        compile_text(text, "r.epl")
    assert (error.value.pos.line, error.value.pos.column) == (2, column)


def test_semantics_outside_match_recognize_are_refused():
    with pytest.raises(RuleError, match="FINAL applies only in MATCH_RECOGNIZE") as error:
        compile_text(SCHEMA + "SELECT final count(*) AS n FROM T;", "r.epl")
    assert (error.value.pos.line, error.value.pos.column) == (2, 8)
