"""Spark output equals the reference evaluator's, event for event.

Every example rule on its sample input, with 1, 2 and 5 engines and two batch sizes; the
same with rows shuffled inside each batch (engines must restore per-key order from seq).
These run a real local Spark session (started once for the module)."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from cep.engine.table import SEQ, take
from cep.spark.labels import engine_labels, murmur3_int
from cep.spark.runtime import run_on_spark

ROOT = Path(__file__).parent.parent.parent
SAMPLES = {
    "fsd.epl": "tweets_small.jsonl",
    "busy_topic.epl": "tweets_small.jsonl",
    "sensor_average.epl": "readings.jsonl",
    "delay_streak.epl": "flights.jsonl",
}


@pytest.mark.parametrize("batch_size", [17, 40])
@pytest.mark.parametrize("engines", [1, 2, 5])
@pytest.mark.parametrize("rule", sorted(SAMPLES))
def test_spark_equals_reference(spark, example, rule, engines, batch_size):
    module, tables, expected = example(rule, SAMPLES[rule])
    run = run_on_spark(module, tables, engines=engines, batch_size=batch_size,
                       master="local[2]", progress=False)
    assert run.records == expected
    assert len(run.metrics) == -(-len(tables[next(iter(tables))][SEQ]) // batch_size)
    assert sum(m["events_in"] for m in run.metrics) >= run.events


def test_rows_shuffled_inside_batches_give_identical_events(spark, example):
    module, tables, expected = example("delay_streak.epl", SAMPLES["delay_streak.epl"])
    shuffled = {}
    for name, table in tables.items():
        order = list(range(len(table[SEQ])))
        random.Random(3).shuffle(order)
        shuffled[name] = take(table, order)
    run = run_on_spark(module, shuffled, engines=2, batch_size=20, master="local[2]",
                       progress=False)
    assert run.records == expected


def test_engine_labels_land_in_their_own_partition(spark):
    for n in (1, 2, 5, 7):
        labels = engine_labels(n)
        rows = spark.createDataFrame([(v,) for v in labels], "v int").selectExpr(
            f"pmod(hash(v), {n}) AS p").collect()
        assert [r.p for r in rows] == list(range(n))
    values = [*range(-50, 50), 2**31 - 1, -(2**31)]
    got = spark.createDataFrame([(v,) for v in values], "v int").selectExpr(
        "hash(v) AS h").collect()
    assert [r.h for r in got] == [murmur3_int(v) for v in values]


def test_python_api_on_spark_matches_local(spark):
    import cep

    rules = cep.compile_rules(ROOT / "rules" / "sensor_average.epl")
    source = str(ROOT / "tests" / "data" / "readings.jsonl")
    on_spark = rules.run(source, runner="spark", engines=2, batch_size=30, master="local[2]")
    local = rules.run(source, runner="local")
    assert len(local) > 0
    pd.testing.assert_frame_equal(on_spark, local)
