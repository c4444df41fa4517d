"""The HAVING threshold the join hands to the similarity kernel (``having_cap``), and
that stopping early at it never changes a rule's output."""

from __future__ import annotations

import numpy as np
import pytest

from cep.engine.expr import collect_aggregates
from cep.engine.table import SEQ, SUB
from cep.engine.windows.join import having_cap
from cep.reference import run_reference
from grammar import ir
from grammar.compile import compile_text

SCHEMA = """CREATE SCHEMA T (id long, k int, text string);
"""
JOIN = """@Name('r')
SELECT LE.id AS id, MAX(similarity(LE.text, TW.text)) AS m, count(*) AS n
FROM T#lastevent AS LE, T#groupwin(k)#length(20) AS TW
WHERE LE.k = TW.k
"""


def rule(having: str) -> tuple[ir.CompiledModule, ir.JoinRule]:
    module = compile_text(SCHEMA + JOIN + having + ";")
    (stateful,) = module.stateful
    return module, stateful


def the_max(join_rule: ir.JoinRule) -> ir.Agg:
    """The rule's MAX(similarity(...)) aggregate, as the operator collects it."""
    return next(a for a in collect_aggregates([join_rule.having]) if a.name == "max")


@pytest.mark.parametrize(("having", "cap"), [
    ("HAVING coalesce(MAX(similarity(LE.text, TW.text)), 0) <= 0.2", 0.2),
    ("HAVING MAX(similarity(LE.text, TW.text)) < 0.5", 0.5),
    ("HAVING 0.3 >= MAX(similarity(LE.text, TW.text))", 0.3),
    ("HAVING count(*) > 1 AND MAX(similarity(LE.text, TW.text)) <= 0.4", 0.4),
    ("HAVING MAX(similarity(LE.text, TW.text)) <= 0.4 AND "
     "MAX(similarity(LE.text, TW.text)) <= 0.1", 0.1),
    ("HAVING MAX(similarity(LE.text, TW.text)) >= 0.4", np.inf),  # a floor, not a cap
    ("HAVING MAX(similarity(LE.text, TW.text)) <= 0.4 OR count(*) > 3", np.inf),
    ("HAVING NOT (MAX(similarity(LE.text, TW.text)) > 0.4)", np.inf),
])
def test_having_cap_reads_only_conjuncts_that_bound_the_max(having: str, cap: float) -> None:
    _, join_rule = rule(having)
    assert having_cap(join_rule.having, the_max(join_rule)) == cap


def test_no_having_no_cap() -> None:
    module = compile_text(SCHEMA + JOIN + ";")
    (join_rule,) = module.stateful
    (agg,) = collect_aggregates([join_rule.columns[1].expr])
    assert having_cap(join_rule.having, agg) == np.inf


def test_stopping_at_the_cap_changes_no_event() -> None:
    """Near-duplicate texts (most triggers exceed the cap early) and fresh ones: the rule
    with the cap in HAVING emits exactly the rows of the same rule with the threshold
    written so that no cap is found (``NOT (m > c)``), values included."""
    rng = np.random.default_rng(5)
    words = np.array([f"w{i}" for i in range(40)], dtype=object)
    base = [" ".join(rng.choice(words, 8)) for _ in range(30)]
    texts = []
    for i in range(3000):
        t = base[rng.integers(len(base))].split() if rng.random() < 0.7 else \
            list(rng.choice(words, 8))
        t[rng.integers(len(t))] = f"x{i}"
        texts.append(" ".join(t))
    n = len(texts)
    table = {SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, np.int64),
             "id": np.arange(n, dtype=np.int64), "k": rng.integers(0, 7, n),
             "text": np.array(texts, dtype=object)}
    capped, _ = rule("HAVING coalesce(MAX(similarity(LE.text, TW.text)), 0) <= 0.3")
    plain, _ = rule("HAVING NOT (coalesce(MAX(similarity(LE.text, TW.text)), 0) > 0.3)")
    a = run_reference(capped, {"T": table}, batch_size=700)
    b = run_reference(plain, {"T": table}, batch_size=700)
    assert 0 < len(a["seq"]) < n // 2
    assert a["seq"].tolist() == b["seq"].tolist()
    assert [repr(v) for v in a["values"].tolist()] == [repr(v) for v in b["values"].tolist()]
