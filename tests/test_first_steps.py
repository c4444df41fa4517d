"""What a new user meets first, as issue 52 found it: a misspelled rule file said in one
line, progress lines without padding in a file, the RSTD plot without the end of the
input's batch, and ``cep verify`` saying which run it is starting."""

from __future__ import annotations

import pytest

from cep.report import rstd_batches
from cep.spark.output.sink import Progress
from grammar.compile import compile_file
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
