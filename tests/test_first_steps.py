"""What a new user meets first, as issue 52 found it: a misspelled rule file said in one
line, progress lines without padding in a file, the RSTD plot without the end of the
input's batch, ``cep verify`` saying which run it is starting, and a dead letter's
JSON error placed in its record."""

from __future__ import annotations

import json

import pytest

from cep.io.inputs import load_inputs
from cep.report import rstd_batches
from cep.spark.output.sink import Progress
from grammar.compile import compile_file, compile_text
from grammar.errors import RuleError


def test_a_misspelled_rule_file_is_one_clean_line() -> None:
    with pytest.raises(RuleError) as failed:
        compile_file("rules/no_such_rules.epl")
    assert str(failed.value) == ("rules/no_such_rules.epl: error: no such rule file: "
                                 "rules/no_such_rules.epl")


def test_an_error_at_a_place_still_shows_it() -> None:
    error = RuleError("unknown field", source_name="a.epl", source="SELECT x FROM S;")
    assert str(error).splitlines()[0] == "a.epl:1:1: error: unknown field"
    assert len(str(error).splitlines()) == 3  # the line and its caret


def test_progress_lines_in_a_file_are_not_padded(capsys) -> None:
    Progress(expected_events=10).update({"batch": 0, "events_in": 4, "events_out": 1,
                                         "rstd": 0.0, "rows_per_engine": [4]})
    line = capsys.readouterr().err
    assert line.endswith("engines [4]\n")


def test_the_rstd_plot_leaves_out_the_end_of_the_input() -> None:
    batches = [{"batch": 0, "events_in": 5, "rstd": 12.0},
               {"batch": 1, "events_in": 0, "rstd": 0.0, "input_ended": True}]
    assert rstd_batches(batches) == batches[:1]


def test_a_dead_letter_says_where_in_the_record_json_failed(tmp_path) -> None:
    """The parser's own "line 1 column 9" counted lines of the one record and read as
    the file's first line; the reason names the character of the record instead."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"a": 1}\n{"a": 1 "b": 2}\n')
    dead = tmp_path / "dead.jsonl"
    module = compile_text("CREATE SCHEMA S (a int);\nSELECT a FROM S;", "s.epl")
    load_inputs(module, [str(data)], str(dead))
    (letter,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert letter["offset"] == 9
    assert letter["reason"] == "not JSON: Expecting ',' delimiter at character 9 of the record"
