"""Trino's tests of aggregations in row pattern recognition (trinodb/trino,
``TestAggregationsInRowPatternMatching``), translated assertion by assertion into cep rules
on the reference runner, each on both matchers: the compiled one (where it takes the
rule) and the interpreter forced on with ``CEP_INTERPRET=1`` (the ``run_epl`` fixture of
tests/support/trino_queries.py).

As in tests/semantics/test_trino_row_pattern_matching.py (``TestRowPatternMatching``),
Trino's ``VALUES`` rows become events in id order (ts = id seconds), on the stream ``T
(id, value, ts)`` or, partitioned, ``P (id, part, value, ts)``. Results are compared as
multisets (as Trino's ``matches`` does); each query also runs in batches of one and
three events, which must not change a single output. The assertions that cannot apply
to cep, and why, are listed in docs/esper.md#what-trinos-tests-cannot-check.
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

from grammar.compile import compile_text
from grammar.errors import RuleError

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
