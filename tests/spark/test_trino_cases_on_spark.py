"""Every Trino row pattern case cep runs (tests/semantics/test_trino_row_pattern_matching.py
and test_trino_row_pattern_aggregations.py) on Spark with keys moving: the cases become
rules of a few rule files (``support.trino_cases``: one rule per case, reading only its
own rows, each key's rows in time order), run with three engines, a key-moving strategy
whose move gate is always open, and batches that cut every case's rows, so held matches,
match numbers, ALL ROWS PER MATCH and the end of the input cross batches and engines.
Spark's events must equal the reference evaluator's, row for row."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from support.spark_runs import run_and_read
from support.trino_cases import REPLICAS, Case, combined, trino_cases

from grammar.compile import compile_text

#: rule files of at most this many cases (the parser takes at most 10,000 tokens a file)
CHUNK = 48
CASES = trino_cases()
_SIZE = -(-len(CASES) // -(-len(CASES) // CHUNK))  # equal files, each at most CHUNK
CHUNKS = [CASES[i:i + _SIZE] for i in range(0, len(CASES), _SIZE)]
META = ("rule", "key", "seq")


def _inputs(tmp_path, events: list[dict]) -> dict[str, str]:
    """The events as one JSON-lines file per stream."""
    paths = {}
    for stream in sorted({e["stream"] for e in events}):
        path = tmp_path / f"{stream}.jsonl"
        path.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "stream"})
                                + "\n" for e in events if e["stream"] == stream))
        paths[stream] = str(path)
    return paths


def _projected(rows, columns) -> Counter:
    return Counter(tuple(r[c] for c in columns) for r in rows)


def test_the_combined_rules_give_each_case_its_own_rows(reference_events, tmp_path):
    """The rewriting keeps each case's meaning: rule k of the combined file gives what
    case k gave on its own, once per key its rows were given under."""
    assert len(CASES) > 130
    for n, chunk in enumerate(CHUNKS):
        text, events = combined(chunk)
        out = reference_events(compile_text(text, f"trino{n}"), _inputs(tmp_path, events))
        for k, case in enumerate(chunk):
            columns = [c for c in (case.output[0] if case.output else ()) if c not in META]
            mine = [r for r in out if r["rule"] == f"case{k}"]
            times = 1 if "PARTITION BY" in case.text else len(REPLICAS)
            expected = _projected(case.output, columns)
            assert _projected(mine, columns) == Counter(
                {row: c * times for row, c in expected.items()}), case.name


@pytest.mark.parametrize("chunk", range(len(CHUNKS)))
def test_trino_cases_on_spark_equal_the_reference(spark, reference_events,
                                                  tmp_path, chunk):
    cases: list[Case] = CHUNKS[chunk]
    text, events = combined(cases)
    module = compile_text(text, f"trino{chunk}")
    source = _inputs(tmp_path, events)
    expected = reference_events(module, source)
    assert {r["rule"] for r in expected} == {f"case{k}" for k, case in enumerate(cases)
                                             if case.output}
    run, got = run_and_read(module, source, engines=3, batch_size=40, strategy="dlb-h",
                            threshold=1.0, moves="always")
    # 11 to 14 batches; 14 to 32 keys of a chunk moved in its run (measured)
    assert sum(m["exported_keys"] for m in run.metrics) >= 10, "keys must move"
    assert got == expected
