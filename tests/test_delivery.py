"""Driver-side delivery without Spark: parts merged in reference order, and appends that
a replayed batch cannot double."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from pyarrow import ipc
from support.shares import bounded, note

from cep.engine.json_rows import object_texts
from cep.spark.output.delivery import AppendLedger, merge_parts, merged_lines
from cep.spark.output.event_parts import (
    ORDER_SCHEMA,
    EventParts,
    event_lines,
    order_path,
    order_table,
)
from cep.transports.outputs import record_keys

ORDER = {"a": 0, "b": 1}


def test_parts_merge_into_seq_then_rule_order(tmp_path):
    rng = random.Random(5)
    records = [{"rule": rng.choice("ab"), "key": i % 7, "seq": rng.randrange(500),
                "text": "é" * rng.randrange(4)} for i in range(2000)]
    parts = []
    for engine in range(3):
        mine = sorted(records[engine::3], key=lambda r: (r["seq"], ORDER[r["rule"]]))
        path = tmp_path / f"engine-{engine}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in mine))
        # the part's order file, as EngineParts.write leaves it: input events (no timer,
        # so no time passed and no other origin) and their keys as JSON text
        order = pa.table({"at": [0] * len(mine), "origin": [0] * len(mine),
                          "key": [json.dumps(r["key"]) for r in mine]}, schema=ORDER_SCHEMA)
        with ipc.new_file(str(order_path(path)), ORDER_SCHEMA) as writer:
            writer.write_table(order)
        parts.append(path)
    got = [json.loads(line) for line in merged_lines(parts, ORDER).decode().splitlines()]
    assert [(r["seq"], ORDER[r["rule"]]) for r in got] == sorted(
        (r["seq"], ORDER[r["rule"]]) for r in records)
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, records))


def test_a_replayed_batch_replaces_its_first_attempt(tmp_path):
    target, ledger = tmp_path / "out.jsonl", tmp_path / "ledger.json"
    target.write_text("left by an earlier run\n")
    appender = AppendLedger(target, ledger)
    assert target.read_text() == ""  # a new run starts the file afresh
    appender.append(0, [b"a\n"])
    appender.append(1, [b"b\n", b"c\n"])
    again = AppendLedger(target, ledger)  # a restart: the ledger says batch 1 was last
    again.append(1, [b"b\n", b"c\n"])  # Spark replays batch 1 (it had not committed)
    again.append(2, [b"d\n"])
    assert target.read_text() == "a\nb\nc\nd\n"


KEYS = st.recursive(
    st.none() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text() | st.sampled_from(["seq", ',"seq":', '","seq":', "été", '\\"', "\n"]),
    lambda inner: st.lists(inner, max_size=3), max_leaves=5)


@given(st.lists(st.tuples(st.sampled_from("ab"), KEYS, st.integers(0, 20), st.integers(0, 2),
                          st.integers(0, 2)), max_size=12),
       st.integers(1, 3))
def _merged_keys_are_the_lines_keys(tmp_path_factory, events: list, engines: int) -> None:
    """Engines' parts written as the engine tasks write them (``event_lines`` and
    ``order_table`` of one frame), merged with their keys: each merged line's Kafka
    record key (``record_keys`` of the merged key texts) is its own line's key.

    Oracle: ``json.loads`` of each merged line and ``json.dumps`` of its ``key`` (the
    standard library; nothing shared with the merge or the order files). Draws with no
    event compare nothing: their share is measured and bounded."""
    directory = tmp_path_factory.mktemp("parts")
    parts = EventParts(str(directory))
    for engine in range(engines):
        mine = events[engine::engines]
        frame = pd.DataFrame({
            "rule": [r for r, *_ in mine], "seq": [s for _r, _k, s, *_ in mine],
            "key": object_texts(np.array([k for _r, k, *_ in mine] + [None],
                                         dtype=object))[:len(mine)],
            "ts": np.zeros(len(mine), np.int64), "ts_null": np.ones(len(mine), bool),
            "payload": ['{"n":1}'] * len(mine),
            "at": [a for *_x, a, _o in mine], "origin": [o for *_x, o in mine]})
        frame = frame.sort_values(["seq", "at", "origin"], kind="stable")  # an engine's order
        parts.write(0, engine, event_lines(frame), order_table(frame))
    merged = merge_parts(parts.batch_paths(0), ORDER, with_keys=True)
    lines = merged.text.splitlines()
    note(lines)
    expected = [None if (k := json.loads(line)["key"]) is None else json.dumps(k).encode()
                for line in lines]
    assert merged.keys is not None and record_keys(merged.keys) == expected
    assert merged.text == merged_lines(parts.batch_paths(0), ORDER)


def test_merged_keys_are_the_lines_keys(tmp_path_factory) -> None:
    with bounded("merged keys (no event)"):
        _merged_keys_are_the_lines_keys(tmp_path_factory)
