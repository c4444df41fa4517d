"""Golden semantics of data windows, hand-checked event by event.

Timestamps are epoch milliseconds in the input (Esper's convention)."""

from __future__ import annotations

SEC = 1000

TIME_RULE = """
CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
@Name('r') SELECT k, count(*) AS n, sum(v) AS total, first(v) AS oldest
FROM S#groupwin(k)#time(10 sec);
"""


def events(*rows):
    return [dict(zip(("k", "ts", "v"), r, strict=True)) for r in rows]


def test_time_window_holds_t_minus_T_exclusive_to_t_inclusive(run_epl):
    out = run_epl(TIME_RULE, events(("a", 0, 1), ("a", 5 * SEC, 2), ("a", 10 * SEC, 3),
                                   ("a", 15 * SEC, 4), ("a", 25 * SEC - 1, 5)))
    # at t=10s the event at 0 is exactly T old: out of (0, 10]
    assert [(r["n"], r["total"], r["oldest"]) for r in out] == [
        (1, 1, 1), (2, 3, 1), (2, 5, 2), (2, 7, 3), (2, 9, 4)]


def test_time_window_is_per_key_and_output_row_fields(run_epl):
    out = run_epl(TIME_RULE, events(("a", 0, 1), ("b", 1 * SEC, 10), ("a", 2 * SEC, 2)))
    assert [(r["key"], r["n"], r["total"]) for r in out] == [("a", 1, 1), ("b", 1, 10),
                                                              ("a", 2, 3)]
    assert out[2]["seq"] == 2
    assert out[2]["ts"] == "1970-01-01T00:00:02.000Z"
    assert list(out[0])[:4] == ["rule", "key", "seq", "ts"]


def test_late_event_counts_at_its_keys_latest_time(run_epl):
    # the event at 3s arrives after 20s: it is treated as arriving at 20s
    out = run_epl(TIME_RULE, events(("a", 0, 1), ("a", 20 * SEC, 2), ("a", 3 * SEC, 3),
                                   ("a", 29 * SEC, 4)))
    assert [(r["n"], r["total"]) for r in out] == [(1, 1), (1, 2), (2, 5), (3, 9)]


def test_length_window_and_batch_invariance(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT k, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM S#groupwin(k)#length(3);
    """
    evs = events(*[("ab"[i % 2], i * SEC, i) for i in range(10)])
    out = run_epl(rule, evs)
    # key a gets 0,2,4,6,8: sums over the last three
    assert [r["s"] for r in out if r["key"] == "a"] == [0, 2, 6, 12, 18]
    assert [(r["lo"], r["hi"]) for r in out if r["key"] == "b"][-1] == (5, 9)
    for size in (1, 2, 3, 7):
        assert run_epl(rule, evs, batch_size=size) == out


def test_length_batch_emits_on_the_nth_event_then_restarts(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT count(*) AS n, sum(v) AS s, v AS last_v FROM S#groupwin(k)#length_batch(3);
    """
    out = run_epl(rule, events(*[("a", i * SEC, i + 1) for i in range(7)]), batch_size=2)
    assert [(r["seq"], r["n"], r["s"], r["last_v"]) for r in out] == [(2, 3, 6, 3),
                                                                       (5, 3, 15, 6)]


def test_time_batch_aligned_to_epoch_multiples(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT count(*) AS n, sum(v) AS s FROM S#groupwin(k)#time_batch(10 sec);
    """
    # buckets [0,10) [10,20) [20,30): 3s and 7s share one; 12s moves the watermark past its
    # end, 25s past [10,20)'s; the end of the input closes [20,30)
    out = run_epl(rule, events(("a", 3 * SEC, 1), ("a", 7 * SEC, 2), ("a", 12 * SEC, 4),
                               ("a", 25 * SEC, 8), ("a", 29 * SEC, 16)))
    assert [(r["seq"], r["n"], r["s"], r["ts"][11:19]) for r in out] == [
        (2, 2, 3, "00:00:10"), (3, 1, 4, "00:00:20"), ("end", 2, 24, "00:00:30")]


def test_where_filters_triggers_and_aggregated_rows(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT count(*) AS n, sum(v) AS s FROM S#groupwin(k)#length(10) WHERE v > 1;
    """
    out = run_epl(rule, events(("a", 0, 5), ("a", 1, 1), ("a", 2, 7)))
    assert [(r["seq"], r["n"], r["s"]) for r in out] == [(0, 1, 5), (2, 2, 12)]


def test_stream_filter_and_having(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT k, avg(v) AS a FROM S(v < 100)#groupwin(k)#length(2) HAVING avg(v) >= 10;
    """
    out = run_epl(rule, events(("a", 0, 4), ("a", 1, 500), ("a", 2, 16), ("a", 3, 30)))
    assert [(r["seq"], r["a"]) for r in out] == [(2, 10.0), (3, 23.0)]


def test_timestamp_ties_keep_sequence_order(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT first(v) AS f, last(v) AS l FROM S#groupwin(k)#time(1 sec);
    """
    out = run_epl(rule, events(("a", 5, 3), ("a", 5, 1), ("a", 5, 2)))
    assert [(r["f"], r["l"]) for r in out] == [(3, 3), (3, 1), (3, 2)]


def test_unkeyed_window_is_one_global_group(run_epl):
    rule = """
    CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;
    SELECT count(*) AS n FROM S#length(2);
    """
    out = run_epl(rule, events(("a", 0, 1), ("b", 1, 2), ("c", 2, 3)))
    assert [(r["key"], r["n"]) for r in out] == [(None, 1), (None, 2), (None, 2)]
