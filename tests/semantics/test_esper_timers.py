"""``timer:interval`` in patterns and absence (``a -> (timer:interval(T) and not b)``),
hand-checked event by event. Event time is the watermark, which every input event moves
(whatever its key): a timer fires at the first event whose watermark reaches its
deadline, with the deadline as its time, and at the end of the input (semantics in
``cep.engine.patterns.interpreter`` and docs/semantics-event-time.md)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SCHEMA = "CREATE SCHEMA S (k string, ts timestamp, kind string, v int) TIMESTAMP ts;\n"


def events(spec, key="x"):
    """``"A@0 X@3"``: kind A at 0 s, kind X at 3 s; v is the event's position."""
    out = []
    for i, token in enumerate(spec.split()):
        kind, at = token.split("@")
        out.append(dict(k=key, ts=int(float(at) * 1000), kind=kind, v=i))
    return out


def run(run_epl, pattern, evs, select="a.v AS av", seq=False):
    rule = SCHEMA + f"SELECT {select} FROM PATTERN [{pattern}] PARTITION BY k;"
    out = run_epl(rule, evs)
    assert run_epl(rule, evs, batch_size=1) == out
    return [(r["av"], r["ts"][17:19], *([r["seq"]] if seq else [])) for r in out]


MISSED = "every a=S(kind = 'A') -> (timer:interval(5 sec) and not b=S(kind = 'B'))"


def test_missed_follow_up_fires_when_the_watermark_passes_the_deadline(run_epl):
    # A@0: no B by 5 s; the event at 6 s (index 2) moves the watermark past it: a match
    # at the deadline, reported at that event. A@7 is followed by B@9. A@21: X@26 is
    # exactly on time (the timer fires before the event is processed).
    assert run(run_epl, MISSED, events("A@0 X@3 X@6 A@7 B@9 X@20 A@21 X@26"), seq=True) == [
        (0, "05", 2), (6, "26", 7)]


def test_a_late_b_does_not_save_it_and_an_early_one_does(run_epl):
    # the watermark passes 5 s before the B at 8 s is processed: the timer fired first
    assert run(run_epl, MISSED, events("A@0 B@8")) == [(0, "05")]
    assert run(run_epl, MISSED, events("A@0 B@4.9 X@9")) == []


def test_the_events_of_other_keys_move_the_clock(run_epl):
    # y's event at 30 s moves the watermark past x's deadline: x's timer fires there
    # (x's own X@4 comes after it, late: it counts at the watermark, 30 s)
    evs = events("A@0", "x") + events("X@1 X@30", "y") + events("X@4", "x")
    assert run(run_epl, MISSED, evs, seq=True) == [(0, "05", 2)]


def test_the_end_of_the_input_fires_what_is_pending(run_epl):
    assert run(run_epl, MISSED, events("X@1 A@2"), seq=True) == [(1, "07", "end")]


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
               events("A@0 X@30")) == [(0, "05")]


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
