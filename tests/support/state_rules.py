"""A rule of every operator kind over one keyed stream, and a random input for them:
the state tests run each kind's per-key state through moves, snapshots and changes."""

from __future__ import annotations

import numpy as np

from cep.engine.table import SEQ, SUB

SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
RULES = {
    "length": "SELECT count(*) AS n, avg(v) AS a, first(v) AS f FROM S#groupwin(k)#length(3);",
    "time": "SELECT sum(v) AS s, max(v) AS m FROM S#groupwin(k)#time(5 sec);",
    "length_batch": "SELECT sum(v) AS s, stddev(v) AS sd FROM S#groupwin(k)#length_batch(3);",
    "time_batch": "SELECT count(*) AS n, last(v) AS l FROM S#groupwin(k)#time_batch(4 sec);",
    "keepall": "SELECT count(*) AS n, min(v) AS lo FROM S#groupwin(k)#keepall WHERE kind > 0;",
    "join": "SELECT LE.v AS v, count(*) AS n, max(TW.v) AS best FROM S#lastevent AS LE, "
            "S#groupwin(k)#length(4) AS TW WHERE LE.k = TW.k AND TW.kind != LE.kind;",
    "prev_prior": "SELECT prev(1, v) AS p, prevtail(v) AS t, prevcount(v) AS c, prior(2, v) AS r "
                  "FROM S#groupwin(k)#time(3 sec);",
    "firstlength": "SELECT count(*) AS n, sum(v) AS s FROM S#groupwin(k)#firstlength(5);",
    "firsttime": "SELECT count(*) AS n, max(v) AS m FROM S#groupwin(k)#firsttime(9 sec);",
    "time_length_batch": "SELECT count(*) AS n, sum(v) AS s, prev(0, v) AS p "
                         "FROM S#groupwin(k)#time_length_batch(4 sec, 3);",
    "unique": "SELECT count(*) AS n, avg(v) AS a, prevtail(v) AS t "
              "FROM S#groupwin(k)#unique(kind) WHERE v > 2;",
    "output_all_time": "SELECT v, count(*) AS n FROM S#groupwin(k)#length(3) "
                       "OUTPUT ALL EVERY 2 sec;",
    "output_last_events": "SELECT sum(v) AS s FROM S#groupwin(k)#time(4 sec) "
                          "OUTPUT LAST EVERY 3 EVENTS;",
    "output_last_time": "SELECT v, prev(1, v) AS p FROM S#groupwin(k)#length(3) "
                        "OUTPUT LAST EVERY 3 sec;",
    "output_all_events": "SELECT max(v) AS m FROM S#groupwin(k)#time(4 sec) WHERE kind > 0 "
                         "OUTPUT ALL EVERY 3 EVENTS;",
    "output_snapshot_pattern": "SELECT a.v AS av, b.v AS bv FROM PATTERN [every a=S(kind = 1)"
                               " -> b=S(kind = 2) WITHIN 6 sec] PARTITION BY k "
                               "OUTPUT SNAPSHOT EVERY 3 sec;",
    "output_first_join": "SELECT LE.v AS v, count(*) AS n FROM S#lastevent AS LE, "
                         "S#groupwin(k)#length(4) AS TW WHERE LE.k = TW.k "
                         "OUTPUT FIRST EVERY 2 sec;",
    "match_until": "SELECT b[0].v AS b0, b[1].v AS b1, c.v AS cv FROM PATTERN [every "
                   "([1:3] b=S(kind = 1) until c=S(kind = 2)) WITHIN 8 sec] PARTITION BY k;",
    "timer_absence": "SELECT a.v AS av FROM PATTERN [every a=S(kind = 1) -> "
                     "(timer:interval(2 sec) and not b=S(kind = 2))] PARTITION BY k;",
    "match_recognize": "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES A.v AS a, "
                       "count(B.v) AS n, last(C.v) AS c PATTERN (A B+ C) WITHIN 7 sec "
                       "DEFINE B AS B.v < prev(B.v), C AS C.v > A.v );",
    # greedy to the end, no WITHIN: matches held in the key's state until a row or the
    # input's end decides them
    "match_recognize_held": "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
                            "A.v AS a, count(B.v) AS n, last(C.v) AS c, count(*) AS m "
                            "PATTERN (A B+ C+) DEFINE B AS B.v < prev(B.v), "
                            "C AS C.v > prev(C.v) );",
    # every row of each match, numbered per key (the count stays with the key), with
    # navigation, an aggregate in DEFINE and an exclusion
    # anchors: ^ holds at each key's first row only (the key's row count moves with it),
    # $ at the end of the input
    "match_recognize_anchors": "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
                               "count(*) AS n, LAST(A.v) AS a, CLASSIFIER() AS cl "
                               "PATTERN (^ A+ | B C* $) DEFINE A AS A.kind = 1, "
                               "B AS B.v > 5, C AS C.kind < 2 );",
    "match_recognize_all_rows": "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
                                "MATCH_NUMBER() AS mn, CLASSIFIER() AS cl, "
                                "PREV(LAST(B.v), 1) AS pb, FINAL count(*) AS n "
                                "ALL ROWS PER MATCH WITH UNMATCHED ROWS "
                                "AFTER MATCH SKIP TO LAST B PATTERN (A {- X? -} B+?) "
                                "DEFINE A AS A.kind = 1, X AS X.kind = 0, "
                                "B AS avg(B.v) > 4 );",
    # NEXT in DEFINE: each key's rows wait in its state for the two rows after them
    "match_recognize_next": "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
                            "MATCH_NUMBER() AS mn, count(*) AS n, NEXT(v) AS nv "
                            "PATTERN (A B+) WITHIN 7 sec DEFINE A AS NEXT(A.v, 2) > A.v, "
                            "B AS NEXT(B.v) IS NULL OR B.v <= NEXT(B.v) );",
    "pattern": "SELECT a.v AS av, b.v AS bv FROM PATTERN [ every a=S(kind = 1) -> "
               "b=S(kind = 2 AND v > a.v) WITHIN 6 sec ] PARTITION BY k;",
}


def events(seed: int, n: int = 120) -> dict:
    rng = np.random.default_rng(seed)
    return {"S": {
        SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
        "k": rng.integers(0, 4, n).astype(np.int64),
        "ts": np.cumsum(rng.integers(0, 1500, n)).astype(np.int64) * 1000,
        "v": rng.integers(0, 10, n).astype(np.float64),
        "kind": rng.integers(0, 3, n).astype(np.int64),
    }}
