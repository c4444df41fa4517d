"""cep's pytest plugin: fixtures for testing rules, and event diffs in assertion failures.

Registered as the ``pytest11`` entry point ``cep`` (pyproject.toml), so pytest loads it
wherever cep is installed; ``pytest -p cep.testing.plugin`` loads it by hand. It imports
only pytest until a fixture or a failing comparison needs cep.testing, so that a test
run that never uses it pays nothing for it.

* ``cep_harness``: ``cep_harness(rules, set=…, udf=…)`` makes a
  :class:`cep.testing.RuleHarness`, closed when the test ends.
* ``cep_run_dir``: a temporary run directory (``--checkpoint``) for the test.
* ``assert events == events_approx(expected, rel=…)`` failing shows which events are
  missing and which extra, grouped by rule and key (``pytest_assertrepr_compare``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def cep_harness() -> Iterator[Callable[..., Any]]:
    """A factory of :class:`cep.testing.RuleHarness` (its arguments), each closed at the
    end of the test."""
    from cep.testing.harness import RuleHarness

    made: list[RuleHarness] = []

    def make(rules: Any, **options: Any) -> RuleHarness:
        harness = RuleHarness(rules, **options)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()


@pytest.fixture
def cep_run_dir(tmp_path: Path) -> Path:
    """A run directory for the test's run (``checkpoint=``), removed with ``tmp_path``."""
    path = tmp_path / "cep-run"
    path.mkdir()
    return path


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object,
                              right: object) -> list[str] | None:
    """``events == events_approx(...)`` that failed: the events' diff, not two reprs."""
    compare = sys.modules.get("cep.testing.compare")
    if compare is None or op != "==":
        return None
    approx, actual = (right, left) if isinstance(right, compare.EventsApprox) else (left, right)
    if not isinstance(approx, compare.EventsApprox):
        return None
    return [f"events == {approx!r}", *approx.diff(actual).report().splitlines()]
