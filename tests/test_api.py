"""The notebook API: compile a rule file, run it over a DataFrame or a path."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import cep
from cep.api import RunCounts

DATA = Path(__file__).parent / "data"
RULES = Path(__file__).parent.parent / "rules"


def test_dataframe_and_path_give_the_same_events():
    rules = cep.compile_rules(RULES / "busy_topic.epl", set={"threshold": 4})
    frame = pd.read_json(DATA / "tweets_small.jsonl", lines=True)
    from_frame = rules.run(frame, runner="local")
    from_path = rules.run(str(DATA / "tweets_small.jsonl"), runner="local")
    pd.testing.assert_frame_equal(from_frame, from_path)
    assert list(from_frame.columns) == ["rule", "key", "seq", "ts", "topic", "n", "avg_rt",
                                        "max_rt"]
    assert set(from_frame["rule"]) == {"busy_topic"}
    assert from_frame["key"].tolist() == from_frame["topic"].tolist()
    assert list(zip(from_frame["key"], from_frame["n"], strict=True)) == [
        ("weather", 4), ("sport", 4), ("weather", 5), ("sport", 5), ("sport", 6), ("sport", 6),
        ("sport", 6), ("sport", 6), ("sport", 4), ("sport", 5), ("sport", 4), ("sport", 5),
        ("sport", 6), ("sport", 6)]
    # real UTC timestamps (the unit is pandas' own: ns in pandas 2, us in pandas 3)
    assert isinstance(from_frame["ts"].dtype, pd.DatetimeTZDtype)
    assert str(from_frame["ts"].dtype.tz) == "UTC"
    assert from_frame["ts"].iloc[0] == pd.Timestamp("2026-03-01T12:06:08Z")
    assert rules.last_run == RunCounts(events=80, dead_lettered=0, outputs=14)


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
    assert rules.last_run == RunCounts(events=2, dead_lettered=1, outputs=2)
    assert out["s"].tolist() == [1, 4]


def test_unknown_runner_is_refused():
    rules = cep.compile_rules(RULES / "busy_topic.epl")
    with pytest.raises(ValueError, match=r"^runner must be 'spark' or 'local', not 'flink'$"):
        rules.run(str(DATA / "tweets_small.jsonl"), runner="flink")
