"""The output file's JSON lines, built column-wise (``output_lines``), are the lines the
per-event dicts give (``output_records`` through the sink's ``json.dumps``): for a rule
of every operator kind over random input, and for keys and names that need escapes.

Oracle: ``output_records`` and the sink's ``json.dumps`` (another path from the same
output table: the rows themselves are not checked here). The inputs
(``support.state_rules``, 120 events) give every kind output: asserted per example."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.state_rules import RULES, SCHEMA, events

from cep.engine.output import output_lines, output_records, rows_per_rule
from cep.engine.table import SEQ, SUB, object_array
from cep.io.sinks import _line
from cep.reference import run_reference
from grammar.compile import compile_text


def record_lines(table) -> str:
    return "".join(_line(r) for r in output_records(table))


@pytest.mark.parametrize("kind", sorted(RULES))
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_lines_equal_the_records_dumped_one_by_one(kind, seed):
    out = run_reference(compile_text(SCHEMA + RULES[kind], kind), events(seed))
    assert output_lines(out) == record_lines(out)
    rules = [r["rule"] for r in output_records(out)]
    assert rules, "an empty output would compare nothing"
    assert rows_per_rule(out) == {r: rules.count(r) for r in dict.fromkeys(rules)}


def test_string_keys_and_odd_values_are_escaped_as_json_dumps_escapes_them():
    keys = ['a"b', "é\n", "\\", "x"]
    module = compile_text("CREATE SCHEMA T (name string, ts timestamp, v double) TIMESTAMP ts;"
                          "@Name('r\"1') SELECT name AS who, v, count(*) AS n "
                          "FROM T#groupwin(name)#length(2);", "odd")
    n = 8
    table = {SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
             "name": object_array([keys[i % 4] for i in range(n)]),
             "ts": np.arange(n, dtype=np.int64) * 1001,
             "v": np.array([0.5, np.nan, 1e20, -0.0, 3.0, 1e-7, 2.0, 7.25])}
    out = run_reference(module, {"T": table})
    lines = output_lines(out)
    assert lines == record_lines(out)
    assert [json.loads(line)["key"] for line in lines.splitlines()] == [
        keys[i % 4] for i in range(n)]


def test_no_rows_is_no_text():
    module = compile_text(SCHEMA + RULES["length"], "length")
    assert output_lines(run_reference(module, {})) == ""
