"""On Spark, an input task makes columns only of the fields some rule reads
(``grammar.field_reads.reading_module``, per rule set version): the others are checked
(a bad value still makes its record a dead letter) but neither Arrow, the shuffle nor
the engines carry them. Oracles: the reference evaluator over every field of the input
(``load_inputs`` of the whole module, which cuts nothing) for the events, and the input
rows themselves for the dead letters (the test knows which values are bad)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from support.spark_runs import reference, run_and_read

from cep.engine.table import NULL_SUFFIX, SEQ, take, with_null_fields
from cep.io.inputs import input_segments
from cep.spark.inputs.config import SourceConfig
from cep.spark.inputs.tasks import _read_piece
from grammar.compile import compile_text
from grammar.field_reads import reading_module, unread_fields

SCHEMA = ("CREATE SCHEMA Rec (k string, ts timestamp, v double, s string, n int, "
          "b boolean, t2 timestamp) TIMESTAMP ts;\n")
RULES = ("@Name('w') SELECT k, avg(v) AS a FROM Rec#groupwin(k)#length(3);\n"
         "@Name('d') SELECT s, v FROM Rec(v > 2);\n"
         # a pattern engine binds every field of its stream, read or not
         "@Name('p') SELECT a.v AS v1, b.v AS v2 FROM PATTERN [every a=Rec -> "
         "b=Rec(v > a.v)] PARTITION BY k;\n")
SEC = 1_000


def _rows(tmp_path: Path) -> tuple[Path, set[int]]:
    """40 records whose fields ``n`` and ``t2`` no rule reads; the ones with a bad
    value there (``n`` not an int, ``t2`` not a time) are the dead letters."""
    rows, bad = [], set()
    for i in range(40):
        row = {"k": "ab"[i % 2], "ts": i * SEC, "v": i % 6, "s": "é☃" if i % 3 else None,
               "n": "x" if i % 7 == 3 else i, "b": i % 2 == 0,
               "t2": "garbage" if i == 5 else i}
        if row["n"] == "x" or row["t2"] == "garbage":
            bad.add(i)
        rows.append(json.dumps(row))
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path, bad


def test_an_input_task_makes_columns_only_of_the_fields_rules_read(tmp_path):
    """The input task's table (``tasks._read_piece``) holds the read fields alone,
    with the same values as a read of every field, and the same dead letters."""
    module = compile_text(SCHEMA + RULES, "<test>")
    path, bad = _rows(tmp_path)
    [segment] = input_segments(module, [str(path)])
    stream = module.streams["Rec"]
    reading = reading_module(module)
    kept = reading.streams["Rec"]
    config = SourceConfig({"Rec": str(path)}, str(tmp_path / "w"), False, 100, 1, 1 << 20)
    cut, _ = _read_piece(config, stream, kept, unread_fields(module, reading, "Rec"), 0,
                         segment, segment.start, segment.end, {"dead": 0, "blank": 0})
    whole, _ = _read_piece(SourceConfig({"Rec": str(path)}, str(tmp_path / "all"), False,
                                        100, 1, 1 << 20), stream, stream, frozenset(), 1,
                           segment, segment.start, segment.end, {"dead": 0, "blank": 0})
    assert {"n", "b", "t2"}.isdisjoint(cut) and {"n", "b", "t2"} <= set(whole)
    for name in ("k", "ts", "v", "s", SEQ):
        assert list(cut[name]) == list(whole[name]), name
    assert len(cut[SEQ]) == 40 - len(bad)
    dead = [json.loads(line) for p in sorted((tmp_path / "w").rglob("*.jsonl"))
            for line in p.read_text().splitlines()]
    assert len(dead) == len(bad)


def test_spark_reads_only_the_fields_rules_read_and_equals_the_reference(tmp_path):
    """A Spark run over the records: the reference's events over every field, rows out
    of both rules, and exactly the records with a bad unread value as dead letters."""
    module = compile_text(SCHEMA + RULES, "<test>")
    path, bad = _rows(tmp_path)
    dead = tmp_path / "dead.jsonl"
    _, got = run_and_read(module, str(path), engines=2, batch_size=13,
                          dead_letter=str(dead))
    want = reference(module, str(path))
    assert got == want
    assert {r["rule"] for r in got} == {"w", "d", "p"} and len(got) > 20
    letters = [json.loads(line) for line in dead.read_text().splitlines()]
    assert sorted(json.loads(x["record"])["ts"] // SEC for x in letters) == sorted(bad)


def test_a_field_left_out_is_a_null_column_for_the_engines():
    """What an engine task puts in place of a field the input tasks left out: a NULL
    column of the field's type (one mask shared, gathered once), nothing for a table
    that holds the field or has no rows."""
    table = {SEQ: np.arange(3), "k": np.array(["a", "b", "a"], dtype=object)}
    got = with_null_fields(table, (("k", "string"), ("n", "int"), ("s", "string")))
    assert got["k"] is table["k"] and got["n"].dtype == np.int64
    assert got["n" + NULL_SUFFIX].all() and got["s" + NULL_SUFFIX] is got["n" + NULL_SUFFIX]
    assert list(take(got, np.array([2, 0]))["s"]) == ["", ""]
    assert with_null_fields({}, (("n", "int"),)) == {}
    assert with_null_fields(table, (("k", "string"),)) is table
