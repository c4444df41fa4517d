"""``#firstlength``, ``#firsttime``, ``#time_length_batch`` and ``#unique``, hand-checked
event by event against Esper's definitions (reference, "Data windows"), with the
watermark as the clock that closes windows by time (docs/semantics-event-time.md)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, v int, f string) TIMESTAMP ts;\n"
RULE = ("SELECT v, count(*) AS n, sum(v) AS s, prevtail(v) AS old FROM S#groupwin(k){};")


def events():
    # keys alternate a/b for six events, then only a; a 5 s gap before the 9th event
    return [dict(k="ab"[i % 2] if i < 6 else "a", ts=i * SEC + (5 * SEC if i >= 8 else 0),
                 v=i, f="xyz"[i % 3]) for i in range(12)]


def run(run_epl, window, batch_sizes=(1, 3, 5)):
    out = run_epl(SCHEMA + RULE.format(window), events())
    for size in batch_sizes:
        assert run_epl(SCHEMA + RULE.format(window), events(), batch_size=size) == out
    return [(r["key"], r["v"], r["n"], r["s"], r["old"]) for r in out]


def test_firstlength_keeps_the_first_n_and_ignores_the_rest(run_epl):
    assert run(run_epl, "#firstlength(2)") == [
        ("a", 0, 1, 0, 0), ("b", 1, 1, 1, 1), ("a", 2, 2, 2, 0), ("b", 3, 2, 4, 1)]


def test_firsttime_keeps_what_arrives_within_T_of_the_keys_first_event(run_epl):
    # a starts at 0 s: 0 and 2 s are in, 4 s is not; b starts at 1 s: 1 and 3 s are in
    assert run(run_epl, "#firsttime(3 sec)") == [
        ("a", 0, 1, 0, 0), ("b", 1, 1, 1, 1), ("a", 2, 2, 2, 0), ("b", 3, 2, 4, 1)]


def test_time_length_batch_closes_on_count_or_time(run_epl):
    assert run(run_epl, "#time_length_batch(3 sec, 2)") == [
        ("a", 2, 2, 2, 0),     # a: 0, 2 s: the count closes it on its 2nd event
        ("b", 3, 2, 4, 1),
        ("a", 6, 2, 10, 4),    # 4, 6 s
        # the event at 13 s moves the watermark past b's 5 + 3 s and a's 7 + 3 s: both
        # close by time, earliest deadline first, each row with its last event's fields
        ("b", 5, 1, 5, 5),
        ("a", 7, 1, 7, 7),
        ("a", 9, 2, 17, 8),    # 13 s starts the next, 14 s closes it
        ("a", 11, 2, 21, 10),
    ]


def test_unique_keeps_the_newest_event_per_value(run_epl):
    out = run(run_epl, "#unique(f)")
    # a's f: 0 x, 2 z, 4 y, 6 x (replaces 0), 7 y (replaces 4), 8 z (replaces 2), ...
    assert out[4:8] == [("a", 4, 3, 6, 0), ("b", 5, 3, 9, 1), ("a", 6, 3, 12, 2),
                        ("a", 7, 3, 15, 2)]
    assert out[-1] == ("a", 11, 3, 30, 9)


def test_unique_without_groupwin_and_group_by_its_field(run_epl):
    rule = SCHEMA + "SELECT f, count(*) AS n, sum(v) AS s FROM S#unique(f) GROUP BY f;"
    out = run_epl(rule, events())
    assert [(r["key"], r["n"], r["s"]) for r in out][:4] == [
        ("x", 1, 0), ("y", 1, 1), ("z", 1, 2), ("x", 1, 3)]
    shared = run_epl(SCHEMA + "SELECT count(*) AS n, sum(v) AS s FROM S#unique(f);", events())
    assert [(r["n"], r["s"]) for r in shared][:5] == [(1, 0), (2, 1), (3, 3), (3, 6), (3, 9)]


@pytest.mark.parametrize(("rule", "message"), [
    ("SELECT count(*) FROM S#groupwin(k)#time_length_batch(3 sec);", "wrong number of arguments"),
    ("SELECT count(*) FROM S#groupwin(k)#firstlength(0);", "needs a positive size"),
    ("SELECT count(*) FROM S#groupwin(k)#unique(count(*));", "not allowed here"),
    ("SELECT count(*) FROM S#unique(v) GROUP BY k;", "cannot be partitioned by k"),
    ("SELECT LE.v, count(*) AS n FROM S#lastevent AS LE, S#groupwin(k)#unique(f) AS W "
     "WHERE LE.k = W.k;", "supports #length, #time and #keepall"),
])
def test_misuse_is_a_rule_error(rule, message):
    with pytest.raises(RuleError, match=message):
        compile_text(SCHEMA + rule)
