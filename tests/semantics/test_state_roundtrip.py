"""Every operator's per-key state survives bytes: split a random stream at random points,
move random keys' state to a fresh engine, continue — the output never changes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.output import empty_output, output_records, sort_output
from cep.engine.table import SEQ, SUB, concat, take
from cep.lang.compile import compile_text
from cep.reference import batch_watermarks, input_watermark, run_reference

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
    "pattern": "SELECT a.v AS av, b.v AS bv FROM PATTERN [ every a=S(kind = 1) -> "
               "b=S(kind = 2 AND v > a.v) WITHIN 6 sec ] PARTITION BY k;",
}


def _events(seed: int, n: int = 120) -> dict:
    rng = np.random.default_rng(seed)
    return {"S": {
        SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
        "k": rng.integers(0, 4, n).astype(np.int64),
        "ts": np.cumsum(rng.integers(0, 1500, n)).astype(np.int64) * 1000,
        "v": rng.integers(0, 10, n).astype(np.float64),
        "kind": rng.integers(0, 3, n).astype(np.int64),
    }}


@pytest.mark.parametrize("kind", sorted(RULES))
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 119), max_size=6),
       movers=st.integers(0, 2**16))
def test_state_round_trip_changes_no_output(kind, seed, cuts, movers):
    module = compile_text(SCHEMA + RULES[kind], kind)
    inputs = _events(seed)
    expected = output_records(run_reference(module, inputs))
    bounds = [0, *sorted(set(cuts)), 120]
    clocks = batch_watermarks(input_watermark(module, inputs), list(itertools.pairwise(bounds)))
    engines = [Engine(module), Engine(module)]
    owner = {k: 0 for k in range(4)}
    outputs = []
    for step, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        chunk = {"S": take(inputs["S"], (inputs["S"][SEQ] >= lo) & (inputs["S"][SEQ] < hi))}
        streams, _ = derive_streams(module, chunk)
        keyed = add_keys(streams["S"], module.key)
        for e in (0, 1):
            mine = np.array([owner[k] == e for k in keyed["__key"].tolist()], dtype=bool)
            outputs.append(engines[e].process({"S": take(keyed, mine)}, clocks[step]))
        for k in range(4):  # keys whose bit is set move to the other engine
            if movers >> (step * 4 + k) & 1:
                src = owner[k]
                engines[1 - src].import_keys(engines[src].export_keys([k]))
                owner[k] = 1 - src
        if step % 2:  # and now and then every engine restarts from its snapshot
            for e in (0, 1):
                fresh = Engine(module)
                fresh.restore(engines[e].snapshot())
                engines[e] = fresh
    order = {name: i for i, name in enumerate(module.outputs)}
    assert output_records(sort_output(concat(outputs) or empty_output(), order)) == expected
