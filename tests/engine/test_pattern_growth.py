"""Pattern state stays bounded: what WITHIN bounds is dropped, what nothing bounds is refused.

``every x`` over an x that can match more than once (``every every a``,
``every (a -> every b)``) gains an instance at each match and never drops one, even under
WITHIN (an expired instance is restarted), so the rule language refuses it, naming the
``every`` (tests/grammar/test_check_errors.py has the located diagnostics). Every other form
that accumulates (``every a -> every b``, pending ``every a -> b``, the stored completions of
``every a and every b``) drops what WITHIN expires: over 100k events of one key its state
stays the size one WITHIN of events leaves.
"""

from __future__ import annotations

import pytest

from cep.engine.patterns import nodes as pattern_nodes
from cep.engine.patterns.interpreter import compile_pattern
from cep.engine.patterns.nodes import (
    And,
    Atom,
    Every,
    FollowedBy,
    Not,
    Or,
    Repeat,
)
from grammar.compile import compile_text
from grammar.errors import RuleError

SCHEMA = "CREATE SCHEMA T (k string, x long, ts timestamp) TIMESTAMP ts;\n"
WITHIN = 30  # µs; one event per µs, so about 30 events are ever inside WITHIN


def atom(tag: str, stream: str) -> Atom:
    return Atom(tag, stream)


def state_size(node: object) -> int:
    """Containers and events in a pattern state: grows with every instance it holds."""
    if isinstance(node, pattern_nodes.Event):
        return 1
    if isinstance(node, dict):
        return 1 + sum(state_size(v) for v in node.values())
    if isinstance(node, list | tuple):
        return 1 + sum(state_size(v) for v in node)
    return 0


def sizes_over(node: pattern_nodes.PatternNode, n: int, every: int) -> list[int]:
    """State size after each ``every`` events of A, B, C, A, B, C, ... one µs apart."""
    pattern = compile_pattern(node, WITHIN)
    state = pattern.new_state()
    out = []
    for i in range(n):
        pattern.feed(state, pattern_nodes.Event(i, i, "ABC"[i % 3], {}))
        if i % every == every - 1:
            out.append(state_size(state.root))
    return out


BOUNDED_BY_WITHIN = {
    "every a -> every b": FollowedBy(Every(atom("a", "A")), Every(atom("b", "B"))),
    "every a -> b": FollowedBy(Every(atom("a", "A")), atom("b", "D")),  # no D: never ends
    "every a and every b": And(Every(atom("a", "A")), Every(atom("b", "B"))),
    "every a -> (b or every c)": FollowedBy(Every(atom("a", "A")),
                                           Or(atom("b", "D"), Every(atom("c", "C")))),
    "every (a -> b -> c)": Every(FollowedBy(FollowedBy(atom("a", "A"), atom("b", "B")),
                                            atom("c", "C"))),
    "every [2] (every a)": Every(Repeat(2, Every(atom("a", "A")))),
    "every (a and not every b)": Every(And(atom("a", "A"), Not(Every(atom("b", "D"))))),
}


@pytest.mark.parametrize("name", list(BOUNDED_BY_WITHIN))
def test_within_drops_expired_instances_over_100k_events(name: str) -> None:
    sizes = sizes_over(BOUNDED_BY_WITHIN[name], 100_000, 10_000)
    assert max(sizes[5:]) <= max(sizes[:5]), sizes  # no growth after the first 50k
    assert max(sizes) < 40 * WITHIN


def test_without_within_the_same_forms_do_accumulate() -> None:
    """What the test above shows WITHIN to bound is real growth without it."""
    pattern = compile_pattern(BOUNDED_BY_WITHIN["every a -> every b"])
    state = pattern.new_state()
    for i in range(3_000):
        pattern.feed(state, pattern_nodes.Event(i, i, "ABC"[i % 3], {}))
    assert state_size(state.root) > 2_000


REFUSED = {
    "every every a": (Every(Every(atom("a", "A"))), "every every a=T"),
    "every (a -> every b)": (Every(FollowedBy(atom("a", "A"), Every(atom("b", "B")))),
                             "every (a=T(x = 1) -> every b=T(x = 2))"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_forms_grow_even_with_within(name: str) -> None:
    """Why WITHIN is no excuse: an instance that expires under ``every`` is restarted."""
    sizes = sizes_over(REFUSED[name][0], 3 * 15, 15)  # the last 15 come after WITHIN
    assert sizes[2] > 20 * sizes[1] > 400 * sizes[0] > 0


@pytest.mark.parametrize("name", list(REFUSED))
@pytest.mark.parametrize("bound", ["", " WITHIN 1 min", "TTL"])
def test_refused_forms_are_rule_errors_whatever_bounds_them(name: str, bound: str) -> None:
    text = REFUSED[name][1]
    rule = SCHEMA + (f"SELECT a.x AS x FROM PATTERN [{text}{'' if bound == 'TTL' else bound}] "
                     "PARTITION BY k;")
    with pytest.raises(RuleError, match="grows without bound") as info:
        compile_text(rule, "r.epl", state_ttl_us=60_000_000 if bound == "TTL" else None)
    assert info.value.render().startswith("r.epl:2:31: error: 'every' over a pattern")
