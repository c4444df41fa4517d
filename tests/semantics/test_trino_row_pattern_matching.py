"""Trino's row pattern recognition tests (trinodb/trino, ``TestRowPatternMatching``),
translated assertion by assertion into cep rules on the reference runner, each on both
matchers: the compiled one (where it takes the rule) and the interpreter forced on with
``CEP_INTERPRET=1`` (the ``run_epl`` fixture below).

Trino's ``(VALUES (id, value), ...) t(id, value) MATCH_RECOGNIZE (ORDER BY id ...)``
becomes a stream ``T (id, value, ts)`` whose events come in id order (ts = id seconds),
and Trino's ``m.match`` measure is named ``mn`` here. Results are compared as multisets
(as Trino's ``matches`` does); each query also runs in batches of one and three events,
which must not change a single output. The assertions that cannot apply to cep, and
why, are listed in docs/esper.md#what-trinos-tests-cannot-check.
"""

from __future__ import annotations

from collections import Counter

import pytest

from cep.engine.engine import INTERPRET_ENV
from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA T (id int, value int, ts timestamp) TIMESTAMP ts;\n"
NULL = None


@pytest.fixture(params=["kernel", "interpreter"])
def run_epl(request, run_epl, monkeypatch):
    """tests/conftest.py's ``run_epl``, each case run twice: with the compiled matcher
    where it takes the rule, and with every rule on the interpreter (``CEP_INTERPRET``):
    both must give Trino's rows."""
    if request.param == "interpreter":
        monkeypatch.setenv(INTERPRET_ENV, "1")
    else:
        monkeypatch.delenv(INTERPRET_ENV, raising=False)
    return run_epl


def query(run_epl, text, values, columns, partitions=None):
    """The rows ``text`` outputs over ``values`` (ids from 1), as a multiset of tuples."""
    events = [dict(id=i, value=v, ts=i * SEC) for i, v in enumerate(values, start=1)]
    out = run_epl(SCHEMA + text, events)
    for size in (1, 3):
        assert run_epl(SCHEMA + text, events, batch_size=size) == out
    return Counter(tuple(r[c] for c in columns) for r in out)


def rows(*tuples):
    return Counter(tuples)


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


# ---- TestAggregationsInRowPatternMatching

PARTS = "CREATE SCHEMA P (id int, part string, value int, ts timestamp) TIMESTAMP ts;\n"
THREE_PARTS = [(1, "p1", 1), (2, "p1", 1), (6, "p1", 1), (2, "p2", 10), (2, "p3", 100),
               (1, "p3", 100), (3, "p1", 1), (4, "p1", 1), (5, "p1", 1), (1, "p2", 10),
               (3, "p3", 100), (3, "p2", 10)]
# (id, part, value): p1 rises by 1, p2 by 2; the rows several tentative-label tests give
# (the A rows are those where the running aggregate passes its bound)
RISING = [(i, "p1", i) for i in range(1, 6)] + [(i, "p2", 2 * i) for i in range(1, 6)]
TENTATIVE_ROWS = (("p1", 1, "B", 1), ("p1", 2, "B", 2), ("p1", 3, "B", 3), ("p1", 4, "B", 4),
                  ("p1", 5, "A", 5), ("p2", 1, "B", 2), ("p2", 2, "B", 4), ("p2", 3, "A", 6),
                  ("p2", 4, "A", 8), ("p2", 5, "A", 10))


def partitioned(run_epl, text, data, columns):
    """Trino's unordered partitioned input, as events in time order (ts = id)."""
    events = [dict(id=i, part=p, value=v, ts=i * SEC) for i, p, v in sorted(data)]
    out = run_epl(PARTS + text, events)
    for size in (1, 3):
        assert run_epl(PARTS + text, events, batch_size=size) == out
    return Counter(tuple(r[c] for c in columns) for r in out)


def test_aggregation_running_sum(run_epl):
    text = ("SELECT id, running_sum FROM T MATCH_RECOGNIZE ( MEASURES RUNNING sum(id) AS "
            "running_sum ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A*) "
            "DEFINE A AS true );")
    out = query(run_epl, text, [0] * 8, ("id", "running_sum"))
    assert out == rows(*[(i, i * (i + 1) // 2) for i in range(1, 9)])


def test_aggregation_partitioning(run_epl):
    text = ("SELECT part, id, running_sum FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES RUNNING sum(value) AS running_sum ALL ROWS PER MATCH AFTER MATCH SKIP "
            "PAST LAST ROW PATTERN (B+) DEFINE B AS true );")
    assert partitioned(run_epl, text, THREE_PARTS, ("part", "id", "running_sum")) == rows(
        *[("p1", i, i) for i in range(1, 7)], *[("p2", i, 10 * i) for i in range(1, 4)],
        *[("p3", i, 100 * i) for i in range(1, 4)])
    text = ("SELECT part, match_no, id, running_sum FROM P MATCH_RECOGNIZE ( PARTITION BY "
            "part MEASURES RUNNING sum(value) AS running_sum, MATCH_NUMBER() AS match_no "
            "ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (B+) DEFINE B AS true );")
    expected = [("p1", m, i, i - m + 1) for m in range(1, 7) for i in range(m, 7)]
    expected += [(p, m, i, scale * (i - m + 1)) for p, scale in (("p2", 10), ("p3", 100))
                 for m in range(1, 4) for i in range(m, 4)]
    out = partitioned(run_epl, text, THREE_PARTS, ("part", "match_no", "id", "running_sum"))
    assert out == rows(*expected)


def test_aggregation_tentative_label_match(run_epl):
    # an aggregate in DEFINE counts the candidate row as labelled by the variable tried
    text = ("SELECT id, classy, avg_b FROM T MATCH_RECOGNIZE ( MEASURES RUNNING avg(B.value) "
            "AS avg_b, CLASSIFIER() AS classy ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST "
            "ROW PATTERN ((A | B)*) DEFINE A AS avg(B.value) = 5 );")
    assert query(run_epl, text, [4, 6, 0], ("id", "classy", "avg_b")) == rows(
        (1, "B", 4.0), (2, "B", 5.0), (3, "A", 5.0))
    text = ("SELECT id, classy, avg_a FROM T MATCH_RECOGNIZE ( MEASURES RUNNING avg(A.value) "
            "AS avg_a, CLASSIFIER() AS classy ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST "
            "ROW PATTERN ((A | B)*) DEFINE A AS avg(A.value) = 5 );")
    assert query(run_epl, text, [4, 6, 0, 5], ("id", "classy", "avg_a")) == rows(
        (1, "B", NULL), (2, "B", NULL), (3, "B", NULL), (4, "A", 5.0))
    text = ("SELECT part, id, running_sum FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES RUNNING sum(value) AS running_sum ALL ROWS PER MATCH AFTER MATCH SKIP "
            "PAST LAST ROW PATTERN (B (A | B) B) DEFINE A AS sum(value) > 1000 );")
    assert partitioned(run_epl, text, THREE_PARTS, ("part", "id", "running_sum")) == rows(
        ("p1", 1, 1), ("p1", 2, 2), ("p1", 3, 3), ("p1", 4, 1), ("p1", 5, 2), ("p1", 6, 3),
        *[("p2", i, 10 * i) for i in range(1, 4)], *[("p3", i, 100 * i) for i in range(1, 4)])
    text = ("SELECT part, id, classy, running_sum FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES RUNNING sum(value) AS running_sum, CLASSIFIER() AS classy ALL ROWS PER "
            "MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ((A | B)*) "
            "DEFINE A AS sum(value) > 4 );")
    data = [(i, "p1", 1) for i in range(1, 6)] + [(i, "p2", 2) for i in range(1, 6)]
    out = partitioned(run_epl, text, data, ("part", "id", "classy", "running_sum"))
    assert out == rows(*TENTATIVE_ROWS)


def test_aggregation_tentative_running_max(run_epl):
    text = ("SELECT part, id, classy, running_max FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES RUNNING max(value) AS running_max, CLASSIFIER() AS classy ALL ROWS PER "
            "MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ((A | B)*) "
            "DEFINE A AS max(value) > 4 );")
    out = partitioned(run_epl, text, RISING, ("part", "id", "classy", "running_max"))
    assert out == rows(*TENTATIVE_ROWS)


def test_count_aggregation(run_epl):
    # Trino's count() is written count(*); count(C.*) is count(C.id) (id is never NULL)
    text = ("SELECT id, m1 FROM T MATCH_RECOGNIZE ( MEASURES count(*) AS m1 ALL ROWS PER "
            "MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z) DEFINE X AS id > 1 );")
    assert query(run_epl, text, [0] * 4, ("id", "m1")) == rows((2, 1), (3, 2), (4, 3))
    text = ("SELECT id, m1, m2 FROM T MATCH_RECOGNIZE ( MEASURES RUNNING count(*) AS m1, "
            "FINAL count(*) AS m2 ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (A B C D) DEFINE A AS true );")
    assert query(run_epl, text, [0] * 4, ("id", "m1", "m2")) == rows(
        (1, 1, 4), (2, 2, 4), (3, 3, 4), (4, 4, 4))
    text = ("SELECT id, m1, m2 FROM T MATCH_RECOGNIZE ( MEASURES count(C.id) AS m1, "
            "count(U.id) AS m2 ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (A B C D) SUBSET U = (B, D) DEFINE A AS true );")
    assert query(run_epl, text, [0] * 4, ("id", "m1", "m2")) == rows(
        (1, 0, 0), (2, 0, 1), (3, 1, 1), (4, 1, 2))


def test_balancing_sums(run_epl):
    text = ("SELECT id, classy, sa, sb FROM T MATCH_RECOGNIZE ( MEASURES RUNNING sum(A.value) "
            "AS sa, RUNNING sum(B.value) AS sb, CLASSIFIER() AS classy ALL ROWS PER MATCH "
            "AFTER MATCH SKIP PAST LAST ROW PATTERN ((A | B)*) "
            "DEFINE A AS sum(A.value) - A.value <= sum(B.value) );")
    out = query(run_epl, text, [4, 6, 10, 1, 1, 1, 10, 5, 1], ("id", "classy", "sa", "sb"))
    assert out == rows((1, "B", NULL, 4), (2, "A", 6, 4), (3, "B", 6, 14), (4, "A", 7, 14),
                       (5, "A", 8, 14), (6, "A", 9, 14), (7, "A", 19, 14), (8, "B", 19, 19),
                       (9, "A", 20, 19))


def test_period_length(run_epl):
    # Trino's user_id/minute_of_the_day as part/value; D is a one-row period. ONE ROW PER
    # MATCH outputs the measures, and each output row its key
    text = ("SELECT total FROM P MATCH_RECOGNIZE ( PARTITION BY part MEASURES "
            "COALESCE(sum(C.value) - sum(A.value), 0) AS total ONE ROW PER MATCH "
            "PATTERN ((A B* C | D)*) DEFINE B AS value = PREV(value) + 1, "
            "C AS value = PREV(value) + 1 );")
    data = [(1, "u1", 3), (2, "u1", 4), (3, "u1", 5), (4, "u1", 8), (5, "u1", 9),
            (1, "u2", 2), (2, "u2", 3), (3, "u2", 4)]
    assert partitioned(run_epl, text, data, ("key", "total")) == rows(("u1", 3), ("u2", 2))


@pytest.mark.parametrize(("pattern", "define", "n", "expected"), [
    # two subsets of equal sums (Trino's RUNNING array_agg(CLASSIFIER()) is read here row
    # by row, as each row's CLASSIFIER())
    ("^(A | B)* (LAST_A | LAST_B)$",
     "LAST_A AS sum(A.id) + id = sum(B.id), LAST_B AS sum(B.id) + id = sum(A.id)", 8,
     ["A", "A", "A", "A", "B", "B", "B", "LAST_A"]),
    ("^(A | B | C)* (LAST_A | LAST_B | LAST_C)$",
     "LAST_A AS sum(A.id) + id = sum(B.id) AND sum(B.id) = sum(C.id), "
     "LAST_B AS sum(B.id) + id = sum(A.id) AND sum(A.id) = sum(C.id), "
     "LAST_C AS sum(C.id) + id = sum(A.id) AND sum(A.id) = sum(B.id)", 6,
     ["A", "B", "C", "C", "B", "LAST_A"]),
])
def test_set_partitioning(run_epl, pattern, define, n, expected):
    text = ("SELECT id, classy FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy "
            f"ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ({pattern}) "
            f"DEFINE {define} );")
    assert query(run_epl, text, [0] * n, ("id", "classy")) == rows(
        *zip(range(1, n + 1), expected, strict=True))


# ---- TestAggregationsInRowPatternMatching: aggregate arguments that are expressions,
# count(), max_by, arbitrary. Trino's string column ``value`` is ``tag`` here. cep has no
# array type: Trino's RUNNING ``array_agg(x)`` at each row is checked as that row's last
# element (``max_by(x, id)``, ids rise in match order) and its length (``count``), which
# together give the whole array row by row; FINAL ones by their first and last elements.
TAGS = "CREATE SCHEMA T (id int, value int, tag string, ts timestamp) TIMESTAMP ts;\n"
TAGGED_PARTS = ("CREATE SCHEMA P (id int, part string, value int, tag string, ts timestamp) "
                "TIMESTAMP ts;\n")


def tagged(run_epl, text, tags, columns, part=None):
    """The rows ``text`` outputs over rows with these tags (ids from 1, per partition
    when ``part`` gives each row's), batch sizes 1 and 3 included."""
    parts = part or [None] * len(tags)
    events = sorted((dict(id=i, tag=t, ts=i * SEC, **({"part": p} if p else {}))
                     for (i, t), p in zip(_numbered(tags, parts), parts, strict=True)),
                    key=lambda e: (e["ts"], e.get("part") or ""))
    schema = TAGGED_PARTS if part else TAGS
    out = run_epl(schema + text, events)
    for size in (1, 3):
        assert run_epl(schema + text, events, batch_size=size) == out
    return Counter(tuple(r[c] for c in columns) for r in out)


def _numbered(tags, parts):
    seen: Counter = Counter()
    out = []
    for tag, p in zip(tags, parts, strict=True):
        seen[p] += 1
        out.append((seen[p], tag))
    return out


def test_simple_query_running_labels(run_epl):
    # RUNNING array_agg(CLASSIFIER(A)) over A*: row i's array is i times 'A'
    text = ("SELECT id, lab, n FROM T MATCH_RECOGNIZE ( MEASURES RUNNING "
            "max_by(CLASSIFIER(A), A.id) AS lab, RUNNING count(CLASSIFIER(A)) AS n "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A*) "
            "DEFINE A AS true );")
    assert query(run_epl, text, [0] * 8, ("id", "lab", "n")) == rows(
        *[(i, "A", i) for i in range(1, 9)])


def test_tentative_label_match_with_an_expression_argument(run_epl):
    """cep's own case beside Trino's testTentativeLabelMatchWithRuntimeEvaluated-
    AggregationArgument, whose ``DEFINE A AS max(value + MATCH_NUMBER()) > 5`` cep
    refuses (MATCH_NUMBER() is not allowed in DEFINE: docs/esper.md says why; asserted
    here). Instead the argument reads two fields of each row, the candidate's included
    as labelled A: ``max(value + id) > 5`` first holds at p1's third row (3 + 3) and p2's
    second (4 + 2), earlier than its sibling's ``max(value) > 4``, so the rows differ
    from the sibling's."""
    refused = ("SELECT part FROM P MATCH_RECOGNIZE ( PARTITION BY part MEASURES CLASSIFIER() "
               "AS c ALL ROWS PER MATCH PATTERN ((A | B)*) "
               "DEFINE A AS max(value + MATCH_NUMBER()) > 5 );")
    with pytest.raises(RuleError, match="MATCH_NUMBER"):
        compile_text(PARTS + refused)
    text = ("SELECT part, id, classy, running_max FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES RUNNING max(value) AS running_max, CLASSIFIER() AS classy ALL ROWS PER "
            "MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ((A | B)*) "
            "DEFINE A AS max(value + id) > 5 );")
    out = partitioned(run_epl, text, RISING, ("part", "id", "classy", "running_max"))
    assert out == rows(("p1", 1, "B", 1), ("p1", 2, "B", 2), ("p1", 3, "A", 3),
                       ("p1", 4, "A", 4), ("p1", 5, "A", 5), ("p2", 1, "B", 2),
                       ("p2", 2, "A", 4), ("p2", 3, "A", 6), ("p2", 4, "A", 8),
                       ("p2", 5, "A", 10))


def test_aggregation_arguments(run_epl):
    # array_agg(value || CLASSIFIER()): each row's last element and the array's length
    text = ("SELECT part, id, last_el, first_el, n FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES max_by(tag || CLASSIFIER(), id) AS last_el, "
            "min_by(tag || CLASSIFIER(), id) AS first_el, count(tag || CLASSIFIER()) AS n "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z+) "
            "DEFINE X AS true );")
    tags = list("abcdefghijkl")
    parts = ["p1"] * 6 + ["p2"] * 3 + ["p3"] * 3
    out = tagged(run_epl, text, tags, ("part", "id", "last_el", "first_el", "n"), parts)
    assert out == rows(
        ("p1", 1, "aX", "aX", 1), ("p1", 2, "bY", "aX", 2), ("p1", 3, "cZ", "aX", 3),
        ("p1", 4, "dZ", "aX", 4), ("p1", 5, "eZ", "aX", 5), ("p1", 6, "fZ", "aX", 6),
        ("p2", 1, "gX", "gX", 1), ("p2", 2, "hY", "gX", 2), ("p2", 3, "iZ", "gX", 3),
        ("p3", 1, "jX", "jX", 1), ("p3", 2, "kY", "jX", 2), ("p3", 3, "lZ", "jX", 3))
    # the same field twice in the argument
    text = ("SELECT id, last_el, n FROM T MATCH_RECOGNIZE ( MEASURES "
            "max_by(tag || tag || CLASSIFIER(), id) AS last_el, count(*) AS n "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z) "
            "DEFINE X AS true );")
    assert tagged(run_epl, text, list("abc"), ("id", "last_el", "n")) == rows(
        (1, "aaX", 1), (2, "bbY", 2), (3, "ccZ", 3))
    # the second argument is read on each row: the row whose label is the largest
    text = ("SELECT id, measure FROM T MATCH_RECOGNIZE ( MEASURES "
            "max_by(tag, CLASSIFIER()) AS measure ALL ROWS PER MATCH AFTER MATCH SKIP PAST "
            "LAST ROW PATTERN (A B D C) DEFINE A AS true );")
    assert tagged(run_epl, text, list("pqrs"), ("id", "measure")) == rows(
        (1, "p"), (2, "q"), (3, "r"), (4, "r"))


def test_selective_aggregation(run_epl):
    # array_agg(U.id), array_agg(CLASSIFIER(U)), array_agg(U.value || CLASSIFIER(U)): only
    # the rows labelled X or Z
    text = ("SELECT id, ids, lab, val, n FROM T MATCH_RECOGNIZE ( MEASURES "
            "max(U.id) AS ids, max_by(CLASSIFIER(U), U.id) AS lab, "
            "max_by(U.tag || CLASSIFIER(U), U.id) AS val, count(U.tag || CLASSIFIER(U)) AS n "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z Y) "
            "SUBSET U = (X, Z) DEFINE X AS true );")
    assert tagged(run_epl, text, list("abcd"), ("id", "ids", "lab", "val", "n")) == rows(
        (1, 1, "X", "aX", 1), (2, 1, "X", "aX", 1), (3, 3, "Z", "cZ", 2),
        (4, 3, "Z", "cZ", 2))


def test_count_without_argument(run_epl):
    text = ("SELECT id, m1, m2 FROM T MATCH_RECOGNIZE ( MEASURES count(*) AS m1, count() AS m2 "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z) "
            "DEFINE X AS id > 1 );")
    assert query(run_epl, text, [0] * 4, ("id", "m1", "m2")) == rows(
        (2, 1, 1), (3, 2, 2), (4, 3, 3))
    text = ("SELECT id, m1, m2, m3, m4 FROM T MATCH_RECOGNIZE ( MEASURES RUNNING count(*) AS "
            "m1, FINAL count(*) AS m2, RUNNING count() AS m3, FINAL count() AS m4 ALL ROWS "
            "PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B C D) DEFINE A AS true );")
    assert query(run_epl, text, [0] * 4, ("id", "m1", "m2", "m3", "m4")) == rows(
        (1, 1, 4, 1, 4), (2, 2, 4, 2, 4), (3, 3, 4, 3, 4), (4, 4, 4, 4, 4))


def test_one_row_per_match_expression_argument(run_epl):
    # array_agg(value || CLASSIFIER()) of each match: its first, last and length
    # (ONE ROW PER MATCH outputs the measures, and each output row its key)
    text = ("SELECT first_el, last_el, n FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES min_by(tag || CLASSIFIER(), id) AS first_el, "
            "max_by(tag || CLASSIFIER(), id) AS last_el, count(tag || CLASSIFIER()) AS n "
            "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z) "
            "DEFINE X AS true );")
    parts = ["p1"] * 6 + ["p2"] * 6
    out = tagged(run_epl, text, list("abcdefghijkl"), ("key", "first_el", "last_el", "n"),
                 parts)
    assert out == rows(("p1", "aX", "cZ", 3), ("p1", "dX", "fZ", 3), ("p2", "gX", "iZ", 3),
                       ("p2", "jX", "lZ", 3))


def test_exclusions_in_aggregates(run_epl):
    # array_agg(value) and array_agg(value || CLASSIFIER()) read the excluded rows too;
    # Trino's variable P is V here (P is the stream)
    text = ("SELECT part, last_v, last_el, n FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES max_by(tag, id) AS last_v, max_by(tag || CLASSIFIER(), id) AS last_el, "
            "count(tag) AS n ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (V {- Q R -} S) DEFINE V AS id > 1 );")
    tags = ["1a", "1b", "1c", "1d", "1e", "2a", "2b", "2c", "2d", "2e"]
    out = tagged(run_epl, text, tags, ("part", "last_v", "last_el", "n"),
                 ["p1"] * 5 + ["p2"] * 5)
    assert out == rows(("p1", "1b", "1bV", 1), ("p1", "1e", "1eS", 4),
                       ("p2", "2b", "2bV", 1), ("p2", "2e", "2eS", 4))


def test_running_and_final_aggregations(run_epl):
    text = ("SELECT id, mn, lab, first_low, last_low, rm, fm FROM T MATCH_RECOGNIZE ( "
            "MEASURES MATCH_NUMBER() AS mn, RUNNING max_by(CLASSIFIER(), id) AS lab, "
            "FINAL min_by(lower(CLASSIFIER()), id) AS first_low, "
            "FINAL max_by(lower(CLASSIFIER()), id) AS last_low, "
            "RUNNING sum(MATCH_NUMBER() * 100) AS rm, FINAL sum(-MATCH_NUMBER()) AS fm "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B C D) "
            "DEFINE A AS true );")
    out = query(run_epl, text, [0] * 8,
                ("id", "mn", "lab", "first_low", "last_low", "rm", "fm"))
    assert out == rows(*[(i, 1 + (i > 4), "ABCD"[(i - 1) % 4], "a", "d",
                          100 * (1 + (i > 4)) * ((i - 1) % 4 + 1), -4 * (1 + (i > 4)))
                         for i in range(1, 9)])


def test_multiple_aggregation_arguments(run_epl):
    # Trino's DEFINE A AS max_by(MATCH_NUMBER(), CLASSIFIER()) > 0 holds on every row
    text = ("SELECT id, classy, mn, rm, fm FROM T MATCH_RECOGNIZE ( MEASURES "
            "MATCH_NUMBER() AS mn, CLASSIFIER() AS classy, "
            "RUNNING max_by(MATCH_NUMBER() * 100 + id, CLASSIFIER()) AS rm, "
            "FINAL max_by(-MATCH_NUMBER() - id, lower(CLASSIFIER())) AS fm "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B C D) "
            "DEFINE A AS max_by(id, CLASSIFIER()) > 0 );")
    out = query(run_epl, text, [0] * 8, ("id", "classy", "mn", "rm", "fm"))
    assert out == rows(*[(i, "ABCD"[(i - 1) % 4], 1 + (i > 4), 100 * (1 + (i > 4)) + i,
                          -5 if i <= 4 else -10) for i in range(1, 9)])


def test_arbitrary_in_define(run_epl):
    # Trino's DEFINE A AS arbitrary(value) > 1000 (testTentativeLabelMatch): never true
    text = ("SELECT part, id, running_sum FROM P MATCH_RECOGNIZE ( PARTITION BY part "
            "MEASURES RUNNING sum(value) AS running_sum ALL ROWS PER MATCH AFTER MATCH SKIP "
            "PAST LAST ROW PATTERN (B (A | B) B) DEFINE A AS arbitrary(value) > 1000 );")
    assert partitioned(run_epl, text, THREE_PARTS, ("part", "id", "running_sum")) == rows(
        ("p1", 1, 1), ("p1", 2, 2), ("p1", 3, 3), ("p1", 4, 1), ("p1", 5, 2), ("p1", 6, 3),
        *[("p2", i, 10 * i) for i in range(1, 4)], *[("p3", i, 100 * i) for i in range(1, 4)])


def test_label_and_column_names(run_epl):
    # a field A and a variable A: count(A.A) counts A's non-null values in rows labelled
    # A, count(A) every row's, and Trino's count(A.*) (rows labelled A) is
    # count(CLASSIFIER(A)). The stream is L: T and P have no field A
    schema = "CREATE SCHEMA L (id int, A string, ts timestamp) TIMESTAMP ts;\n"
    text = schema + (
        "SELECT id, classy, m1, m2, m3 FROM L MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS "
        "classy, count(A.A) AS m1, count(A) AS m2, count(CLASSIFIER(A)) AS m3 ALL ROWS PER "
        "MATCH PATTERN (A B A A) DEFINE A AS true );")
    events = [dict(id=i, A=a, ts=i * SEC) for i, a in enumerate(["p", "q", None, "s"], 1)]
    out = run_epl(text, events)
    for size in (1, 3):
        assert run_epl(text, events, batch_size=size) == out
    assert Counter(tuple(r[c] for c in ("id", "classy", "m1", "m2", "m3")) for r in out) == rows(
        (1, "A", 1, 1, 1), (2, "B", 1, 2, 1), (3, "A", 1, 2, 2), (4, "A", 2, 3, 3))


def test_forking_threads(run_epl):
    # Trino's DEFINE X AS array_agg(CLASSIFIER()) = ARRAY['C', 'A', 'B', 'X'] is the same
    # condition on the four labels, read with FIRST(CLASSIFIER(), n); its RUNNING
    # array_agg(CLASSIFIER()) measure is each row's label and the count so far
    text = ("SELECT id, classy, n FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy, "
            "RUNNING count() AS n ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN ((A | B | C)* X) DEFINE X AS count(*) = 4 AND FIRST(CLASSIFIER()) = 'C' "
            "AND FIRST(CLASSIFIER(), 1) = 'A' AND FIRST(CLASSIFIER(), 2) = 'B' );")
    assert query(run_epl, text, [0] * 4, ("id", "classy", "n")) == rows(
        (1, "C", 1), (2, "A", 2), (3, "B", 3), (4, "X", 4))
