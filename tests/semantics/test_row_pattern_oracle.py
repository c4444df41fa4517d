"""MATCH_RECOGNIZE on both of cep's matchers against an independent reading of SQL:2016.

Oracle: :mod:`support.row_pattern_oracle`, a brute-force enumeration of each start's
candidate matches in the standard's preferment order, with its own evaluator of the drawn
conditions and measures; it shares no code with the compiled matcher
(``cep.engine.row_patterns.kernel``, ``cep.engine.row_patterns.compiled``), the
interpreter (``cep.engine.row_patterns.interpreter``) nor what they share
(``cep.engine.row_patterns.program``,
``exact_sum``, cep's expression evaluator). Rules and rows are drawn by
:mod:`support.row_pattern_draws` (text and the oracle's trees together): sequence,
alternation, every quantifier greedy and reluctant (``{n}``, ``{n,}``, ``{n,m}``),
``{- -}``, PERMUTE, ``^`` (and ``$`` off the kernel), DEFINEs relating variables (another
variable's last row, PREV with offsets, running aggregates; NEXT, FIRST, offsets and
disjunctions off the kernel), every AFTER MATCH SKIP, ONE ROW and ALL ROWS PER MATCH
with each of its modes, RUNNING and FINAL measures, CLASSIFIER(), MATCH_NUMBER(); rows of
two partitions with NULLs.

The kernel is given only rules it takes (asserted); the interpreter every rule, forced
on with ``CEP_INTERPRET=1``. The share of examples whose output is empty (both sides
agreeing on nothing) is measured and bounded, so an empty run cannot carry the test.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.row_pattern_draws import rules
from support.row_pattern_oracle import output

from cep.engine.engine import INTERPRET_ENV, Engine
from cep.engine.output import output_records
from cep.engine.table import NULL_SUFFIX, SEQ, SUB
from cep.reference import run_reference
from grammar.compile import compile_text

SCHEMA = "CREATE SCHEMA S (k int, id int, v int, w int, ts timestamp) TIMESTAMP ts;\n"
#: the most examples whose output is empty, as a share of all
MAX_EMPTY = 0.4

# few distinct values (NULL now and then) so that conditions hold often enough
events = st.lists(st.tuples(st.integers(0, 1),
                            st.one_of(st.integers(0, 2), st.integers(0, 2), st.none()),
                            st.integers(0, 2)), min_size=6, max_size=20)


def _inputs(drawn: list[tuple]) -> dict:
    n = len(drawn)
    v = [x[1] for x in drawn]
    return {"S": {
        SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
        "k": np.array([x[0] for x in drawn], np.int64), "id": np.arange(n, dtype=np.int64),
        "v": np.array([0 if x is None else x for x in v], np.int64),
        "v" + NULL_SUFFIX: np.array([x is None for x in v], np.bool_),
        "w": np.array([x[2] for x in drawn], np.int64),
        "ts": np.arange(n, dtype=np.int64) * 1_000_000,
    }}


def _expected(rule, drawn: list[tuple]) -> list[tuple]:
    rows = [dict(k=k, id=i, v=v, w=w) for i, (k, v, w) in enumerate(drawn)]
    names = [n for n, _ in rule.measures]
    out = []
    for key in sorted({r["k"] for r in rows}):
        for o in output(rule, [r for r in rows if r["k"] == key]):
            row = o["row"]
            out.append((key, None if row is None or rule.rows == "one" else row["id"],
                        *(o[n] for n in names)))
    return sorted(out, key=repr)


def _got(module, rule, drawn: list[tuple]) -> list[tuple]:
    names = [n for n, _ in rule.measures]
    out = output_records(run_reference(module, _inputs(drawn)))
    return sorted(((r["key"], None if rule.rows == "one" else r["id"], *(r[n] for n in names))
                   for r in out), key=repr)


def _check(kernel: bool, max_examples: int) -> None:
    counts: Counter = Counter()

    @settings(max_examples=max_examples, deadline=None)
    @given(drawn_rule=rules(kernel), drawn=events)
    def check(drawn_rule, drawn):
        text, rule = drawn_rule
        module = compile_text(SCHEMA + text, "oracle")
        operator = Engine(module).operators[0][1]
        assert (operator.kernel is not None) == kernel, operator.interpreted
        expected = _expected(rule, drawn)
        got = _got(module, rule, drawn)
        counts["examples"] += 1
        counts["empty"] += not expected
        assert got == expected, text

    if kernel:
        check()
    else:
        os.environ[INTERPRET_ENV] = "1"
        try:
            check()
        finally:
            del os.environ[INTERPRET_ENV]
    print(f"{'kernel' if kernel else 'interpreter'}: {counts['examples']} examples, "
          f"{counts['empty']} empty")
    assert counts["empty"] <= MAX_EMPTY * counts["examples"], counts


def test_the_kernel_gives_the_standards_matches():
    _check(True, 500)


def test_the_interpreter_gives_the_standards_matches():
    _check(False, 500)


@pytest.mark.slow
def test_the_kernel_gives_the_standards_matches_on_more_rules():
    _check(True, 5000)


@pytest.mark.slow
def test_the_interpreter_gives_the_standards_matches_on_more_rules():
    _check(False, 5000)
