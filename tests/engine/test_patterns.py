"""Pattern matcher semantics (cep.engine.patterns.interpreter), pinned on hand-checked event lists.

The two differential tests at the end name their oracles: the state round trip compares
the interpreter with itself (shared code; the codec is what it checks), the brute-force
test compares it with plain enumerations that share no code (three shapes). Both bound
the share of examples that compare empty outputs (they drew inputs of 0 events: 67% and
79% were empty; now at least 10 events).

Events are written as tokens: ``A1`` is an event of stream ``A`` named ``A1`` (ts = its
position unless given as ``A1@ts``); a match prints as ``a=A1 b=B3`` (tags sorted, lists as
``a=[A1,A2]``).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import bounded, note

from cep.engine import codec
from cep.engine.patterns.interpreter import Match, Pattern, PatternState, compile_pattern
from cep.engine.patterns.nodes import (
    And,
    Atom,
    Event,
    Every,
    FollowedBy,
    Not,
    Or,
    PatternNode,
    Repeat,
)


def events(spec: str) -> list[Event]:
    """``"A1 B1@7 C1"`` -> events; the stream is the token's first letter."""
    out = []
    for seq, token in enumerate(spec.split()):
        name, _, ts = token.partition("@")
        out.append(Event(seq, int(ts) if ts else seq, name[0], {"name": name}))
    return out


def fmt(m: Match) -> str:
    parts = []
    for tag in sorted(m.bindings):
        v = m.bindings[tag]
        shown = "[" + ",".join(e.row["name"] for e in v) + "]" if isinstance(v, list) \
            else v.row["name"]
        parts.append(f"{tag}={shown}")
    return " ".join(parts)


def run_keeping_state(pattern: PatternNode | Pattern, evs: list[Event],
                      within: int | None = None) -> tuple[list[str], PatternState]:
    """The matches of one key's events, and the key's state after them."""
    cp = pattern if isinstance(pattern, Pattern) else compile_pattern(pattern, within)
    state = cp.new_state()
    return [fmt(m) for e in evs for m in cp.feed(state, e)], state


def run(pattern: PatternNode | Pattern, evs: list[Event], within: int | None = None
        ) -> list[str]:
    return run_keeping_state(pattern, evs, within)[0]


def handed_over(state: PatternState) -> PatternState:
    """The state as another engine receives it: written and read in the codec's format,
    as the parcels ``Engine.export_keys`` writes hold it."""
    back = codec.decode(codec.encode(state, "keys"), "keys", "pattern state")
    assert type(back) is PatternState
    return back


def a(pred=None) -> Atom:
    return Atom("a", "A", pred)


def b(pred=None) -> Atom:
    return Atom("b", "B", pred)


def c(pred=None) -> Atom:
    return Atom("c", "C", pred)


# --------------------------------------------------------------------------- every / ->

# Source: Esper reference documentation, "Pattern Operators: every" (section 7.5.1 in the
# 5.x-8.x manuals), the table for the event sequence A1 B1 C1 B2 A2 D1 A3 B3 E1 A4 F1 B4.
ESPER_SEQUENCE = "A1 B1 C1 B2 A2 D1 A3 B3 E1 A4 F1 B4"
ESPER_EVERY_TABLE = [
    ("every (A -> B)", Every(FollowedBy(a(), b())),
     ["a=A1 b=B1", "a=A2 b=B3", "a=A4 b=B4"]),
    ("every A -> B", FollowedBy(Every(a()), b()),
     ["a=A1 b=B1", "a=A2 b=B3", "a=A3 b=B3", "a=A4 b=B4"]),
    ("A -> every B", FollowedBy(a(), Every(b())),
     ["a=A1 b=B1", "a=A1 b=B2", "a=A1 b=B3", "a=A1 b=B4"]),
    ("every A -> every B", FollowedBy(Every(a()), Every(b())),
     ["a=A1 b=B1", "a=A1 b=B2", "a=A1 b=B3", "a=A2 b=B3", "a=A3 b=B3",
      "a=A1 b=B4", "a=A2 b=B4", "a=A3 b=B4", "a=A4 b=B4"]),
]


@pytest.mark.parametrize(("text", "pattern", "expected"), ESPER_EVERY_TABLE,
                         ids=[t for t, _, _ in ESPER_EVERY_TABLE])
def test_esper_every_table(text: str, pattern: PatternNode, expected: list[str]) -> None:
    assert run(pattern, events(ESPER_SEQUENCE)) == expected


def test_followed_by_without_every_matches_once_then_is_exhausted() -> None:
    got, state = run_keeping_state(FollowedBy(a(), b()), events("A1 A2 B1 B2"))
    assert got == ["a=A1 b=B1"]
    assert state.root is None


def test_every_a_pairs_each_a_with_first_b_after_it() -> None:
    assert run(FollowedBy(Every(a()), b()), events("A1 A2 B1 B2")) == \
        ["a=A1 b=B1", "a=A2 b=B1"]


def test_every_of_followed_by_restarts_only_after_completion() -> None:
    assert run(Every(FollowedBy(a(), b())), events("A1 A2 B1 A3 B2")) == \
        ["a=A1 b=B1", "a=A3 b=B2"]


def test_a_then_every_b() -> None:
    assert run(FollowedBy(a(), Every(b())), events("A1 B1 B2")) == ["a=A1 b=B1", "a=A1 b=B2"]


def test_every_a_then_every_b() -> None:
    assert run(FollowedBy(Every(a()), Every(b())), events("A1 B1 A2 B2")) == \
        ["a=A1 b=B1", "a=A1 b=B2", "a=A2 b=B2"]


def test_b_strictly_after_a_and_same_event_plays_roles_in_different_instances() -> None:
    positive = lambda e, _b: e.row["x"] > 0  # noqa: E731
    p = FollowedBy(Every(Atom("a", "A", positive)), Atom("b", "A", positive))
    evs = [Event(i, i, "A", {"name": f"A{i + 1}", "x": 1}) for i in range(3)]
    assert run(p, evs) == ["a=A1 b=A2", "a=A2 b=A3"]


def test_predicate_sees_earlier_tags() -> None:
    greater = lambda e, bs: e.row["v"] > bs["a"].row["v"]  # noqa: E731
    p = FollowedBy(Every(Atom("a", "X")), Atom("b", "X", greater))
    evs = [Event(i, i, "X", {"name": f"X{v}", "v": v}) for i, v in enumerate([5, 3, 4, 9])]
    # 5 waits for 9; 3 takes 4; 4 takes 9; 9 waits.
    assert run(p, evs) == ["a=X3 b=X4", "a=X5 b=X9", "a=X4 b=X9"]


def test_three_step_chain_and_untagged_atoms() -> None:
    p = FollowedBy(FollowedBy(Every(Atom(None, "A")), b()), c())
    assert run(p, events("A1 B1 A2 B2 C1 C2")) == ["b=B1 c=C1", "b=B2 c=C1"]


def test_matches_of_one_event_are_ordered_by_first_event() -> None:
    # B3 completes three instances; they come out by the seq of their a.
    p = FollowedBy(Every(a()), Every(b()))
    assert run(p, events("A1 A2 B1 A3 B2"))[-3:] == ["a=A1 b=B2", "a=A2 b=B2", "a=A3 b=B2"]


def test_every_keeps_a_still_running_operand_and_restarts_it_too() -> None:
    # Esper's EvalEveryStateNode: a completion of a non-filter operand spawns a fresh
    # operand even if the completed one keeps running, so matches can repeat.
    p = Every(FollowedBy(a(), Every(b())))
    assert run(p, events("A1 B1 B2 A2 B3")) == \
        ["a=A1 b=B1", "a=A1 b=B2", "a=A1 b=B3", "a=A2 b=B3", "a=A2 b=B3"]


# --------------------------------------------------------------------------- and / or / not


def test_and_any_order_completes_once() -> None:
    assert run(And(a(), b()), events("B1 A1 A2 B2")) == ["a=A1 b=B1"]
    assert run(And(a(), b()), events("A1 A2 B1")) == ["a=A1 b=B1"]
    _, state = run_keeping_state(And(a(), b()), events("A1 B1"))
    assert state.root is None


def test_every_and() -> None:
    assert run(Every(And(a(), b())), events("A1 B1 B2 A2 A3 B3")) == \
        ["a=A1 b=B1", "a=A2 b=B2", "a=A3 b=B3"]


def test_and_with_every_operand_combines_with_remembered_completions() -> None:
    # Esper: (every a) and b -> all a's seen so far pair with b, later a's pair with it too.
    assert run(And(Every(a()), b()), events("A1 A2 B1 A3")) == \
        ["a=A1 b=B1", "a=A2 b=B1", "a=A3 b=B1"]


def test_one_event_binds_one_operand_of_an_and() -> None:
    p = And(Atom("a", "A"), Atom("b", "A"))
    assert run(p, events("A1 A2 A3")) == ["a=A1 b=A2"]


def test_or_completes_on_first_of_either_then_done() -> None:
    got, state = run_keeping_state(Or(a(), b()), events("C1 B1 A1 B2"))
    assert got == ["b=B1"]
    assert state.root is None


def test_or_with_every_operand_emits_until_the_other_completes() -> None:
    assert run(Or(a(), Every(b())), events("B1 B2 A1 B3")) == ["b=B1", "b=B2", "a=A1"]


def test_and_combines_every_completion_of_an_operand_that_ends_on_the_same_event() -> None:
    # C1 completes the or twice: through the running `every x` and through `y`, which ends it.
    p = And(b(), Or(Every(Atom("x", "C")), Atom("y", "C")))
    assert run(p, events("B1 C1 C2")) == ["b=B1 x=C1", "b=B1 y=C1"]


def test_or_same_event_leftmost_operand_wins() -> None:
    assert run(Or(Atom("x", "A"), Atom("y", "A")), events("A1 A2")) == ["x=A1"]


def test_every_or_then_followed_by() -> None:
    p = FollowedBy(Every(Or(a(), b())), c())
    assert run(p, events("A1 B1 C1")) == ["a=A1 c=C1", "b=B1 c=C1"]


def test_not_kills_the_instance() -> None:
    p = FollowedBy(Every(a()), And(b(), Not(c())))
    assert run(p, events("A1 C1 B1 A2 B2 A3 C2 B3")) == ["a=A2 b=B2"]


def test_not_wins_when_one_event_satisfies_both() -> None:
    big = lambda e, _b: e.row["x"] > 5  # noqa: E731
    p = FollowedBy(Every(Atom("a", "A")), And(Atom("b", "X"), Not(Atom("c", "X", big))))
    evs = [Event(0, 0, "A", {"name": "A1"}), Event(1, 1, "X", {"name": "X9", "x": 9}),
           Event(2, 2, "A", {"name": "A2"}), Event(3, 3, "X", {"name": "X1", "x": 1})]
    assert run(p, evs) == ["a=A2 b=X1"]


def test_every_restarts_an_operand_that_became_false() -> None:
    p = Every(And(FollowedBy(a(), b()), Not(c())))
    assert run(p, events("A1 C1 B1 A2 B2")) == ["a=A2 b=B2"]
    # The fresh instance starts after C1: B1 alone completes nothing.
    assert run(Every(And(b(), Not(c()))), events("B1 C1 B2")) == ["b=B1", "b=B2"]


@pytest.mark.parametrize("pattern", [
    Not(a()),
    FollowedBy(a(), Not(b())),
    Every(Not(a())),
    Or(a(), Not(b())),
    And(Not(a()), Not(b())),
])
def test_not_placement_is_checked(pattern: PatternNode) -> None:
    with pytest.raises(ValueError, match="not"):
        compile_pattern(pattern)


def test_compile_numbers_nodes_in_pre_order() -> None:
    cp = compile_pattern(FollowedBy(Every(a()), And(b(), Not(c()))))
    assert [type(n).__name__ for n in cp.nodes] == \
        ["FollowedBy", "Every", "Atom", "And", "Atom", "Not", "Atom"]
    assert [n.node_id for n in cp.nodes] == list(range(7))
    assert cp.root is cp.nodes[0]


def test_invalid_patterns_are_rejected() -> None:
    with pytest.raises(ValueError, match="bound more than once"):
        compile_pattern(FollowedBy(a(), Atom("a", "B")))
    with pytest.raises(ValueError, match="repeat count"):
        compile_pattern(Repeat(0, a()))
    with pytest.raises(ValueError, match="WITHIN"):
        compile_pattern(a(), within_us=0)
    with pytest.raises(TypeError, match="not a pattern node: 'A'"):
        compile_pattern("A")  # type: ignore[arg-type]
    # Alternatives of an or may share a tag.
    p = Every(Or(Atom("x", "A"), Atom("x", "B")))
    assert run(p, events("A1 B1")) == ["x=A1", "x=B1"]


# --------------------------------------------------------------------------- repeat


def test_repeat_binds_lists_in_match_order() -> None:
    assert run(Repeat(3, a()), events("A1 B1 A2 A3 A4")) == ["a=[A1,A2,A3]"]


def test_every_repeat_gives_consecutive_groups() -> None:
    assert run(Every(Repeat(2, a())), events("A1 A2 A3 A4 A5")) == ["a=[A1,A2]", "a=[A3,A4]"]


def test_repeat_of_followed_by_and_repeat_then_followed_by() -> None:
    assert run(Repeat(2, FollowedBy(a(), b())), events("A1 A2 B1 A3 B2")) == \
        ["a=[A1,A3] b=[B1,B2]"]
    assert run(FollowedBy(Every(Repeat(2, a())), b()), events("A1 A2 A3 B1 A4 B2")) == \
        ["a=[A1,A2] b=B1", "a=[A3,A4] b=B2"]


def test_repeat_tag_not_bound_in_an_iteration_is_an_empty_list() -> None:
    assert run(Repeat(2, Or(a(), b())), events("B1 B2")) == ["a=[] b=[B1,B2]"]


def test_nested_repeat_flattens_into_one_list() -> None:
    assert run(Repeat(2, Repeat(2, a())), events("A1 A2 A3 A4")) == ["a=[A1,A2,A3,A4]"]


def test_predicate_inside_repeat_sees_the_current_iteration() -> None:
    same = lambda e, bs: e.row["name"][1] == bs["a"].row["name"][1]  # noqa: E731
    p = Repeat(2, FollowedBy(a(), Atom("b", "B", same)))
    assert run(p, events("A1 B2 B1 A2 B2")) == ["a=[A1,A2] b=[B1,B2]"]


# --------------------------------------------------------------------------- WITHIN

T = 10


def test_within_is_exclusive() -> None:
    p = FollowedBy(a(), b())
    assert run(p, events(f"A1@0 B1@{T}"), within=T) == []
    assert run(p, events(f"A1@0 B1@{T - 1}"), within=T) == ["a=A1 b=B1"]
    _, state = run_keeping_state(p, events(f"A1@0 C1@{T}"), within=T)
    assert state.root is None  # discarded by the unrelated event at exactly T


def test_within_discards_before_the_event_is_considered() -> None:
    p = FollowedBy(FollowedBy(Every(a()), b()), c())
    evs = events(f"A1@0 B1@3 A2@5 B2@6 C1@{T}")
    # C1 at exactly T: A1's instance is gone before C1 is looked at; A2's clock started at 5.
    assert run(p, evs, within=T) == ["a=A2 b=B2 c=C1"]
    assert run(p, evs, within=T + 1) == ["a=A1 b=B1 c=C1", "a=A2 b=B2 c=C1"]


def test_each_a_starts_its_own_clock() -> None:
    p = FollowedBy(FollowedBy(Every(a()), b()), c())
    evs = events("A1@0 A2@6 B1@7 C1@12")
    assert run(p, evs, within=T) == ["a=A2 b=B1 c=C1"]
    assert run(p, evs, within=T + 3) == ["a=A1 b=B1 c=C1", "a=A2 b=B1 c=C1"]


def test_untagged_first_event_starts_the_clock() -> None:
    p = FollowedBy(Every(Atom(None, "A")), b())
    assert run(p, events(f"A1@0 B1@{T}"), within=T) == []
    assert run(p, events(f"A1@0 B1@{T - 1}"), within=T) == ["b=B1"]


def test_expired_operand_of_every_restarts_in_time_to_see_the_event() -> None:
    # A1's a->b instance runs out at ts 10; the restart happens "before" A2 (ts 12), so A2
    # starts the next instance.
    p = Every(FollowedBy(a(), b()))
    assert run(p, events("A1@0 A2@12 B1@15"), within=T) == ["a=A2 b=B1"]


def test_within_and_drops_expired_remembered_completions() -> None:
    p = Every(And(a(), b()))
    assert run(p, events("A1@0 B1@12 A2@13"), within=T) == ["a=A2 b=B1"]
    assert run(And(Every(a()), b()), events("A1@0 A2@5 B1@11"), within=T) == ["a=A2 b=B1"]


def test_within_repeat_clock_starts_at_first_iteration() -> None:
    p = Every(Repeat(2, a()))
    assert run(p, events(f"A1@0 A2@{T} A3@{T + 1}"), within=T) == ["a=[A2,A3]"]


def test_ties_in_timestamp_keep_sequence_order() -> None:
    p = FollowedBy(Every(a()), b())
    assert run(p, events("A1@5 B1@5"), within=T) == ["a=A1 b=B1"]
    assert run(p, events("B1@5 A1@5")) == []


def test_backwards_timestamps() -> None:
    p = FollowedBy(Every(a()), b())
    # Only sequence order matters for matching; a negative span is within any T.
    assert run(p, events("A1@100 B1@50"), within=T) == ["a=A1 b=B1"]
    # An event far ahead discards the instance even if later events go back in time.
    assert run(p, events("A1@0 C1@20 B1@5"), within=T) == []


def test_state_stays_bounded_with_within() -> None:
    p = FollowedBy(FollowedBy(Every(a()), b()), c())
    cp = compile_pattern(p, within_us=50)
    state = cp.new_state()
    rnd = random.Random(7)
    sizes = []
    for i in range(20_000):
        cp.feed(state, Event(i, i, "AAAB"[rnd.randrange(4)], {}))  # no C ever arrives
        if i % 1000 == 999:
            sizes.append(len(codec.encode(state, "key")))
    assert max(sizes) < 2 * min(sizes)


# --------------------------------------------------------------------------- state handoff


def test_state_is_plain_data() -> None:
    """The state is written in the data-only codec (no pickle) and comes back equal."""
    p = FollowedBy(Every(a(lambda e, _b: True)), And(b(lambda e, bs: True), Not(c())))
    cp = compile_pattern(p, within_us=100)
    state = cp.new_state()
    for e in events("A1 A2 B1 A3"):
        cp.feed(state, e)
    blob = codec.encode(state, "key")
    assert blob.startswith(codec.MAGIC)
    assert handed_over(state).root == state.root


def test_state_of_another_pattern_is_refused() -> None:
    state = compile_pattern(FollowedBy(a(), b())).new_state()
    with pytest.raises(ValueError, match="different pattern"):
        compile_pattern(FollowedBy(b(), a())).feed(state, events("A1")[0])


def _x_gt(limit: int):
    return lambda e, _b: e.row["x"] > limit


ROUND_TRIP_PATTERNS: list[tuple[str, PatternNode, int | None]] = [
    ("every a -> b", FollowedBy(Every(a(_x_gt(2))), b()), None),
    ("every (a -> b)", Every(FollowedBy(a(), b())), None),
    ("a -> every b", FollowedBy(a(), Every(b())), None),
    ("every a -> every b", FollowedBy(Every(a()), Every(b(_x_gt(4)))), None),
    ("every a -> b -> c within", FollowedBy(FollowedBy(Every(a()), b()), c()), 6),
    ("every (a and b)", Every(And(a(), b())), None),
    ("every a and b within", And(Every(a()), b()), 8),
    ("every a -> (b and not c)", FollowedBy(Every(a()), And(b(), Not(c()))), None),
    ("every ((a -> b) and not c) within", Every(And(FollowedBy(a(), b()), Not(c()))), 6),
    ("every (a or b) -> c", FollowedBy(Every(Or(a(), b())), c()), None),
    ("a or every b", Or(a(_x_gt(6)), Every(b())), None),
    ("every [2] a -> b", FollowedBy(Every(Repeat(2, a())), b()), None),
    ("every [2] (a -> b) within", Every(Repeat(2, FollowedBy(a(), b()))), 7),
    ("every (a -> every b) within", Every(FollowedBy(a(), Every(b()))), 5),
]

event_streams = st.lists(
    st.tuples(st.sampled_from("ABC"), st.integers(-1, 4), st.integers(0, 9)),
    min_size=10, max_size=30,  # fewer events than 10 mostly match nothing
)


def _make(raw: list[tuple[str, int, int]]) -> list[Event]:
    out, ts = [], 0
    for seq, (stream, dt, x) in enumerate(raw):
        ts += dt
        out.append(Event(seq, ts, stream, {"name": f"{stream}{seq}", "x": x}))
    return out


def _key(m: Match) -> tuple:
    return (m.trigger.seq, tuple(sorted(
        (t, tuple(e.seq for e in v) if isinstance(v, list) else v.seq)
        for t, v in m.bindings.items())))


@settings(max_examples=100, deadline=None)
@given(raw=event_streams, data=st.data())
def _round_trip_at_any_split_gives_identical_matches(raw, data) -> None:
    """Oracle: the same interpreter fed the whole input with one state (shared code):
    what is checked is the codec (``handed_over``), not the matches."""
    evs = _make(raw)
    for name, node, within in ROUND_TRIP_PATTERNS:
        cp = compile_pattern(node, within)
        state = cp.new_state()
        expected = [_key(m) for e in evs for m in cp.feed(state, e)]
        note(expected, kind=name)
        # Hand the state over after every single event ...
        state = cp.new_state()
        got = []
        for e in evs:
            got += [_key(m) for m in cp.feed(state, e)]
            state = handed_over(state)
        assert got == expected, name
        # ... and at one random split point, continuing from the restored copy only.
        split = data.draw(st.integers(0, len(evs)), label=f"split {name}")
        state = cp.new_state()
        got = [_key(m) for e in evs[:split] for m in cp.feed(state, e)]
        restored = handed_over(state)
        got += [_key(m) for e in evs[split:] for m in cp.feed(restored, e)]
        assert got == expected, name


# --------------------------------------------------------------------------- brute force


def _each_a_with_first_b(evs: list[Event], is_b, ends=lambda e: False) -> list[tuple]:
    """every a=A -> b: each A with the first later event ``is_b(event, a)`` accepts,
    unless an event that ``ends`` the instance comes first."""
    found = []
    for i, ea in enumerate(evs):
        if ea.stream != "A":
            continue
        for e in evs[i + 1:]:
            if ends(e):
                break
            if is_b(e, ea):
                found.append((e.seq, ea.seq, (("a", ea.seq), ("b", e.seq))))
                break
    return [(trig, binds) for trig, _first, binds in sorted(found)]


def _brute_every_a_b(evs: list[Event]) -> list[tuple]:
    """every a=A -> b=B(x > a.x): each A with the first qualifying B after it."""
    return _each_a_with_first_b(evs, lambda e, ea: e.stream == "B" and e.row["x"] > ea.row["x"])


def _brute_every_a_b_c_within(evs: list[Event], t: int) -> list[tuple]:
    """every a -> b -> c WITHIN t: b is the first B after a, c the first C after b, and the
    instance dies at the first event (any stream) with ts - a.ts >= t."""
    found = []
    for i, ea in enumerate(evs):
        if ea.stream != "A":
            continue
        want, bound = "B", {"a": ea.seq}
        for e in evs[i + 1:]:
            if e.ts - ea.ts >= t:
                break
            if e.stream == want:
                bound[want.lower()] = e.seq
                if want == "C":
                    found.append((e.seq, ea.seq, tuple(sorted(bound.items()))))
                    break
                want = "C"
    return [(trig, binds) for trig, _first, binds in sorted(found)]


def _brute_not(evs: list[Event]) -> list[tuple]:
    """every a -> (b and not c): the first B or C after each A decides."""
    return _each_a_with_first_b(evs, lambda e, ea: e.stream == "B",
                                ends=lambda e: e.stream == "C")


@settings(max_examples=300, deadline=None)
@given(raw=event_streams, t=st.integers(3, 15))
def _matches_equal_brute_force_enumeration(raw, t) -> None:
    """Oracle: the brute-force enumerations above, plain Python over the event list that
    share no code with the interpreter (three pattern shapes only)."""
    evs = _make(raw)
    b_gt_a = Atom("b", "B", lambda e, bs: e.row["x"] > bs["a"].row["x"])
    cases = [
        (compile_pattern(FollowedBy(Every(a()), b_gt_a)), _brute_every_a_b(evs)),
        (compile_pattern(FollowedBy(FollowedBy(Every(a()), b()), c()), t),
         _brute_every_a_b_c_within(evs, t)),
        (compile_pattern(FollowedBy(Every(a()), And(b(), Not(c())))), _brute_not(evs)),
    ]
    for (cp, expected), kind in zip(cases, ("a b>a", "a b c within", "a (b and not c)"),
                                    strict=True):
        note(expected, kind=f"{kind} {'matches' if expected else 'empty'}")
        state = cp.new_state()
        assert [_key(m) for e in evs for m in cp.feed(state, e)] == expected


def test_round_trip_at_any_split_gives_identical_matches() -> None:
    with bounded("pattern round trip"):
        _round_trip_at_any_split_gives_identical_matches()


def test_matches_equal_brute_force_enumeration() -> None:
    with bounded("pattern brute force"):
        _matches_equal_brute_force_enumeration()
