"""``rules/<name>.epl`` resolves to the rule files shipped with cep when the current
directory has none, so the README's headline command works from any directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from grammar.compile import bundled_rule, compile_file
from grammar.errors import RuleError

ROOT = Path(__file__).parent.parent.parent


def test_shipped_rules_are_found_from_another_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for path in sorted((ROOT / "rules").glob("*.epl")):
        shipped = bundled_rule(Path("rules") / path.name)
        assert shipped is not None and shipped.read_text() == path.read_text()
        assert compile_file(f"rules/{path.name}").outputs == \
            compile_file(path).outputs


def test_a_local_file_wins_over_the_shipped_one(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "fsd.epl").write_text("this is not a rule")
    with pytest.raises(RuleError) as err:
        compile_file("rules/fsd.epl")
    assert err.value.source_name == "rules/fsd.epl"
    assert err.value.message == ("unexpected name 'this', expected one of: ';', '@', CREATE, "
                                 "INSERT, SELECT or end of input")


def test_only_rules_names_fall_back(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert bundled_rule(Path("elsewhere/fsd.epl")) is None
    assert bundled_rule(Path("rules/no_such_rule.epl")) is None
    with pytest.raises(RuleError, match=r"no such rule file: rules/no_such_rule\.epl"):
        compile_file("rules/no_such_rule.epl")
