"""``cep.testing`` and its pytest plugin: the comparison of events and its message, the
harness against a run of the same input, assert_strategies_equal catching a strategy
that breaks the events (and one that moves nothing), the plugin's entry point, and the
guide's worked example, passing as written and failing, naming the events, once its rule
is changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pandas as pd
import pytest

from cep.testing import (
    BadEvents,
    EventStream,
    RuleHarness,
    assert_events_equal,
    assert_strategies_equal,
    diff_events,
    events_approx,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "testing"
RULES = EXAMPLE / "sensors.epl"
s = EventStream()


def _pytest(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """pytest in a process of its own, with this tree's cep first on its path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # an installed cep's entry point loads the plugin; naming it too would register it twice
    installed = any(e.name == "cep" for e in entry_points(group="pytest11"))
    by_hand = [] if installed else ["-p", "cep.testing.plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *by_hand,
                           "-p", "no:cacheprovider", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


# ------------------------------------------------------------------ comparing events

def test_events_compare_as_multisets_on_the_fields_expected() -> None:
    actual = pd.DataFrame([{"rule": "r", "key": "b", "seq": 9, "n": 2},
                           {"rule": "r", "key": "a", "seq": 3, "n": 1}])
    assert_events_equal(actual, [{"rule": "r", "key": "a", "n": 1},
                                 {"rule": "r", "key": "b", "n": 2}])  # no seq: not compared
    with pytest.raises(AssertionError, match="another order"):
        assert_events_equal(actual, [{"key": "a"}, {"key": "b"}], ordered=True)


def test_floats_are_equal_only_within_a_tolerance_asked_for() -> None:
    actual = [{"rule": "r", "key": "a", "avg": 30.833333333}]
    with pytest.raises(AssertionError):
        assert_events_equal(actual, [{"rule": "r", "key": "a", "avg": 30.83}])
    assert_events_equal(actual, [{"rule": "r", "key": "a", "avg": 30.83}], abs=0.01)
    assert_events_equal(actual, [{"rule": "r", "key": "a", "avg": 30.83}], rel=1e-3)


def test_timestamps_compare_as_instants_however_written() -> None:
    actual = [{"ts": pd.Timestamp("2026-03-01T12:00:00Z")}]
    assert_events_equal(actual, [{"ts": "2026-03-01T12:00:00Z"}])
    assert_events_equal(actual, [{"ts": pd.Timestamp("2026-03-01 13:00", tz="Europe/Paris")}])


def test_the_message_groups_by_rule_and_key_and_shows_the_first_few() -> None:
    actual = [{"rule": "r", "key": "a", "n": i} for i in range(8)]
    expected = [{"rule": "r", "key": "a", "n": i} for i in range(1, 9)]
    expected.append({"rule": "q", "key": "z", "n": 0})
    with pytest.raises(AssertionError) as failed:
        assert_events_equal(actual, expected, shown=1)
    message = str(failed.value)
    assert message.splitlines()[0] == ("events differ: 2 missing, 1 extra (9 expected, "
                                       "8 actual; compared on rule, key, n)")
    assert "rule q, key 'z': 1 missing\n  missing: n=0" in message
    assert "rule r, key 'a': 1 missing, 1 extra\n  missing: n=8\n  extra:   n=0" in message
    assert not diff_events(actual, actual)


def test_events_approx_fails_with_the_diff_under_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_approx.py").write_text(
        "from cep.testing import events_approx\n"
        "def test_it():\n"
        "    assert [{'rule': 'r', 'key': 'a', 'n': 2}] == events_approx(\n"
        "        [{'rule': 'r', 'key': 'a', 'n': 3}])\n")
    assert events_approx([{"n": 1.05}], abs=0.1) == [{"n": 1.0}]
    done = _pytest(str(tmp_path / "test_approx.py"), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "rule r, key 'a': 1 missing, 1 extra" in done.stdout
    assert "missing: n=3" in done.stdout


# ------------------------------------------------------------------ the harness

def test_the_harness_gives_a_run_s_events_step_by_step() -> None:
    with RuleHarness(RULES, set={"limit": 30}) as h:
        first = h.send([s.at("0s", sensor="s1", temp=31.0), s.at("10s", sensor="s2", temp=1.0)])
        assert first["rule"].tolist() == ["hot"]
        assert h.watermark == s.time("10s")
        assert h.advance_watermark(to=s.time("5 min")).rule.tolist() == ["silent"]
        h.send([s.at("6 min", sensor="s1", temp=35.0)])
        assert h.end_input().rule.tolist() == ["silent"]  # all time passed
        assert len(h.steps) == 4
        # the same input as one run, seq included
        assert_events_equal(h.replay(runner="local"), h.events, ordered=True)
        with pytest.raises(RuntimeError, match="the input has ended"):
            h.send([s.at("7 min", sensor="s1", temp=1.0)])


def test_the_harness_says_what_it_cannot_do() -> None:
    with RuleHarness(RULES) as h:
        with pytest.raises(ValueError, match="no watermark yet"):
            h.advance_watermark(by="1 min")
        with pytest.raises(BadEvents, match="temp"):
            h.send([{"sensor": "s1", "ts": s.time(0), "temp": "hot"}])
    with RuleHarness(RULES, dead_letters="keep") as h:
        assert h.send([{"sensor": "s1", "ts": s.time(0), "temp": "hot"}]).empty
        assert [d["kind"] for d in h.dead_letters] == ["wrong_type"]


# ------------------------------------------------------------------ strategies

def test_a_strategy_that_loses_moved_state_is_caught(monkeypatch) -> None:
    import cep.testing.strategies as strategies

    def lose_state(engines, now, after):  # the keys move, their state does not
        keys = 0
        for e, engine in enumerate(engines):
            for texts in strategies.by_owner(strategies.exports(e, now, after), after).values():
                engine.export_keys([strategies.json.loads(t) for t in texts])
                keys += len(texts)
        return keys, 0

    monkeypatch.setattr(strategies, "_hand_over", lose_state)
    readings = s.every("1s", [f"s{i}" for i in range(30)] + ["s0"] * 20, n=1500,
                       key="sensor", temp=lambda i: 25 + (i * 7919 % 100) / 10)
    with pytest.raises(AssertionError, match=r"dlb-h changed the events \(\d+ keys moved\)"
                       ) as failed:
        assert_strategies_equal(RULES, readings, strategies=["dlb-h"], engines=3,
                                batch_size=100)
    assert "rule hot, key" in str(failed.value)


def test_a_strategy_that_moved_no_key_fails_rather_than_passing() -> None:
    readings = s.every("1s", ["s1", "s2"], n=10, key="sensor", temp=31.0)
    with pytest.raises(AssertionError, match="dlb-h moved no key"):
        assert_strategies_equal(RULES, readings, strategies=["dlb-h", "pkg"])


# ------------------------------------------------------------------ the plugin

def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"cep": "cep.testing.plugin"}
    assert "cep.testing" in project["tool"]["setuptools"]["packages"]
    import cep.testing.plugin as plugin

    assert callable(plugin.pytest_assertrepr_compare)


def test_importing_cep_testing_loads_no_spark() -> None:
    code = ("import sys, cep.testing, cep.testing.plugin; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------ the worked example

def test_the_guide_s_worked_example_passes() -> None:
    done = _pytest(str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


@pytest.mark.parametrize(("before", "after", "named"), [
    ("#time(1 min)", "#time(2 min)",  # the window: 0s and 20s are still in it at 90s
     "extra:   ts=2026-03-01T12:01:30Z, n=3, avg_temp=30.8333"),
    ("double limit = 30.0", "double limit = 31.0",  # the threshold: 31 is no longer above
     "missing: ts=2026-03-01T12:00:20Z, n=2, avg_temp=31.0"),
])
def test_a_changed_rule_fails_the_example_naming_the_events(tmp_path: Path, before: str,
                                                            after: str, named: str) -> None:
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    rules = copy / "sensors.epl"
    text = rules.read_text()
    assert before in text
    rules.write_text(text.replace(before, after))
    done = _pytest(str(copy / "test_sensors.py"), "-k", "hot_while", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "rule hot, key 's1'" in done.stdout
    assert named in done.stdout
