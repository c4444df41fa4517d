"""Property: whatever rule text comes in, compiling it (parse + check) either succeeds or
raises RuleError with a file:line:col — never another exception, never a traceback.

Seeds are the complete example rule files (schemas included), so most mutants parse and
reach the checker's name, type, window, key and pattern logic."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.rule_edits import TOKEN, edit_tokens

from grammar.compile import compile_text
from grammar.errors import RuleError

EXAMPLES = [p.read_text() for p in sorted(
    (Path(__file__).parent.parent.parent / "rules").glob("*.epl"))]
SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated_example(draw: st.DrawFn) -> str:
    """An example rule file after one to three whole-token edits."""
    text = draw(st.sampled_from(EXAMPLES))
    for _ in range(draw(st.integers(1, 3))):
        text = edit_tokens(draw, TOKEN.findall(text))
    return text


@SETTINGS
@given(mutated_example())
def test_mutated_rules_compile_or_fail_cleanly(text: str) -> None:
    try:
        compile_text(text, "fuzz.epl")
    except RuleError as err:
        assert err.render().startswith("fuzz.epl:")
