"""Trino's partitioned row pattern tests (tests/semantics/test_trino_row_pattern_matching.py
and test_trino_row_pattern_aggregations.py) on Spark: the same events as the reference
evaluator, with three engines, batches of three events and a key-moving strategy, so held
matches, match numbers and ALL ROWS PER MATCH state cross batches and engines."""

from __future__ import annotations

import json

import pytest

from grammar.compile import compile_text

SCHEMA = "CREATE SCHEMA P (id int, part string, value int, ts timestamp) TIMESTAMP ts;\n"
DATA = [(1, "p1", 1), (2, "p1", 1), (6, "p1", 1), (2, "p2", 10), (2, "p3", 100),
        (1, "p3", 100), (3, "p1", 1), (4, "p1", 1), (5, "p1", 1), (1, "p2", 10),
        (3, "p3", 100), (3, "p2", 10), (7, "p2", 5), (8, "p3", 300), (9, "p1", 0)]
RULES = {
    "running_sum_to_next_row": "SELECT part, mn, id, s FROM P MATCH_RECOGNIZE ( PARTITION BY "
                               "part MEASURES RUNNING sum(value) AS s, MATCH_NUMBER() AS mn "
                               "ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW "
                               "PATTERN (B+) DEFINE B AS true );",
    "tentative_label": "SELECT part, id, classy, s FROM P MATCH_RECOGNIZE ( PARTITION BY part "
                       "MEASURES RUNNING sum(value) AS s, CLASSIFIER() AS classy ALL ROWS "
                       "PER MATCH PATTERN ((A | B)*) DEFINE A AS sum(value) > 4 );",
    "falling_with_unmatched": "SELECT part, id, mn, val, label FROM P MATCH_RECOGNIZE ( "
                              "PARTITION BY part MEASURES MATCH_NUMBER() AS mn, RUNNING "
                              "PREV(LAST(value)) AS val, CLASSIFIER() AS label ALL ROWS PER "
                              "MATCH WITH UNMATCHED ROWS PATTERN (B+) "
                              "DEFINE B AS B.value <= PREV(B.value) );",
    # ^ at each key's first row (its row count moves with it), $ at the input's end
    "anchors": "SELECT part, id, classy FROM P MATCH_RECOGNIZE ( PARTITION BY part "
               "MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH "
               "PATTERN (^ A B? | C+ $) DEFINE A AS value < 50, C AS value > 0 );",
    "subset_skip_exclusion": "SELECT part, id, mn, u FROM P MATCH_RECOGNIZE ( PARTITION BY "
                             "part MEASURES MATCH_NUMBER() AS mn, FINAL sum(U.value) AS u "
                             "ALL ROWS PER MATCH AFTER MATCH SKIP TO LAST U "
                             "PATTERN (A {- B* -} C+) SUBSET U = (A, C) "
                             "DEFINE B AS B.value = PREV(B.value), C AS C.value >= A.value );",
    # NEXT in DEFINE: each key's rows wait in its state for the two rows after them
    "next_in_define": "SELECT part, id, mn, label FROM P MATCH_RECOGNIZE ( PARTITION BY part "
                      "MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS label ALL ROWS PER "
                      "MATCH PATTERN (A B*) DEFINE A AS NEXT(A.value, 2) >= A.value, "
                      "B AS NEXT(B.value) IS NULL OR NEXT(B.value) < B.value );",
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_trino_rule_on_spark_equals_reference(spark, spark_events, reference_events,
                                              tmp_path, name):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(dict(id=i, part=p, value=v, ts=i * 1000)) + "\n"
                            for i, p, v in sorted(DATA)))
    module = compile_text(SCHEMA + RULES[name], name)
    expected = reference_events(module, path)
    assert expected, "the rule must produce output on the sample"
    assert spark_events(module, path, engines=3, batch_size=3, strategy="dlb-h",
                        threshold=5.0) == expected
