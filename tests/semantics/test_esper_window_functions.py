"""``prev``, ``prevtail``, ``prevcount`` and ``prior`` over data windows, hand-checked
against Esper's definitions (reference, "Single-row functions": prev(n, e) counts back
from the newest event of the window, prevtail from the oldest, prior back along the
stream whatever the window holds; NULL where there is no such event)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;\n"
ALL = ("SELECT v, prev(1, v) AS p1, prev(v) AS p, prev(0, v) AS p0, prevtail(v) AS t0, "
       "prevtail(1, v) AS t1, prevcount(v) AS c, prior(3, v) AS r3 FROM S#groupwin(k){};")


def events(n=10):
    # keys alternate a/b for six events, then only a
    return [dict(k="ab"[i % 2] if i < 6 else "a", ts=i * SEC, v=i) for i in range(n)]


def table(out, *cols):
    return [tuple(r[c] for c in cols) for r in out]


def test_length_window_functions_per_key(run_epl):
    out = run_epl(SCHEMA + ALL.format("#length(3)"), events())
    assert table(out, "key", "v", "p1", "p", "p0", "t0", "t1", "c", "r3") == [
        ("a", 0, None, None, 0, 0, None, 1, None),
        ("b", 1, None, None, 1, 1, None, 1, None),
        ("a", 2, 0, 0, 2, 0, 2, 2, None),
        ("b", 3, 1, 1, 3, 1, 3, 2, None),
        ("a", 4, 2, 2, 4, 0, 2, 3, None),
        ("b", 5, 3, 3, 5, 1, 3, 3, None),
        ("a", 6, 4, 4, 6, 2, 4, 3, 0),   # prior reaches past the window (0 left it)
        ("a", 7, 6, 6, 7, 4, 6, 3, 2),
        ("a", 8, 7, 7, 8, 6, 7, 3, 4),
        ("a", 9, 8, 8, 9, 7, 8, 3, 6),
    ]


def test_time_window_functions_and_batch_invariance(run_epl):
    rule = SCHEMA + ALL.format("#time(2500 msec)")
    out = run_epl(rule, events())
    # key a from 6 s on: one event a second, the window (t − 2.5 s, t] holds three
    assert table(out, "v", "t0", "c")[-4:] == [(6, 4, 2), (7, 6, 2), (8, 6, 3), (9, 7, 3)]
    for size in (1, 2, 3, 7):
        assert run_epl(rule, events(), batch_size=size) == out


def test_prev_in_having_and_expressions(run_epl):
    # Esper's classic "price rose": compare each tick with the previous one
    out = run_epl(SCHEMA + "SELECT v, v - prev(1, v) AS rise FROM S#groupwin(k)#length(2) "
                  "HAVING prev(1, v) IS NOT NULL AND v > prev(1, v) + 1;", events())
    assert table(out, "key", "v", "rise") == [("a", 2, 2), ("b", 3, 2), ("a", 4, 2),
                                               ("b", 5, 2), ("a", 6, 2)]


def test_length_batch_window_functions(run_epl):
    out = run_epl(SCHEMA + "SELECT prev(0, v) AS newest, prevtail(v) AS oldest, prevcount(v) "
                  "AS c, prior(1, v) AS before FROM S#groupwin(k)#length_batch(2);", events())
    assert table(out, "key", "newest", "oldest", "c", "before") == [
        ("a", 2, 0, 2, 0), ("b", 3, 1, 2, 1), ("a", 6, 4, 2, 4), ("a", 8, 7, 2, 7)]


@pytest.mark.parametrize(("rule", "message"), [
    ("SELECT v FROM S#groupwin(k)#length(3) WHERE prev(1, v) > 0;", "reads a data window"),
    ("SELECT prev(1, v) AS p FROM S;", "reads a data window"),
    ("SELECT prior(v) AS p FROM S#groupwin(k)#length(3);", "wrong arguments for prior()"),
    ("SELECT prev(v, v) AS p FROM S#groupwin(k)#length(3);", "must be a whole-number constant"),
    ("SELECT sum(prev(1, v)) AS p FROM S#groupwin(k)#length(3);", "reads a data window"),
])
def test_misuse_is_a_rule_error(rule, message):
    with pytest.raises(RuleError, match=message):
        compile_text(SCHEMA + rule)
