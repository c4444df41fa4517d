"""Driver-side delivery without Spark: parts merged in reference order, and appends that
a replayed batch cannot double."""

from __future__ import annotations

import json
import random

import pyarrow as pa
from pyarrow import ipc

from cep.spark.output.delivery import AppendLedger, merged_lines
from cep.spark.output.event_parts import ORDER_SCHEMA, order_path

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
