"""MATCH_RECOGNIZE's MEASURES as SQL:2016 and Trino read a match:

* RUNNING and FINAL written before a call inside an expression apply to the navigation
  or aggregate they are written before (``FINAL LAST(A.value) - RUNNING
  FIRST(A.value)``, ``RUNNING count(*) * 2``, ``PREV(FINAL LAST(value))``); RUNNING is
  the default; with ONE ROW PER MATCH the two coincide;
* NEXT reads the partition's rows after the match: the match's report waits for them
  (at the row NEXT reads) or for the end of the input (NULL past the partition's last
  row); NEXT in DEFINE is tested in tests/semantics/test_next_in_define.py.

Hand-checked; each query also runs in batches of one and two events. The Spark test
tests/spark/test_trino_cases_on_spark.py runs these cases too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note

from cep.engine.output import output_records
from cep.engine.table import SEQ, SUB
from cep.reference import run_reference
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


def test_final_before_classifier_reads_the_match_s_last_row(run_epl):
    # FINAL CLASSIFIER() is the last row's variable; inside PREV it moves from there
    text = ("SELECT id, fc, pf FROM T MATCH_RECOGNIZE ( MEASURES FINAL CLASSIFIER() AS fc, "
            "PREV(FINAL CLASSIFIER()) AS pf, CLASSIFIER() AS c ALL ROWS PER MATCH "
            "PATTERN (A B+ C) DEFINE B AS B.value > PREV(B.value), C AS C.value < 2 );")
    assert query(run_epl, text, [1, 2, 3, 1], ("id", "fc", "pf")) == [
        (1, "C", "B"), (2, "C", "B"), (3, "C", "B"), (4, "C", "B")]


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


@pytest.mark.parametrize(("rule", "call", "at"), [
    ("MEASURES sum(PREV(A.value)) AS v PATTERN (A) DEFINE A AS true", "PREV", "PREV("),
    ("MEASURES max(FIRST(A.value, 1)) AS v PATTERN (A+) DEFINE A AS true", "FIRST",
     "FIRST("),
    ("MEASURES A.value AS v PATTERN (A B) DEFINE B AS avg(LAST(A.value)) > 1", "LAST",
     "LAST("),
    ("MEASURES A.value AS v PATTERN (A B) DEFINE B AS sum(RUNNING PREV(B.value)) > 1",
     "PREV", "RUNNING"),
])
def test_navigation_inside_an_aggregate_is_refused_where_written(rule, call, at):
    # an aggregate reads one field of a variable's rows: a navigation in its argument
    # would be ignored
    head = "SELECT v FROM T MATCH_RECOGNIZE ( "
    text = SCHEMA + head + rule + " );"
    with pytest.raises(RuleError, match=f"{call}\\(\\) is not allowed in an aggregate") as error:
        compile_text(text, "r.epl")
    assert (error.value.pos.line, error.value.pos.column) == (2, len(head) + rule.find(at) + 1)


def test_semantics_outside_match_recognize_are_refused():
    with pytest.raises(RuleError, match="FINAL applies only in MATCH_RECOGNIZE") as error:
        compile_text(SCHEMA + "SELECT final count(*) AS n FROM T;", "r.epl")
    assert (error.value.pos.line, error.value.pos.column) == (2, 8)


NEXT_ROWS = ("SELECT {cols} FROM T MATCH_RECOGNIZE ( MEASURES {nv} AS nv, "
             "NEXT(CLASSIFIER()) AS nc {rows} PATTERN (A B) "
             "DEFINE B AS B.value > A.value );")


def test_next_past_the_match_waits_for_the_row_it_reads(run_epl):
    # matches on rows 0-1 and 3-4 (0-based, as seq): each is decided at its last row and
    # reported when the row after it arrives (CLASSIFIER is NULL outside the match)
    text = NEXT_ROWS.format(cols="nv, nc", nv="NEXT(B.value)", rows="ONE ROW PER MATCH")
    out = query(run_epl, text, [1, 2, 7, 3, 4, 9], ("seq", "nv", "nc"))
    assert out == [(2, 7, None), (5, 9, None)]
    # with no row after the last match, the input's end reports it (NEXT is NULL)
    out = query(run_epl, text, [1, 2, 7, 3, 4], ("seq", "nv", "nc"))
    assert out == [(2, 7, None), ("end", None, None)]


def test_next_from_each_row_of_all_rows_per_match(run_epl):
    # RUNNING NEXT from each output row: inside the match, then the row after it
    text = NEXT_ROWS.format(cols="id, nv, nc", nv="NEXT(value)", rows="ALL ROWS PER MATCH")
    out = query(run_epl, text, [1, 2, 7, 3, 4], ("seq", "id", "nv", "nc"))
    assert out == [(2, 1, 2, "B"), (2, 2, 7, None), ("end", 4, 4, "B"), ("end", 5, None, None)]


def test_next_further_past_the_match_and_later_matches_wait_in_order(run_epl):
    # matches on rows 0-1 and 2-3; NEXT(B.value, 3) of the first is row 4, which
    # reports it; the second waits for row 6, which never comes: the input's end
    text = ("SELECT mn, nv FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS mn, "
            "NEXT(B.value, 3) AS nv PATTERN (A B) DEFINE B AS B.value > A.value );")
    out = query(run_epl, text, [1, 2, 5, 6, 8, 1], ("seq", "mn", "nv"))
    assert out == [(4, 1, 8), ("end", 2, None)]
    # a match decided while an earlier one waits is reported after it, in match order
    text = ("SELECT mn, nv FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS mn, "
            "NEXT(FIRST(B.value), 3) AS nv PATTERN (A B) DEFINE B AS B.value > A.value );")
    out = query(run_epl, text, [1, 2, 5, 6, 8, 1, 9], ("seq", "mn", "nv"))
    assert out == [(4, 1, 8), (6, 2, 9), ("end", 3, None)]


def test_next_reads_only_the_key_s_own_rows(run_epl):
    schema = "CREATE SCHEMA K (k string, value int, ts timestamp) TIMESTAMP ts;\n"
    text = ("SELECT nv FROM K MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
            "NEXT(B.value) AS nv PATTERN (A B) DEFINE B AS B.value > A.value );")
    events = [dict(k=k, value=v, ts=i * SEC) for i, (k, v) in enumerate(
        [("x", 1), ("x", 2), ("y", 50), ("y", 60), ("x", 3), ("y", 70)])]
    out = run_epl(schema + text, events)
    for size in (1, 2):
        assert run_epl(schema + text, events, batch_size=size) == out
    assert [(r["seq"], r["key"], r["nv"]) for r in out] == [(4, "x", 3), (5, "y", 70)]


def test_a_waiting_match_of_a_within_rule_is_reported_at_the_input_s_end(run_epl):
    # row 1 still runs a start (WITHIN 10 seconds) when the input ends; the match on
    # rows 0-1 waits for row 2, which never comes: reported at the input's end with the
    # time of the key's last row, whether WITHIN runs out after the input's end or, with
    # more rows of another key, before it
    schema = "CREATE SCHEMA P (id int, part string, value int, ts timestamp) TIMESTAMP ts;\n"
    text = ("SELECT mn, nv FROM P MATCH_RECOGNIZE ( PARTITION BY part MEASURES "
            "MATCH_NUMBER() AS mn, NEXT(B.value) AS nv PATTERN (A B) WITHIN 10 seconds "
            "DEFINE B AS B.value > A.value );")
    at_end = ("end", "1970-01-01T00:00:02.000Z", 1, None)
    for tail in ([], [0] * 20):
        events = [dict(id=i, part="x" if i < 3 else "y", value=v, ts=i * SEC)
                  for i, v in enumerate([1, 2, *tail], start=1)]
        out = run_epl(schema + text, events)
        assert [(r["seq"], r["ts"], r["mn"], r["nv"]) for r in out if r["key"] == "x"] == [
            at_end]
    text = text.replace("FROM P MATCH_RECOGNIZE ( PARTITION BY part ", "FROM T MATCH_RECOGNIZE ( ")
    assert query(run_epl, text, [1, 2, 0], ("seq", "mn", "nv")) == [(2, 1, 0)]


DIFF_SCHEMA = "CREATE SCHEMA S (k long, id long, value long, ts timestamp) TIMESTAMP ts;\n"
#: each key's rows (an empty input matches nothing: at least 6 rows)
VALUES = st.lists(st.integers(0, 5), min_size=6, max_size=30)
DIFF_PATTERNS = [
    ("A B+ C+", "B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)", ""),
    ("A+? B", "B AS B.value > A.value", ""),
    ("(A | B)* X", "X AS value = B.value", ""),
    ("A B*", "B AS B.value >= PREV(B.value)", "AFTER MATCH SKIP TO NEXT ROW"),
    ("A{2,3} | C*", "A AS value > 2, C AS value = 0", "AFTER MATCH SKIP TO LAST A"),
]


def _diff_rule(pattern: str, define: str, skip: str, extra: str, within: str) -> str:
    return (DIFF_SCHEMA + "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
            f"MATCH_NUMBER() AS mn, CLASSIFIER() AS c, RUNNING sum(value) AS s{extra} "
            f"ALL ROWS PER MATCH {skip} PATTERN ({pattern}) {within} DEFINE {define} );")


def _keyed_rows(values: list[int], keys: list[int]) -> dict:
    """Stream S: row i has id i, ``values[i]``, key ``keys[i]``, one second apart."""
    m = len(values)
    return {"S": {SEQ: np.arange(m, dtype=np.int64), SUB: np.zeros(m, dtype=np.int64),
                  "k": np.array(keys[:m], dtype=np.int64), "id": np.arange(m, dtype=np.int64),
                  "value": np.array(values, dtype=np.int64),
                  "ts": np.arange(m, dtype=np.int64) * 1_000_000}}


@settings(max_examples=200, deadline=None)
@given(case=st.sampled_from(DIFF_PATTERNS), values=VALUES,
       keys=st.lists(st.integers(0, 2), min_size=30, max_size=30), n=st.integers(1, 3),
       within=st.sampled_from(["", "WITHIN 4 seconds"]), batch=st.integers(2, 9))
def _next_changes_no_match_and_reads_the_key_s_later_rows(case, values, keys, n,
                                                              within, batch):
    """Against the same rule without NEXT: the same matches and rows; NEXT(value, n) is
    the key's n-th row after the output row, NEXT(FINAL LAST(value), n) the n-th after
    the match's last row (NULL where the key has no such row, or the match is empty);
    every cut of the input gives the same events.

    Oracle: the same rule without NEXT for the matches (the same matcher: shared code),
    and a brute-force reading of NEXT over the input for ``nv`` and ``fv`` (no shared
    code).
    """
    pattern, define, skip = case
    m = len(values)
    inputs = _keyed_rows(values, keys)
    plain = compile_text(_diff_rule(pattern, define, skip, "", within), "plain")
    module = compile_text(_diff_rule(pattern, define, skip, f", NEXT(value, {n}) AS nv, "
                                     f"NEXT(FINAL LAST(value), {n}) AS fv", within), "next")
    base = output_records(run_reference(plain, inputs))
    out = output_records(run_reference(module, inputs))
    note(out, kind=case[0])
    assert output_records(run_reference(module, inputs, 1)) == out
    assert output_records(run_reference(module, inputs, batch)) == out
    columns = ("key", "id", "mn", "c", "s")
    assert sorted(tuple(r[c] for c in columns) for r in out) == sorted(
        tuple(r[c] for c in columns) for r in base)
    ids = {key: [i for i in range(m) if keys[i] == key] for key in set(keys[:m])}
    last = {}
    for r in out:
        if r["c"] is not None:
            last[r["key"], r["mn"]] = max(last.get((r["key"], r["mn"]), -1), r["id"])

    def after(key: int, row: int) -> object:
        place = ids[key].index(row) + n
        return values[ids[key][place]] if place < len(ids[key]) else None

    for r in out:
        empty = r["c"] is None
        assert r["nv"] == (None if empty else after(r["key"], r["id"]))
        assert r["fv"] == (None if empty else after(r["key"], last[r["key"], r["mn"]]))


def test_next_changes_no_match_and_reads_the_key_s_later_rows():
    with bounded("next"):
        _next_changes_no_match_and_reads_the_key_s_later_rows()



@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(DIFF_PATTERNS), values=VALUES,
       keys=st.lists(st.integers(0, 2), min_size=30, max_size=30),
       rows=st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH"]))
def _semantics_inside_an_expression_combine_whole_measures(case, values, keys, rows):
    """Against measures that each carry one semantics for all of them (cep's older form,
    FINAL at the start of a measure): a measure mixing RUNNING and FINAL calls is what
    those measures combine to.

    Oracle: measures each of one semantics, computed by the same evaluator (shared
    code): the test shows that mixing combines them, not that either is right (that is
    ``test_row_pattern_oracle.py``, whose oracle shares no code).
    """
    pattern, define, skip = case
    inputs = _keyed_rows(values, keys)
    measures = ("FINAL (LAST(value)) AS fl, LAST(value) AS rl, FINAL (count(*)) AS fc, "
                "count(*) AS rc, FINAL (sum(value)) AS fs, sum(value) AS rs, "
                "FINAL (PREV(LAST(value))) AS fp, "
                "FINAL LAST(value) - RUNNING LAST(value) AS d1, "
                "FINAL count(*) * 10 + count(*) AS d2, FINAL sum(value) - sum(value) AS d3, "
                "PREV(FINAL LAST(value)) AS d4")
    text = (DIFF_SCHEMA + f"SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
            f"{measures} {rows} {skip} PATTERN ({pattern}) DEFINE {define} );")
    out = output_records(run_reference(compile_text(text, "mixed"), inputs))
    note(out, kind=case[0])

    def minus(a: object, b: object) -> object:
        return None if a is None or b is None else a - b  # type: ignore[operator]

    for r in out:
        assert r["d1"] == minus(r["fl"], r["rl"])
        assert r["d2"] == (None if r["fc"] is None else r["fc"] * 10 + r["rc"])
        assert r["d3"] == minus(r["fs"], r["rs"])
        assert r["d4"] == r["fp"]
        assert r["rc"] <= r["fc"]  # RUNNING counts up to the output row


def test_semantics_inside_an_expression_combine_whole_measures():
    with bounded("mixed semantics"):
        _semantics_inside_an_expression_combine_whole_measures()



@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(DIFF_PATTERNS), values=VALUES,
       keys=st.lists(st.integers(0, 2), min_size=30, max_size=30), batch=st.integers(1, 9))
def _aggregate_arguments_are_read_on_each_row_they_cover(case, values, keys, batch):
    """Aggregates of expressions in MEASURES against a brute-force computation over the
    output rows of each match: the argument is evaluated on every row the aggregate
    covers (RUNNING: up to the output row; FINAL: the whole match), CLASSIFIER() being
    that row's label and MATCH_NUMBER() the match's number.

    Oracle: plain Python over the output rows; the matches themselves (which rows, which
    labels) are the matcher's own, so only the aggregates are checked independently.
    """
    pattern, define, skip = case
    var = next(ch for ch in pattern if ch.isalpha())  # the pattern's first variable
    inputs = _keyed_rows(values, keys)
    measures = ("MATCH_NUMBER() AS mn, CLASSIFIER() AS c, "
                "RUNNING sum(value * 2 + 1) AS e1, FINAL max(value - MATCH_NUMBER()) AS e2, "
                "RUNNING max_by(value, CLASSIFIER()) AS e3, "
                "FINAL min(lower(CLASSIFIER())) AS e4, RUNNING arbitrary(value + id) AS e5, "
                f"RUNNING sum({var}.value * 3) AS e6, FINAL count() AS e7, "
                "FINAL min_by(id, value) AS e8")
    text = (DIFF_SCHEMA + f"SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
            f"{measures} ALL ROWS PER MATCH {skip} PATTERN ({pattern}) DEFINE {define} );")
    module = compile_text(text, "args")
    out = output_records(run_reference(module, inputs))
    note(out, kind=case[0])
    assert output_records(run_reference(module, inputs, batch)) == out
    matches: dict[tuple, list[dict]] = {}
    for r in out:
        if r["c"] is not None:
            matches.setdefault((r["key"], r["mn"]), []).append(r)

    def first_best(rows: list[dict], by: str, pick) -> object:
        best = pick(x[by] for x in rows)
        return next(x for x in rows if x[by] == best)

    for r in out:
        if r["c"] is None:  # an empty match: no row to aggregate
            assert [r[f"e{k}"] for k in (1, 2, 3, 5, 6, 8)] == [None] * 6
            continue
        whole = sorted(matches[r["key"], r["mn"]], key=lambda x: x["id"])
        upto = [x for x in whole if x["id"] <= r["id"]]
        assert r["e1"] == sum(2 * x["value"] + 1 for x in upto)
        assert r["e2"] == max(x["value"] for x in whole) - r["mn"]
        assert r["e3"] == first_best(upto, "c", max)["value"]
        assert r["e4"] == min(x["c"].lower() for x in whole)
        assert r["e5"] == upto[0]["value"] + upto[0]["id"]
        bs = [3 * x["value"] for x in upto if x["c"] == var]
        assert r["e6"] == (sum(bs) if bs else None)
        assert r["e7"] == len(whole)
        assert r["e8"] == first_best(whole, "value", min)["id"]


AGG_DEFINES = [
    ("(A | B)* X", "X AS sum(A.value * 2) > value + 3",
     "X AS 2 * sum(A.value) > value + 3"),
    ("A (B | C)+", "B AS max(B.value + 1) <= 5, C AS count(C.value > 2) < 3",
     "B AS max(B.value) + 1 <= 5, C AS count(C.value) < 3"),
    ("A B* C", "B AS min(B.value - 1) >= 1, C AS avg(value * 2) > 5",
     "B AS min(B.value) - 1 >= 1, C AS 2 * avg(value) > 5"),
]


def test_aggregate_arguments_are_read_on_each_row_they_cover():
    with bounded("aggregate arguments"):
        _aggregate_arguments_are_read_on_each_row_they_cover()



@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(AGG_DEFINES), values=VALUES,
       keys=st.lists(st.integers(0, 2), min_size=30, max_size=30), batch=st.integers(1, 9))
def _define_aggregates_of_expressions_equal_their_rewriting(case, values, keys, batch):
    """A DEFINE aggregating an expression of the row (no NULLs here) against the same
    condition with the arithmetic moved out of the aggregate (``sum(A.value * 2)`` is
    ``2 * sum(A.value)``): the same events. (An argument naming two variables,
    ``min(B.value - A.value)``, is refused, as SQL:2016 says.)

    Oracle: the rewritten rule on the same evaluator (shared code): it shows the
    expression argument is read row by row as the rewriting says.
    """
    pattern, with_expr, rewritten = case
    inputs = _keyed_rows(values, keys)

    def run(define: str, size: int | None = None) -> list[dict]:
        text = (DIFF_SCHEMA + "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
                "MATCH_NUMBER() AS mn, CLASSIFIER() AS c ALL ROWS PER MATCH "
                f"PATTERN ({pattern}) DEFINE {define} );")
        return output_records(run_reference(compile_text(text, "define"), inputs, size))

    out = run(with_expr)
    note(out, kind=case[0])
    assert run(with_expr, batch) == out
    assert out == run(rewritten)


def test_define_aggregates_of_expressions_equal_their_rewriting():
    with bounded("define aggregates"):
        _define_aggregates_of_expressions_equal_their_rewriting()
