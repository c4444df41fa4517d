"""A window keeps only the fields its rule reads (``grammar.field_reads``): its
retained rows, its snapshot and its handed-over keys hold no other field, and the
events are those of the same rule over the same input with every field kept.

Oracle: the reference evaluator over the same input with the unread fields removed
from the schema and the data before the run, so no pruning can happen there; the
share of empty outputs is bounded by the input (every key emits on every event)."""

from __future__ import annotations

import numpy as np

from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.table import SEQ, SUB
from cep.reference import input_watermark, run_reference
from grammar.compile import compile_text

RULE = ("SELECT k, avg(v) AS a, prev(1, v) AS p, prior(1, v) AS r "
        "FROM S#groupwin(k)#length(3);")


def _inputs(n: int = 200, with_unread: bool = True) -> dict:
    rng = np.random.default_rng(5)
    table = {SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
             "k": np.array([f"k{i}" for i in rng.integers(0, 7, n)], dtype=object),
             "ts": np.arange(n, dtype=np.int64) * 1_000_000,
             "v": rng.normal(size=n)}
    if with_unread:
        table["o"] = np.array([f"origin-{i}" for i in range(n)], dtype=object)
        table["d"] = np.array([f"dest-{i}" for i in range(n)], dtype=object)
    return {"S": table}


def test_the_window_holds_only_what_its_rule_reads_and_emits_the_same() -> None:
    full = compile_text("CREATE SCHEMA S (k string, ts timestamp, v double, o string, "
                        "d string) TIMESTAMP ts;\n" + RULE, "full.epl")
    narrow = compile_text("CREATE SCHEMA S (k string, ts timestamp, v double) "
                          "TIMESTAMP ts;\n" + RULE, "narrow.epl")
    got = output_records(run_reference(full, _inputs()))
    expected = output_records(run_reference(narrow, _inputs(with_unread=False)))
    assert got == expected and len(got) == 200
    engine = Engine(full)
    streams, _ = derive_streams(full, _inputs())
    engine.process({"S": add_keys(streams["S"], full.key)},
                   input_watermark(full, _inputs()).between(0, 200, True))
    held = {name for _, op in engine.operators for w in op.state_windows()
            for name in (w.rows or {})}
    assert held and not held & {"o", "d"}, held
