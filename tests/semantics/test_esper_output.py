"""Output rate limiting (``OUTPUT [ALL|FIRST|LAST|SNAPSHOT] EVERY ...``), per key,
hand-checked event by event (semantics in ``cep.engine.rate.limit`` and
docs/esper.md#output-rate-limiting)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;\n"
RULE = "SELECT v, count(*) AS n FROM S#groupwin(k)#length(2) {};"


def events():
    # a at 0, 2, 4 s, b at 1, 3, 5 s, then only a, one a second up to 13 s
    return [dict(k="ab"[i % 2] if i < 6 else "a", ts=i * SEC, v=i) for i in range(14)]


def run(run_epl, clause):
    rule = SCHEMA + RULE.format(clause)
    out = run_epl(rule, events())
    for size in (1, 3, 4):
        assert run_epl(rule, events(), batch_size=size) == out
    return [(r["key"], r["v"]) for r in out]


@pytest.mark.parametrize(("clause", "expected"), [
    # a's rows 0 2 | 4 6 | 7 8 | 9 10 | 11 12 | 13 (pending); b's 1 3 | 5 (pending);
    # ALL releases a block at its last row (and with that row's seq)
    ("OUTPUT EVERY 2 EVENTS", [("a", 0), ("a", 2), ("b", 1), ("b", 3), ("a", 4), ("a", 6),
                               ("a", 7), ("a", 8), ("a", 9), ("a", 10), ("a", 11),
                               ("a", 12)]),
    ("OUTPUT FIRST EVERY 2 EVENTS", [("a", 0), ("b", 1), ("a", 4), ("b", 5), ("a", 7),
                                     ("a", 9), ("a", 11), ("a", 13)]),
    ("OUTPUT LAST EVERY 2 EVENTS", [("a", 2), ("b", 3), ("a", 6), ("a", 8), ("a", 10),
                                    ("a", 12)]),
])
def test_every_n_events(run_epl, clause, expected):
    assert run(run_epl, clause) == expected


@pytest.mark.parametrize(("clause", "expected"), [
    # 3 s intervals; a: [0,3) 0 2, [3,6) 4, [6,9) 6 7 8, [9,12) 9 10 11, [12,15) 12 13;
    # b: [0,3) 1, [3,6) 3 5. An interval closes when the watermark reaches its end (the
    # event at 3 s closes both keys' first, a before b), the last at the end of input.
    ("OUTPUT ALL EVERY 3 sec", [("a", 0), ("a", 2), ("b", 1), ("a", 4), ("b", 3), ("b", 5),
                                ("a", 6), ("a", 7), ("a", 8), ("a", 9), ("a", 10), ("a", 11),
                                ("a", 12), ("a", 13)]),
    ("OUTPUT FIRST EVERY 3 sec", [("a", 0), ("b", 1), ("b", 3), ("a", 4), ("a", 6), ("a", 9),
                                  ("a", 12)]),
    ("OUTPUT LAST EVERY 3 sec", [("a", 2), ("b", 1), ("a", 4), ("b", 5), ("a", 8), ("a", 11),
                                 ("a", 13)]),
])
def test_every_period_of_event_time(run_epl, clause, expected):
    assert run(run_epl, clause) == expected


def test_released_rows_carry_the_seq_of_their_release(run_epl):
    out = run_epl(SCHEMA + RULE.format("OUTPUT ALL EVERY 3 sec"), events())
    # [0 s, 3 s) closes at the event at 3 s (b's, index 3): a's rows and b's leave with
    # its seq, keeping their own ts; the last interval leaves at the end of the input
    assert [(r["key"], r["v"], r["seq"], r["ts"][17:19]) for r in out[:4]] == [
        ("a", 0, 3, "00"), ("a", 2, 3, "02"), ("b", 1, 3, "01"), ("a", 4, 6, "04")]
    assert [(r["v"], r["seq"]) for r in out[-2:]] == [(12, "end"), (13, "end")]


def test_snapshot_repeats_the_latest_row_at_each_close(run_epl):
    rule = SCHEMA + "SELECT v, sum(v) AS s FROM S#groupwin(k)#length(5) WHERE v < 3 " \
                    "OUTPUT SNAPSHOT EVERY 2 sec;"
    out = run_epl(rule, events())
    # a's results: 0 (0 s), 2 (2 s); later events of a pass no WHERE but open intervals:
    # each close (at 2, 4, 6, ... s, the last at the end of input) repeats the latest
    # row, stamped with the interval's end
    assert [(r["ts"][17:19], r["v"], r["s"]) for r in out if r["key"] == "a"] == [
        ("02", 0, 0), ("04", 2, 2), ("06", 2, 2), ("08", 2, 2), ("10", 2, 2), ("12", 2, 2),
        ("14", 2, 2)]
    # b's last event (5 s) opens [4 s, 6 s); no later interval of b opens
    assert [r["ts"][17:19] for r in out if r["key"] == "b"] == ["02", "04", "06"]


def test_pattern_rule_output_limited(run_epl):
    rule = SCHEMA + "SELECT a.v AS av, b.v AS bv FROM PATTERN [every a=S -> b=S] " \
                    "PARTITION BY k OUTPUT LAST EVERY 3 EVENTS;"
    out = run_epl(rule, events())
    assert [(r["key"], r["av"], r["bv"]) for r in out] == [("a", 4, 6), ("a", 8, 9),
                                                           ("a", 11, 12)]


@pytest.mark.parametrize(("rule", "message"), [
    ("SELECT v FROM S OUTPUT EVERY 5 EVENTS;", "needs a rule with state"),
    ("CREATE SCHEMA T (k string, v int); SELECT count(*) AS n FROM T#groupwin(k)#length(2) "
     "OUTPUT EVERY 3 sec;", "has no TIMESTAMP"),
    ("SELECT count(*) AS n FROM S#groupwin(k)#length(2) OUTPUT EVERY 0 EVENTS;",
     "at least 1"),
    ("SELECT count(*) AS n FROM S#groupwin(k)#length(2) OUTPUT EVERY v;", "unknown variable"),
])
def test_misuse_is_a_rule_error(rule, message):
    with pytest.raises(RuleError, match=message):
        compile_text(SCHEMA + rule)
