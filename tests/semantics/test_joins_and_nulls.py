"""Golden semantics of #lastevent joins, empty-window aggregates and NULL handling."""

from __future__ import annotations

import numpy as np
import pytest

JOIN_RULE = """
CREATE SCHEMA T (id long, ts timestamp, k int, text string) TIMESTAMP ts;
@Name('novel')
SELECT LE.id AS id, count(*) AS n, max(similarity(LE.text, TW.text)) AS best
FROM T#lastevent AS LE, T#groupwin(k)#length(2) AS TW
WHERE LE.k = TW.k
HAVING coalesce(max(similarity(LE.text, TW.text)), 0) <= 0.5;
"""


def tweets(*rows):
    return [dict(zip(("id", "ts", "k", "text"), r, strict=True)) for r in rows]


def test_lastevent_join_excludes_the_triggering_event(run_epl):
    out = run_epl(JOIN_RULE, tweets((1, 0, 7, "red apple"), (2, 1, 7, "red apple"),
                                    (3, 2, 7, "blue sky")))
    # 1: empty window -> count 0, max NULL -> coalesce 0 -> novel
    # 2: identical to 1 -> best 1.0 -> not novel; 3: disjoint from both -> novel
    assert [(r["id"], r["n"], r["best"]) for r in out] == [(1, 0, None), (3, 2, 0.0)]


def test_lastevent_join_window_is_per_key_and_bounded(run_epl):
    out = run_epl(JOIN_RULE, tweets((1, 0, 1, "a b"), (2, 1, 2, "a b"), (3, 2, 1, "c d"),
                                    (4, 3, 1, "e f"), (5, 4, 1, "a b")))
    # key 2 never saw "a b" before; for id 5 the last 2 of key 1 are "c d", "e f"
    assert [r["id"] for r in out] == [1, 2, 3, 4, 5]
    assert [r["n"] for r in out] == [0, 0, 1, 2, 2]


@pytest.mark.parametrize("batch_size", [None, 7, 50])
def test_similarity_kernel_equals_the_pair_by_pair_path(run_epl, batch_size):
    """``max(similarity(LE.text, TW.text))`` runs in a vectorised kernel over term rows
    (the window keeps no texts); a pair filter that is always true forces the general
    pair-by-pair evaluation. Both give the same events, NULL texts included."""
    rng = np.random.default_rng(5)
    words = ["red", "apple", "blue", "sky", "green", "tea", "cup", "a", "b"]
    events = [{"id": i, "ts": i, "k": int(rng.integers(0, 4)),
               "text": None if rng.random() < 0.15 else
               " ".join(rng.choice(words, int(rng.integers(0, 5))))} for i in range(300)]
    forced = JOIN_RULE.replace("WHERE LE.k = TW.k", "WHERE LE.k = TW.k AND TW.id >= 0")
    fast = run_epl(JOIN_RULE.replace("#length(2)", "#length(20)"), events, batch_size)
    slow = run_epl(forced.replace("#length(2)", "#length(20)"), events, batch_size)
    assert fast == slow and len(fast) > 10
    assert any(r["best"] is None for r in fast) and any(r["best"] for r in fast)


def test_join_where_only_on_trigger_filters_triggers(run_epl):
    rule = """
    CREATE SCHEMA T (id long, ts timestamp, k int, text string) TIMESTAMP ts;
    SELECT LE.id AS id, count(*) AS n FROM T#lastevent AS LE, T#groupwin(k)#length(5) AS TW
    WHERE LE.k = TW.k AND LE.id > 1 AND TW.id != 2;
    """
    out = run_epl(rule, tweets((1, 0, 1, "x"), (2, 1, 1, "x"), (3, 2, 1, "x")))
    # id 1 filtered as a trigger; for id 3 the pair with id 2 is filtered out
    assert [(r["id"], r["n"]) for r in out] == [(2, 1), (3, 1)]


NULL_RULE = """
CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
SELECT v, v > 5 AS big, NOT (v > 5) AS small, v IS NULL AS missing, coalesce(v, -1) AS c
FROM S WHERE v > 5 OR v IS NULL;
"""


def test_null_comparisons_are_not_true(run_epl):
    out = run_epl(NULL_RULE, [{"k": "a", "ts": 0, "v": None}, {"k": "a", "ts": 1, "v": 9},
                              {"k": "a", "ts": 2, "v": 1}])
    assert [(r["v"], r["big"], r["small"], r["missing"], r["c"]) for r in out] == [
        (None, None, None, True, -1), (9, True, False, False, 9)]


def test_aggregates_skip_nulls_and_empty_means_null(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT count(*) AS rows_, count(v) AS n, sum(v) AS s, avg(v) AS a, min(v) AS lo,
           stddev(v) AS sd
    FROM S#groupwin(k)#length(3);
    """
    out = run_epl(rule, [{"k": "a", "ts": 0, "v": None}, {"k": "a", "ts": 1, "v": 4},
                         {"k": "a", "ts": 2, "v": 8}])
    assert [(r["rows_"], r["n"], r["s"], r["a"], r["lo"], r["sd"]) for r in out] == [
        (1, 0, None, None, None, None),
        (2, 1, 4, 4.0, 4, None),
        (3, 2, 12, 6.0, 4, 2.8284271247461903),
    ]


def test_three_valued_logic_in_where(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int, w int) TIMESTAMP ts;
    SELECT v, w FROM S WHERE v > 0 AND NOT (w > 0);
    """
    out = run_epl(rule, [{"k": "a", "ts": 0, "v": 1, "w": None},
                         {"k": "a", "ts": 1, "v": 1, "w": -1},
                         {"k": "a", "ts": 2, "v": None, "w": -1}])
    assert [(r["v"], r["w"]) for r in out] == [(1, -1)]


def test_operators_in_between_like_case_arith(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT v, v IN (1, 3) AS odd_small, v BETWEEN 2 AND 3 AS mid, k LIKE 'a_c%' AS pat,
           CASE WHEN v > 2 THEN 'big' WHEN v > 1 THEN 'mid' ELSE 'small' END AS size,
           v / 2 AS half, v % 2 AS rem, 10 / (v - 2) AS inv, upper(k) || '!' AS shout
    FROM S;
    """
    out = run_epl(rule, [{"k": "abcd", "ts": 0, "v": 1}, {"k": "xbc", "ts": 1, "v": 2},
                         {"k": "abc", "ts": 2, "v": 3}])
    assert [(r["odd_small"], r["mid"], r["pat"], r["size"]) for r in out] == [
        (True, False, True, "small"), (False, True, False, "mid"), (True, True, True, "big")]
    assert [(r["half"], r["rem"], r["inv"]) for r in out] == [
        (0.5, 1, -10.0), (1.0, 0, None), (1.5, 1, 10.0)]
    assert out[0]["shout"] == "ABCD!"
