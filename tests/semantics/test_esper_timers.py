"""``timer:interval`` in patterns and absence (``a -> (timer:interval(T) and not b)``),
hand-checked event by event. Event time is per key and moved only by the key's events of
the pattern's streams (semantics in ``cep.engine.patterns`` and docs/esper.md#patterns)."""

from __future__ import annotations

import pytest

from cep.lang.compile import compile_text
from cep.lang.errors import RuleError

SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, kind string, v int) TIMESTAMP ts;\n"


def events(spec, key="x"):
    """``"A@0 X@3"``: kind A at 0 s, kind X at 3 s; v is the event's position."""
    out = []
    for i, token in enumerate(spec.split()):
        kind, at = token.split("@")
        out.append(dict(k=key, ts=int(float(at) * 1000), kind=kind, v=i))
    return out


def run(run_epl, pattern, evs, select="a.v AS av"):
    rule = SCHEMA + f"SELECT {select} FROM PATTERN [{pattern}] PARTITION BY k;"
    out = run_epl(rule, evs)
    assert run_epl(rule, evs, batch_size=1) == out
    return [(r["av"], r["ts"][17:19]) for r in out]


MISSED = "every a=S(kind = 'A') -> (timer:interval(5 sec) and not b=S(kind = 'B'))"


def test_missed_follow_up_fires_when_the_keys_clock_passes_the_deadline(run_epl):
    # A@0: no B by 5 s, the key's next event (6 s) moves the clock past it: a match,
    # reported at that event. A@7 is followed by B@9. A@21: X@26 is exactly on time.
    assert run(run_epl, MISSED, events("A@0 X@3 X@6 A@7 B@9 X@20 A@21 X@26")) == [
        (0, "06"), (6, "26")]


def test_a_late_b_does_not_save_it_and_an_early_one_does(run_epl):
    # the clock passes 5 s before the B at 8 s is processed: the timer fired first
    assert run(run_epl, MISSED, events("A@0 B@8")) == [(0, "08")]
    assert run(run_epl, MISSED, events("A@0 B@4.9 X@9")) == []


def test_the_clock_is_per_key(run_epl):
    evs = events("A@0", "x") + events("X@1 X@30", "y") + events("X@4", "x")
    assert run(run_epl, MISSED, evs) == []  # y's events do not move x's clock


def test_no_event_no_firing_at_the_end_of_input(run_epl):
    assert run(run_epl, MISSED, events("X@1 A@2")) == []


def test_timer_then_event_sees_the_event_that_moved_the_clock(run_epl):
    pattern = "every a=S(kind = 'A') -> timer:interval(2 sec) -> c=S(kind = 'C')"
    # C@1 is too early; at C@2 the timer fires first, then C@2 is the c
    assert run(run_epl, pattern, events("A@0 C@1 C@2 A@3 C@10")) == [(0, "02"), (3, "10")]


def test_chained_timers_fire_in_passes_and_within_still_bounds(run_epl):
    pattern = ("every a=S(kind = 'A') -> timer:interval(1 sec) -> timer:interval(1 sec) -> "
               "c=S(kind = 'C')")
    assert run(run_epl, pattern, events("A@0 C@1.5 C@2 C@9")) == [(0, "02")]
    bounded = "every a=S(kind = 'A') -> timer:interval(20 sec) WITHIN 10 sec"
    assert run(run_epl, bounded, events("A@0 X@30")) == []
    assert run(run_epl, "every a=S(kind = 'A') -> timer:interval(5 sec) WITHIN 10 sec",
               events("A@0 X@30")) == [(0, "30")]


def test_not_at_the_end_of_an_and_with_an_event(run_epl):
    pattern = "every a=S(kind = 'A') -> (c=S(kind = 'C') and not b=S(kind = 'B'))"
    assert run(run_epl, pattern, events("A@0 C@1 A@2 B@3 C@4")) == [(0, "01")]


@pytest.mark.parametrize(("pattern", "message"), [
    ("every timer:interval(1 sec)", "would fire without events"),
    ("a=S -> not timer:interval(1 sec)", "not supported inside 'not'"),
    ("[2] (a=S -> timer:interval(1 sec))", "not supported inside 'not' or a repeat"),
    ("a=S -> timer:interval(a.v)", "unknown stream, alias or tag"),
    ("a=S -> timer:interval(0 sec)", "positive duration"),
])
def test_misuse(pattern, message):
    with pytest.raises(RuleError, match=message):
        compile_text(SCHEMA + f"SELECT a.v AS av FROM PATTERN [{pattern}] PARTITION BY k;")
