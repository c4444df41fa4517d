"""The notebook API: compile a rule file, run it over a DataFrame or a path."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import cep

DATA = Path(__file__).parent / "data"
RULES = Path(__file__).parent.parent / "rules"


def test_dataframe_and_path_give_the_same_events():
    rules = cep.compile_rules(RULES / "busy_topic.epl", set={"threshold": 4})
    frame = pd.read_json(DATA / "tweets_small.jsonl", lines=True)
    from_frame = rules.run(frame, runner="local")
    from_path = rules.run(str(DATA / "tweets_small.jsonl"), runner="local")
    assert len(from_frame) > 0
    pd.testing.assert_frame_equal(from_frame, from_path)
    assert list(from_frame.columns[:4]) == ["rule", "key", "seq", "ts"]
    assert str(from_frame["ts"].dtype) == "datetime64[ns, UTC]" or "UTC" in str(
        from_frame["ts"].dtype)
    assert rules.last_run.events == 80 and rules.last_run.outputs == len(from_frame)


def test_datetime_columns_and_bad_rows_are_handled():
    rules = cep.compile_rules(
        "CREATE SCHEMA S (k string, ts timestamp, v int) TIMESTAMP ts;\n"
        "SELECT k, sum(v) AS s FROM S#groupwin(k)#length(2);")
    frame = pd.DataFrame({"k": ["a", "a", "a"],
                          "ts": pd.to_datetime(["2026-01-01T00:00:00Z"] * 3),
                          "v": [1, None, 3]})
    out = rules.run(frame, runner="local")
    assert out["s"].tolist() == [1, 1, 3]
    bad = frame.assign(v=pd.Series([1, "x", 3], dtype=object))
    out = rules.run(bad, runner="local")
    assert rules.last_run.dead_lettered == 1 and len(out) == 2


def test_unknown_runner_is_refused():
    rules = cep.compile_rules(RULES / "busy_topic.epl")
    with pytest.raises(ValueError, match="runner"):
        rules.run(str(DATA / "tweets_small.jsonl"), runner="flink")
