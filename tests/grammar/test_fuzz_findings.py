"""Rules the grammar fuzz (``test_grammar_fuzz``) found that compiled and then failed at
run time: each now runs, or is refused when it is checked."""

from __future__ import annotations

import numpy as np
import pytest

from cep.engine.output import output_records
from cep.engine.table import SEQ
from cep.reference import run_reference
from grammar import ir
from grammar.compile import compile_text
from grammar.errors import RuleError

SCHEMA = "CREATE SCHEMA T (k string, a long, ts timestamp) TIMESTAMP ts;\n"


def _run(module: ir.CompiledModule, n: int = 6) -> list[dict]:
    tables = {"T": {SEQ: np.arange(n), "k": np.array(["p"] * n, dtype=object),
                    "a": np.arange(n), "ts": np.arange(n) * 1_000_000}}
    return output_records(run_reference(module, tables))


def test_untagged_atoms_of_one_stream_each_bind_their_own_event() -> None:
    """``[T -> T(a > 3)]``: both atoms took the first untagged tag, so the second one's
    filter read the first's event and the match failed with "pattern tag '_0' is bound
    more than once"."""
    module = compile_text(SCHEMA + "SELECT 1 AS c FROM PATTERN [T -> T(a > 3)];")
    rule = module.stateful[0]
    assert isinstance(rule, ir.PatternRule)
    later = ir.Op(">", (ir.FieldRef("_1", "a", "long"), ir.Const(3, "int")), "boolean")
    assert rule.pattern == ir.PFollowedBy(ir.PAtom("_0", "T", None, None),
                                          ir.PAtom("_1", "T", later, None))
    assert rule.tags == ("_0", "_1")
    assert _run(module) == [{"rule": "rule1", "key": None, "seq": 4,
                             "ts": "1970-01-01T00:00:04.000Z", "c": 1}]


@pytest.mark.parametrize("pattern", ["y=T until z=T", "[2] y=T"])
def test_a_repeated_tag_cannot_be_selected_whole(pattern: str) -> None:
    """``y.*`` read ``y.k`` of a repeated tag, which has only ``y[i].k``: a KeyError when
    the pattern matched."""
    with pytest.raises(RuleError) as info:
        compile_text(SCHEMA + f"SELECT y.* FROM PATTERN [{pattern}];")
    assert info.value.message == "'y' is a repeated tag: 'y.*' has no one row to read"
    assert info.value.hint == "name its fields with an index, e.g. y[0].k"
    assert (info.value.pos.line, info.value.pos.column) == (2, 8)
