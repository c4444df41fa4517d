"""Event sinks: JSON lines, Parquet (union of columns) and the console."""

from __future__ import annotations

import json

import pandas as pd

from cep.io.sinks import write_metrics, write_records

RECORDS = [
    {"rule": "a", "key": 1, "seq": 0, "ts": "1970-01-01T00:00:00.000Z", "n": 3},
    {"rule": "b", "key": "x", "seq": 1, "ts": None, "text": "hi"},
]


def test_jsonl_round_trip(tmp_path):
    path = tmp_path / "out" / "events.jsonl"
    write_records(RECORDS, str(path), "jsonl")
    assert [json.loads(line) for line in path.read_text().splitlines()] == RECORDS


def test_parquet_has_the_union_of_columns_and_exact_mixed_keys(tmp_path):
    path = tmp_path / "events.parquet"
    write_records(RECORDS, str(path), "parquet")
    frame = pd.read_parquet(path)
    assert list(frame.columns) == ["rule", "key", "seq", "ts", "n", "text"]
    assert frame["key"].tolist() == ["1", '"x"']  # mixed types kept apart as JSON text
    assert frame["n"].isna().tolist() == [False, True]


def test_console_writes_json_lines_to_stdout(capsys, tmp_path):
    write_records(RECORDS, str(tmp_path / "ignored"), "console")
    out = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in out] == RECORDS
    metrics = tmp_path / "m.jsonl"
    write_metrics([{"batch": 0}], str(metrics))
    assert json.loads(metrics.read_text()) == {"batch": 0}
