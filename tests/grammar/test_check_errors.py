"""Semantic errors (names, types, aggregates, keys, time) are located RuleErrors.

Every file in ``tests/data/broken_semantic`` parses but must not check. Like the parse
error corpus, it starts with ``-- expect: L:C`` and ``-- says: text``; the positions were
read off the checker's output and reviewed by hand to sit on the offending name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

BROKEN = sorted((Path(__file__).parent.parent / "data" / "broken_semantic").glob("*.epl"))


def test_corpus_is_large_and_distinct() -> None:
    assert len(BROKEN) >= 40
    bodies = [p.read_text().split("\n", 2)[2] for p in BROKEN]
    assert len(set(bodies)) == len(bodies)


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_semantic_error_is_located(path: Path) -> None:
    text = path.read_text()
    m = re.match(r"-- expect: (\d+):(\d+)\n-- says: (.*)\n", text)
    assert m
    with pytest.raises(RuleError) as info:
        compile_text(text, str(path))
    err = info.value
    line, column = int(m[1]), int(m[2])
    head, source_line, caret_line, *hint = err.render().splitlines()
    assert head == f"{path}:{line}:{column}: error: {err.message}"
    assert source_line == f"{line:>4} | " + text.split("\n")[line - 1]
    assert caret_line.index("^") == len(f"{line:>4} | ") + column - 1
    assert hint == ([f"  hint: {err.hint}"] if err.hint else [])
    # in the message or its hint, not merely in the source line the rendering repeats
    assert m[3] in err.message or m[3] in (err.hint or "")


def test_set_override_checks_name_and_type() -> None:
    text = "CREATE VARIABLE int n = 1;"
    assert compile_text(text, overrides={"n": "5"}).variables["n"].value == 5
    with pytest.raises(RuleError, match="unknown variable 'm'"):
        compile_text(text, overrides={"m": "5"})
    with pytest.raises(RuleError, match="not a valid int"):
        compile_text(text, overrides={"n": "five"})


def test_every_example_rule_checks() -> None:
    from grammar.compile import compile_file

    rules = Path(__file__).parent.parent.parent / "rules"
    checked = {path.stem: compile_file(path) for path in sorted(rules.glob("*.epl"))}
    assert {name: ([r.name for r in m.derived], [r.name for r in m.stateful], m.outputs)
            for name, m in checked.items()} == {
        "busy_topic": ([], ["busy_topic"], ("busy_topic",)),
        "delay_streak": ([], ["delay_streak"], ("delay_streak",)),
        "fsd": (["rule1"], ["first_story"], ("first_story",)),
        "fsd_listing1": (["rule1"], ["first_story"], ("first_story",)),
        "sensor_average": ([], ["overheating"], ("overheating",)),
    }
