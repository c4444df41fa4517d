"""Trino's row pattern recognition tests (trinodb/trino, ``TestRowPatternMatching``),
translated assertion by assertion into cep rules on the reference runner, each on both
matchers: the compiled one (where it takes the rule) and the interpreter forced on with
``CEP_INTERPRET=1`` (the ``run_epl`` fixture of tests/support/trino_queries.py).

Trino's ``(VALUES (id, value), ...) t(id, value) MATCH_RECOGNIZE (ORDER BY id ...)``
becomes a stream ``T (id, value, ts)`` whose events come in id order (ts = id seconds),
and Trino's ``m.match`` measure is named ``mn`` here. Results are compared as multisets
(as Trino's ``matches`` does); each query also runs in batches of one and three events,
which must not change a single output. The assertions that cannot apply to cep, and
why, are listed in docs/esper.md#what-trinos-tests-cannot-check.
Trino's ``TestAggregationsInRowPatternMatching`` is translated in
tests/semantics/test_trino_row_pattern_aggregations.py.
"""

from __future__ import annotations

from collections import Counter

import pytest
from support.trino_queries import (
    NULL,
    SEC,
    both_matchers,  # noqa: F401 - the run_epl fixture
    query,
    rows,
)

ALL_ROWS = ("SELECT id, mn, val, label FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS mn, "
            "RUNNING LAST(value) AS val, CLASSIFIER() AS label ALL ROWS PER MATCH "
            "AFTER MATCH SKIP PAST LAST ROW PATTERN ({pattern}) DEFINE {define} );")
COLS = ("id", "mn", "val", "label")
V_SHAPE = [90, 80, 70, 80, 90, 50, 40, 60]
DOWN_UP = "B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)"


def test_simple_query(run_epl):
    out = query(run_epl, ALL_ROWS.format(pattern="A B+ C+", define=DOWN_UP), V_SHAPE, COLS)
    assert out == rows((1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"),
                       (5, 1, 90, "C"), (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C"))


FOUR = [90, 80, 70, 70]


@pytest.mark.parametrize(("pattern", "define", "expected"), [
    # empty pattern: A is in the alternation's less preferred branch and never matched
    ("() | A", "A AS true", [(1, 1, NULL, NULL), (2, 2, NULL, NULL), (3, 3, NULL, NULL),
                             (4, 4, NULL, NULL)]),
    # anchors: the partition's start, and its end (the end of the input)
    ("^A", "A AS true", [(1, 1, 90, "A")]), ("A^", "A AS true", []),
    ("^A^", "A AS true", []), ("A$", "A AS true", [(4, 1, 70, "A")]),
    ("$A", "A AS true", []), ("$A$", "A AS true", []),
    ("A B C", "B AS B.value < PREV(B.value), C AS C.value = PREV(C.value)",
     [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
    # alternation: the first alternative that matches is preferred
    ("B | C | A", "B AS B.value < PREV(B.value), C AS C.value <= PREV(C.value)",
     [(1, 1, 90, "A"), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "C")]),
    # permutation: the lexicographically first permutation that matches is preferred
    ("PERMUTE(B, C)", "B AS B.value < PREV(B.value), C AS C.value < PREV(C.value)",
     [(2, 1, 80, "B"), (3, 1, 70, "C")]),
    ("((A) (B (C)))", "B AS B.value < PREV(B.value), C AS C.value = PREV(C.value)",
     [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
])
def test_row_pattern(run_epl, pattern, define, expected):
    out = query(run_epl, ALL_ROWS.format(pattern=pattern, define=define), FOUR, COLS)
    assert out == rows(*expected)


EMPTY_ALL = [(1, 1, NULL, NULL), (2, 2, NULL, NULL), (3, 3, NULL, NULL), (4, 4, NULL, NULL)]
GREEDY_ALL = [(1, 1, NULL, NULL), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 2, 70, "B")]
ONE_EACH = [(2, 1, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]
MAYBE_EACH = [(1, 1, NULL, NULL), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "B")]
PLUS_ALL = [(2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 70, "B")]
TWO = [(2, 1, 80, "B"), (3, 1, 70, "B")]


@pytest.mark.parametrize(("pattern", "expected"), [
    ("B*", GREEDY_ALL), ("B*?", EMPTY_ALL), ("B+", PLUS_ALL), ("B+?", ONE_EACH),
    ("B?", MAYBE_EACH), ("B??", EMPTY_ALL), ("B{,}", GREEDY_ALL), ("B{,}?", EMPTY_ALL),
    ("B{1,}", PLUS_ALL), ("B{1,}?", ONE_EACH), ("B{2,}", PLUS_ALL), ("B{2,}?", TWO),
    ("B{5,}", []), ("B{5,}?", []), ("B{,1}", MAYBE_EACH), ("B{,1}?", EMPTY_ALL),
    ("B{,2}", [(1, 1, NULL, NULL), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]),
    ("B{,2}?", EMPTY_ALL), ("B{,5}", GREEDY_ALL), ("B{,5}?", EMPTY_ALL),
    ("B{1,1}", ONE_EACH), ("B{1,1}?", ONE_EACH), ("B{1,5}", PLUS_ALL),
    ("B{1,5}?", ONE_EACH), ("B{5,7}", []), ("B{5,7}?", []), ("B{1}", ONE_EACH),
    ("B{1}?", ONE_EACH), ("B{2}", TWO), ("B{2}?", TWO), ("B{5}", []), ("B{5}?", []),
])
def test_pattern_quantifiers(run_epl, pattern, expected):
    text = ALL_ROWS.format(pattern=pattern, define="B AS B.value <= PREV(B.value)")
    assert query(run_epl, text, FOUR, COLS) == rows(*expected)


@pytest.mark.parametrize(("pattern", "expected"), [
    ("A B+ C+", [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"),
                 (5, 1, 90, "C"), (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]),
    ("A {- B+ -} C+", [(1, 1, 90, "A"), (4, 1, 80, "C"), (5, 1, 90, "C"), (6, 2, 50, "A"),
                       (8, 2, 60, "C")]),
    ("{- A -} {- B+ -} C+", [(4, 1, 80, "C"), (5, 1, 90, "C"), (8, 2, 60, "C")]),
    ("A {- {- B+ -} C+ -}", [(1, 1, 90, "A"), (6, 2, 50, "A")]),
    ("{- A B+ C+ -}", []),
    ("A B+ {- ()* -} C+", [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"),
                           (4, 1, 80, "C"), (5, 1, 90, "C"), (6, 2, 50, "A"),
                           (7, 2, 40, "B"), (8, 2, 60, "C")]),
    ("A {- B -}+ {- C -}+", [(1, 1, 90, "A"), (6, 2, 50, "A")]),
    ("A {- B -}* {- C -}*", [(1, 1, 90, "A"), (6, 2, 50, "A")]),
    ("A {- B -}{1,2} {- C -}{1,2}", [(1, 1, 90, "A"), (6, 2, 50, "A")]),
    ("A {- C -}{2,3} {- B -}{2,3}", [(3, 1, 70, "A")]),
])
def test_exclusion_syntax(run_epl, pattern, expected):
    text = ALL_ROWS.format(pattern=pattern, define=DOWN_UP)
    assert query(run_epl, text, V_SHAPE, COLS) == rows(*expected)


def test_back_reference(run_epl):
    # X's condition reads A's (then B's) last row: the thread that took row 1 as A (as B)
    # must not be merged away with the preferred one
    text = ("SELECT value, classy FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy "
            "ALL ROWS PER MATCH PATTERN ((A | B)* X) DEFINE X AS value = {v}.value );")
    assert query(run_epl, text.format(v="A"), [1, 1], ("value", "classy")) == rows(
        (1, "A"), (1, "X"))
    assert query(run_epl, text.format(v="B"), [1, 1], ("value", "classy")) == rows(
        (1, "B"), (1, "X"))
    condition = "PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2)"
    text = (f"SELECT value, classy, dc FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS "
            f"classy, {condition} AS dc ALL ROWS PER MATCH PATTERN ((A | B)* X) "
            f"DEFINE X AS value = {condition} );")
    assert query(run_epl, text, [1, 2, 3, 4, 5, 6], ("value", "classy", "dc")) == rows(
        (1, "B", NULL), (2, "A", NULL), (3, "A", NULL), (4, "A", NULL), (5, "B", 6),
        (6, "X", 6))
    # X's condition reads the labels themselves
    condition = ("PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B' AND "
                 "FIRST(CLASSIFIER(U)) = 'B'")
    text = (f"SELECT value, classy, dc FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS "
            f"classy, {condition} AS dc ALL ROWS PER MATCH PATTERN ((A | B)* X $) "
            f"SUBSET U = (A, B) DEFINE X AS {condition} );")
    assert query(run_epl, text, [1, 2, 3, 4, 5], ("value", "classy", "dc")) == rows(
        (1, "B", NULL), (2, "B", False), (3, "A", False), (4, "A", True), (5, "X", True))


@pytest.mark.parametrize(("pattern", "expected"), [
    ("()* | B", EMPTY_ALL), ("()+ | B", EMPTY_ALL), ("(){5,} | B", EMPTY_ALL),
    ("B | ()*", [(1, 1, NULL, NULL), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, NULL, NULL)]),
    ("(B ()*)*", [(1, 1, NULL, NULL), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, NULL, NULL)]),
    ("(B ()*)*?", EMPTY_ALL),
    # quantified anchors
    ("^* | B", EMPTY_ALL), ("^+ | B", [(1, 1, NULL, NULL), (2, 2, 80, "B"), (3, 3, 70, "B")]),
    ("^* A B", [(1, 1, 90, "A"), (2, 1, 80, "B")]), ("$* | B", EMPTY_ALL),
    ("$+ | B", [(2, 1, 80, "B"), (3, 2, 70, "B")]),
    ("B A $+", [(3, 1, 70, "B"), (4, 1, 70, "A")]),
])
def test_empty_cycle(run_epl, pattern, expected):
    text = ALL_ROWS.format(pattern=pattern, define="B AS B.value < PREV(B.value)")
    assert query(run_epl, text, FOUR, COLS) == rows(*expected)


OUTPUT_MODES = ("SELECT mn, val, label FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS mn, "
                "RUNNING LAST(value) AS val, CLASSIFIER() AS label {rows} "
                "AFTER MATCH SKIP PAST LAST ROW PATTERN ({pattern}) "
                "DEFINE B AS B.value < PREV(B.value) );")


@pytest.mark.parametrize(("mode", "pattern", "expected"), [
    ("ONE ROW PER MATCH", "B*", [(1, NULL, NULL), (2, 70, "B"), (3, NULL, NULL)]),
    ("", "B*", [(1, NULL, NULL), (2, 70, "B"), (3, NULL, NULL)]),
    ("ONE ROW PER MATCH", "B+", [(1, 70, "B")]),
    ("ALL ROWS PER MATCH", "B*", [(1, NULL, NULL), (2, 80, "B"), (2, 70, "B"),
                                  (3, NULL, NULL)]),
    ("ALL ROWS PER MATCH", "B+", [(1, 80, "B"), (1, 70, "B")]),
    ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", "B*", [(1, NULL, NULL), (2, 80, "B"),
                                                     (2, 70, "B"), (3, NULL, NULL)]),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B*", [(2, 80, "B"), (2, 70, "B")]),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B+", [(1, 80, "B"), (1, 70, "B")]),
    ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "B+", [(NULL, NULL, NULL), (1, 80, "B"),
                                                      (1, 70, "B"), (NULL, NULL, NULL)]),
])
def test_output_modes(run_epl, mode, pattern, expected):
    text = OUTPUT_MODES.format(rows=mode, pattern=pattern)
    assert query(run_epl, text, FOUR, ("mn", "val", "label")) == rows(*expected)


SKIP = ("SELECT id, mn, val, label FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS mn, "
        "RUNNING LAST(value) AS val, CLASSIFIER() AS label ALL ROWS PER MATCH {skip} "
        "PATTERN (A B+ C+ D?) SUBSET U = (C, D) DEFINE B AS B.value < PREV(B.value), "
        "C AS C.value > PREV(C.value), D AS false );")
SKIP_ROWS = [90, 80, 70, 80, 70, 80]
FIRST_MATCH = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C")]
FROM_ROW_4 = [(4, 2, 80, "A"), (5, 2, 70, "B"), (6, 2, 80, "C")]


@pytest.mark.parametrize(("skip", "expected"), [
    ("AFTER MATCH SKIP PAST LAST ROW", FIRST_MATCH),
    ("AFTER MATCH SKIP TO NEXT ROW", [*FIRST_MATCH, (2, 2, 80, "A"), (3, 2, 70, "B"),
                                      (4, 2, 80, "C"), (4, 3, 80, "A"), (5, 3, 70, "B"),
                                      (6, 3, 80, "C")]),
    ("AFTER MATCH SKIP TO FIRST C", [*FIRST_MATCH, *FROM_ROW_4]),
    ("AFTER MATCH SKIP TO LAST B", [*FIRST_MATCH, *FROM_ROW_4]),
    ("AFTER MATCH SKIP TO B", [*FIRST_MATCH, *FROM_ROW_4]),
    # U = (C, D): D never matches, so the last row of U is the last C
    ("AFTER MATCH SKIP TO U", [*FIRST_MATCH, *FROM_ROW_4]),
])
def test_after_match_skip(run_epl, skip, expected):
    assert query(run_epl, SKIP.format(skip=skip), SKIP_ROWS, COLS) == rows(*expected)


@pytest.mark.parametrize("skip", ["AFTER MATCH SKIP TO A", "AFTER MATCH SKIP TO D"])
def test_cep_goes_on_at_the_next_row_where_trino_fails_the_skip(run_epl, skip):
    """cep's own behaviour, not Trino's: Trino fails these two queries at run time
    (skipping to the match's first row would find the same match again; D has no row in
    the match), as SQL:2016 says; a stream cannot stop, so cep goes on at the row after
    the match's first, as SKIP TO NEXT ROW (docs/esper.md)."""
    expected = [*FIRST_MATCH, (2, 2, 80, "A"), (3, 2, 70, "B"), (4, 2, 80, "C"),
                (4, 3, 80, "A"), (5, 3, 70, "B"), (6, 3, 80, "C")]
    next_row = query(run_epl, SKIP.format(skip="AFTER MATCH SKIP TO NEXT ROW"), SKIP_ROWS,
                     COLS)
    assert next_row == rows(*expected)
    assert query(run_epl, SKIP.format(skip=skip), SKIP_ROWS, COLS) == next_row


def test_empty_matches(run_epl):
    # row 1 unmatched; rows 2-4 and 3-5 match; rows 4 and 5 start nothing but were in a
    # match, so they are not unmatched rows; row 6 is
    text = ("SELECT id, mn, value, label FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS "
            "mn, CLASSIFIER() AS label ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH "
            "SKIP TO NEXT ROW PATTERN (A B{2}) DEFINE B AS B.value < PREV(B.value) );")
    out = query(run_epl, text, [100, 100, 90, 80, 70, 100], ("id", "mn", "value", "label"))
    assert out == rows((1, NULL, 100, NULL), (2, 1, 100, "A"), (3, 1, 90, "B"),
                       (4, 1, 80, "B"), (3, 2, 90, "A"), (4, 2, 80, "B"), (5, 2, 70, "B"),
                       (6, NULL, 100, NULL))


def test_union_variable(run_epl):
    text = ("SELECT id, mn, val, lower_or_higher, label FROM T MATCH_RECOGNIZE ( MEASURES "
            "MATCH_NUMBER() AS mn, RUNNING LAST(value) AS val, CLASSIFIER(U) AS "
            "lower_or_higher, CLASSIFIER(W) AS label ALL ROWS PER MATCH PATTERN ((L | H) A) "
            "SUBSET U = (L, H), W = (A, L, H) DEFINE A AS A.value = 80, L AS L.value < 80, "
            "H AS H.value > 80 );")
    out = query(run_epl, text, [90, 80, 70, 80], ("id", "mn", "val", "lower_or_higher",
                                                  "label"))
    assert out == rows((1, 1, 90, "H", "H"), (2, 1, 80, "H", "A"), (3, 2, 70, "L", "L"),
                       (4, 2, 80, "L", "A"))


NAVIGATION = ("SELECT id, measure FROM T MATCH_RECOGNIZE ( MEASURES {m} AS measure "
              "ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true );")


@pytest.mark.parametrize(("measure", "expected"), [
    ("value", [10, 20, 30]), ("LAST(value)", [10, 20, 30]),
    ("RUNNING LAST(value)", [10, 20, 30]), ("FINAL LAST(value)", [30, 30, 30]),
    ("FIRST(value)", [10, 10, 10]), ("RUNNING FIRST(value)", [10, 10, 10]),
    ("FINAL FIRST(value)", [10, 10, 10]), ("FINAL LAST(value, 2)", [10, 10, 10]),
    ("FIRST(value, 2)", [30, 30, 30]), ("LAST(value, 10)", [NULL] * 3),
    ("FIRST(value, 10)", [NULL] * 3), ("PREV(value)", [NULL, 10, 20]),
    ("NEXT(value)", [20, 30, NULL]), ("NEXT(FIRST(value), 2)", [30, 30, 30]),
    ("NEXT(FIRST(value), 10)", [NULL] * 3), ("PREV(FIRST(value), 10)", [NULL] * 3),
    ("PREV(FIRST(value, 10), 2)", [NULL] * 3), ("PREV(LAST(value, 10), 2)", [NULL] * 3),
])
def test_navigation_functions(run_epl, measure, expected):
    out = query(run_epl, NAVIGATION.format(m=measure), [10, 20, 30], ("id", "measure"))
    assert out == rows(*zip([1, 2, 3], expected, strict=True))


@pytest.mark.parametrize(("measure", "expected"), [
    ("PREV(B.value, 4)", NULL),  # before the partition's first row
    ("PREV(B.value, 3)", 10),  # outside the match, inside the partition
    ("PREV(B.value, 2)", 20),
    ("NEXT(B.value, 1)", 40),  # after the match, inside the partition
    ("NEXT(B.value, 2)", NULL),  # after the partition's last row
])
def test_navigation_out_of_the_match(run_epl, measure, expected):
    text = (f"SELECT measure FROM T MATCH_RECOGNIZE ( MEASURES {measure} AS measure "
            "ONE ROW PER MATCH PATTERN (A B) DEFINE B AS B.value = PREV(B.value) );")
    assert query(run_epl, text, [10, 20, 30, 30, 40], ("measure",)) == rows((expected,))


def test_classifier_past_the_current_row(run_epl):
    text = ("SELECT id, value, label, next_label FROM T MATCH_RECOGNIZE ( MEASURES "
            "CLASSIFIER() AS label, NEXT(CLASSIFIER()) AS next_label ALL ROWS PER MATCH "
            f"PATTERN (A B+ C+) DEFINE {DOWN_UP} );")
    out = query(run_epl, text, [90, 80, 70, 80], ("id", "value", "label", "next_label"))
    assert out == rows((1, 90, "A", "B"), (2, 80, "B", "B"), (3, 70, "B", "C"),
                       (4, 80, "C", NULL))


def test_scalar_functions(run_epl):
    text = ("SELECT id, label FROM T MATCH_RECOGNIZE ( MEASURES lower(LAST(CLASSIFIER())) || "
            "'_label' AS label ALL ROWS PER MATCH PATTERN (A B+) "
            "DEFINE B AS B.value + 10 < abs(PREV(B.value)) );")
    assert query(run_epl, text, [90, 80, 60], ("id", "label")) == rows(
        (2, "a_label"), (3, "b_label"))


def test_running_and_final(run_epl):
    measures = ", ".join([
        "CLASSIFIER() AS label", "FINAL LAST(CLASSIFIER()) AS final_label",
        "RUNNING LAST(value) AS rv", "FINAL LAST(value) AS fv",
        *(f"{s} LAST({v}.value) AS {v}_{s[0]}v" for v in "ABC" for s in ("RUNNING", "FINAL"))])
    text = (f"SELECT * FROM T MATCH_RECOGNIZE ( MEASURES {measures} ALL ROWS PER MATCH "
            f"PATTERN (A B+ C+) DEFINE {DOWN_UP} );")
    columns = ("id", "label", "final_label", "rv", "fv", "A_Rv", "A_Fv", "B_Rv", "B_Fv",
               "C_Rv", "C_Fv")
    out = query(run_epl, text, [90, 80, 70, 100, 200], columns)
    assert out == rows((1, "A", "C", 90, 200, 90, 90, NULL, 70, NULL, 200),
                       (2, "B", "C", 80, 200, 90, 90, 80, 70, NULL, 200),
                       (3, "B", "C", 70, 200, 90, 90, 70, 70, NULL, 200),
                       (4, "C", "C", 100, 200, 90, 90, 70, 70, 100, 200),
                       (5, "C", "C", 200, 200, 90, 90, 70, 70, 200, 200))


@pytest.mark.parametrize("val", ["PREV(RUNNING LAST(value))", "RUNNING PREV(LAST(value))"])
def test_partitioning(run_epl, val):
    # Trino's input is unordered; cep's events come in time order (ts = id). Trino's
    # PREV(RUNNING LAST(value)) may also be written RUNNING PREV(LAST(value)) in cep:
    # RUNNING before PREV applies to the navigation inside (Trino refuses that form)
    schema = "CREATE SCHEMA P (id int, part string, value int, ts timestamp) TIMESTAMP ts;\n"
    text = ("SELECT part, id, mn, val, label FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            f"MEASURES MATCH_NUMBER() AS mn, {val} AS val, CLASSIFIER() AS "
            "label ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (B+) "
            "DEFINE B AS B.value < PREV(B.value) );")
    data = [(1, "p1", 90), (2, "p1", 80), (6, "p1", 80), (2, "p2", 20), (2, "p3", 60),
            (1, "p3", 50), (3, "p1", 70), (4, "p1", 80), (5, "p1", 90), (1, "p2", 20),
            (3, "p3", 70), (3, "p2", 10)]
    events = [dict(id=i, part=p, value=v, ts=i * SEC) for i, p, v in sorted(data)]
    out = run_epl(schema + text, events)
    assert Counter((r["part"], r["id"], r["mn"], r["val"], r["label"]) for r in out) == rows(
        ("p1", 2, 1, 90, "B"), ("p1", 3, 1, 80, "B"), ("p1", 6, 2, 90, "B"),
        ("p2", 3, 1, 20, "B"))
    assert run_epl(schema + text, []) == []


def test_in_predicate_without_subquery(run_epl):
    text = ("SELECT val FROM T MATCH_RECOGNIZE ( MEASURES {m} AS val ONE ROW PER MATCH "
            "AFTER MATCH SKIP TO NEXT ROW PATTERN (A+) DEFINE A AS true );")
    values = [100, 200, 300, 400]
    assert query(run_epl, text.format(m="FIRST(A.value) IN (300, LAST(A.value))"), values,
                 ("val",)) == rows((False,), (False,), (True,), (True,))
    assert query(run_epl, text.format(m="CLASSIFIER() IN ('X', lower(CLASSIFIER()))"),
                 values, ("val",)) == rows(*[(False,)] * 4)
    assert query(run_epl, text.format(m="MATCH_NUMBER() IN (0, MATCH_NUMBER())"), values,
                 ("val",)) == rows(*[(True,)] * 4)


def test_potentially_exponential_match(run_epl):
    # equivalent threads are merged: twenty rows in linear time, and no match
    text = ("SELECT classy FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy "
            "PATTERN ((A+)+ B) DEFINE A AS value = 1, B AS value = 2 );")
    assert query(run_epl, text, [1] * 20, ("classy",)) == rows()


def test_exponential_match(run_epl):
    firsts = " AND ".join(f"FIRST(CLASSIFIER(), {k}) = 'B'" for k in range(8))
    text = ("SELECT classy FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy "
            f"ALL ROWS PER MATCH PATTERN ((A | B)+ Z) DEFINE Z AS {firsts} );")
    assert query(run_epl, text, list(range(1, 10)), ("classy",)) == rows(
        *[("B",)] * 8, ("Z",))


def test_kill_thread(run_epl):
    text = ("SELECT foo FROM T MATCH_RECOGNIZE ( MEASURES 'foo' AS foo "
            "PATTERN ((Y?){2,}) DEFINE Y AS true );")
    assert query(run_epl, text, [1, 2, 3, 4, 5], ("foo",)) == rows(("foo",))


def test_classifier_function_past_current_row_in_define(run_epl):
    # testClassifierFunctionPastCurrentRow, second case: in DEFINE no row past the
    # candidate has a label yet, so NEXT(CLASSIFIER()) is NULL and A never matches
    text = ("SELECT id, val FROM T MATCH_RECOGNIZE ( MEASURES value AS val ALL ROWS PER MATCH "
            "PATTERN (A+) DEFINE A AS NEXT(CLASSIFIER()) = 'A' );")
    assert query(run_epl, text, [90, 80, 70, 80], ("id", "val")) == rows()
