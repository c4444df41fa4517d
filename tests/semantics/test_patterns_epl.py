"""Pattern semantics at the rule level (the matcher itself: tests/engine/test_patterns.py)."""

from __future__ import annotations

import pytest

HOUR = 3600 * 1000

SCHEMA = "CREATE SCHEMA E (k string, ts timestamp, kind string, x int) TIMESTAMP ts;\n"


def evs(*items):
    """('A1', ts) → an event of kind A with x = 1."""
    return [{"k": "p", "ts": ts, "kind": name[0], "x": int(name[1:])} for name, ts in items]


# Esper reference documentation, "Pattern operators: every" — the event sequence
# A1 B1 C1 B2 A2 D1 A3 B3 E1 A4 F1 B4 and the matches it lists for each pattern.
ESPER_SEQUENCE = ["A1", "B1", "C1", "B2", "A2", "D1", "A3", "B3", "E1", "A4", "F1", "B4"]
ESPER_CASES = [
    ("every (a=E(kind='A') -> b=E(kind='B'))", [("A1", "B1"), ("A2", "B3"), ("A4", "B4")]),
    ("every a=E(kind='A') -> b=E(kind='B')",
     [("A1", "B1"), ("A2", "B3"), ("A3", "B3"), ("A4", "B4")]),
    ("a=E(kind='A') -> every b=E(kind='B')",
     [("A1", "B1"), ("A1", "B2"), ("A1", "B3"), ("A1", "B4")]),
    ("every a=E(kind='A') -> every b=E(kind='B')",
     [("A1", "B1"), ("A1", "B2"), ("A1", "B3"), ("A1", "B4"), ("A2", "B3"), ("A2", "B4"),
      ("A3", "B3"), ("A3", "B4"), ("A4", "B4")]),
]


@pytest.mark.parametrize(("pattern", "expected"), ESPER_CASES)
def test_esper_every_operator_table(run_epl, pattern, expected):
    rule = SCHEMA + (f"SELECT concat(a.kind, a.x) AS a, concat(b.kind, b.x) AS b "
                     f"FROM PATTERN [{pattern}] PARTITION BY k;")
    # x holds the event's number within its letter
    events = evs(*[(name, i) for i, name in enumerate(ESPER_SEQUENCE)])
    out = run_epl(rule, events)
    got = sorted((r["a"], r["b"]) for r in out)
    assert got == sorted(expected)
    for size in (1, 5):
        assert sorted((r["a"], r["b"]) for r in run_epl(rule, events, batch_size=size)) == \
            sorted(expected)


WITHIN_RULE = SCHEMA + """
SELECT a.x AS ax, b.x AS bx FROM PATTERN [ every a=E(kind='A') -> b=E(kind='B')
WITHIN 1 hours ] PARTITION BY k;
"""


def test_within_is_exclusive_at_exactly_T(run_epl):
    assert run_epl(WITHIN_RULE, evs(("A1", 0), ("B1", HOUR))) == []
    out = run_epl(WITHIN_RULE, evs(("A1", 0), ("B1", HOUR - 1)))
    assert [(r["ax"], r["bx"], r["seq"]) for r in out] == [(1, 1, 1)]


def test_within_expired_instance_does_not_take_a_later_b(run_epl):
    # Flink CEP docs' "within": a partial match older than the window is discarded
    out = run_epl(WITHIN_RULE, evs(("A1", 0), ("A2", 2 * HOUR), ("B1", 2 * HOUR + 5)))
    assert [(r["ax"], r["bx"]) for r in out] == [(2, 1)]


def test_ties_in_timestamp_keep_sequence_order(run_epl):
    rule = SCHEMA + ("SELECT a.x AS ax FROM PATTERN [ every a=E(kind='A') -> b=E(kind='B') ] "
                     "PARTITION BY k;")
    assert run_epl(rule, evs(("B1", 5), ("A1", 5))) == []
    assert len(run_epl(rule, evs(("A1", 5), ("B1", 5)))) == 1


def test_filters_that_read_earlier_tags_and_partitioning(run_epl):
    rule = SCHEMA + """
    SELECT a.x AS ax, b.x AS bx FROM PATTERN [ every a=E(kind='A') -> b=E(kind='B' AND x > a.x) ]
    PARTITION BY k;
    """
    events = evs(("A5", 0), ("B3", 1), ("B7", 2))
    events.insert(1, {"k": "q", "ts": 0, "kind": "B", "x": 9})
    out = run_epl(rule, events)
    assert [(r["key"], r["ax"], r["bx"]) for r in out] == [("p", 5, 7)]


def test_and_or_not_and_repetition(run_epl):
    both = SCHEMA + ("SELECT a.x AS ax, b.x AS bx FROM PATTERN "
                     "[ every (a=E(kind='A') and b=E(kind='B')) ] PARTITION BY k;")
    assert [(r["ax"], r["bx"]) for r in run_epl(both, evs(("B1", 0), ("A1", 1), ("A2", 2),
                                                         ("B2", 3)))] == [(1, 1), (2, 2)]
    guarded = SCHEMA + ("SELECT a.x AS ax, b.x AS bx FROM PATTERN [ every a=E(kind='A') -> "
                        "(b=E(kind='B') and not c=E(kind='C')) ] PARTITION BY k;")
    out = run_epl(guarded, evs(("A1", 0), ("C1", 1), ("A2", 2), ("B1", 3)))
    assert [(r["ax"], r["bx"]) for r in out] == [(2, 1)]
    repeated = SCHEMA + ("SELECT a[0].x AS first, a[2].x AS third FROM PATTERN "
                         "[ [3] a=E(kind='A') ] PARTITION BY k;")
    out = run_epl(repeated, evs(("A1", 0), ("B1", 1), ("A2", 2), ("A3", 3), ("A4", 4)))
    assert [(r["first"], r["third"]) for r in out] == [(1, 3)]
