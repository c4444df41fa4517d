"""INSERT INTO chains on Spark: complex events feeding rules of later stages, on their own
keys, give exactly the reference evaluator's events (same rows, same order), whatever the
engines, the batch size (chain events cross micro-batches) or a key-moving strategy.

Fast checks first (no Spark): stage labels, the chain files, the refusal of a later
stage reading an input stream, and the source's offsets draining the later stages. Then
real local Spark runs over generated stock ticks (started once for the module)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from pyspark import cloudpickle
from support.spark_runs import reference, run_and_read
from support.stock_ticks import RULES, SCHEMA, SPIKE, TICKS, write_ticks

from cep.engine.engine import Engine
from cep.engine.insert_into import complex_events
from cep.io.inputs import load_inputs
from cep.reference import input_watermark, run_batch
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.spark.chains.stages import ChainParts, split_rows
from cep.spark.inputs.config import SourceConfig
from cep.spark.inputs.source import InputReader
from cep.spark.runtime import SparkRunError
from grammar.compile import compile_text
from splitter.engine_labels import partition_of, stage_labels
from splitter.routing import key_grouping


@pytest.fixture(scope="module")
def ticks(tmp_path_factory) -> Path:
    return write_ticks(tmp_path_factory.mktemp("chain") / "ticks.jsonl", TICKS)


# -- no Spark ----------------------------------------------------------------------


def test_stage_labels_put_every_stage_of_engine_e_in_partition_e():
    for n, stages in ((1, 2), (3, 3), (5, 2)):
        labels = stage_labels(n, stages)
        assert labels[0] == stage_labels(n, 1)[0]  # stage 0 as without a chain
        assert len({v for stage in labels for v in stage}) == n * stages
        for stage in labels:
            assert [partition_of(v, n) for v in stage] == list(range(n))


def test_chain_rows_round_trip_through_their_files(tmp_path):
    """What an engine leaves for the next stage decodes, after the Arrow file, into the
    very events the reference hands that stage."""
    module = compile_text(RULES["three_stages"])
    path = write_ticks(tmp_path / "t.jsonl", 200)
    inputs = load_inputs(module, [str(path)], None).tables
    stage0 = module.stage_modules()[0]
    rows = run_batch(stage0, Engine(stage0), inputs, input_watermark(module, inputs))
    chained, output = split_rows(module, rows)
    assert len(chained["seq"]) > 10 and set(output["rule"]) == {"drop"}
    parts = ChainParts(str(tmp_path / "chain"))
    half = len(chained["seq"]) // 2
    parts.write(4, 1, 0, {c: v[:half] for c, v in chained.items()})
    parts.write(4, 1, 2, {c: v[half:] for c, v in chained.items()})
    parts.write(4, 1, 1, {c: v[:0] for c, v in chained.items()})  # nothing: no file
    assert sorted(p.name for p in (tmp_path / "chain" / "batch-0000004" / "stage-1")
                  .iterdir()) == ["engine-000.arrow", "engine-002.arrow"]
    got, want = parts.events(module, 5, 1), complex_events(module, rows)
    assert got.keys() == want.keys() == {"Spike"}
    for name, column in want["Spike"].items():
        assert np.array_equal(got["Spike"][name], column), name
    parts.drop_through(4)
    assert parts.events(module, 5, 1) == {}


def test_a_later_stage_reading_an_input_stream_is_refused_in_one_line():
    module = compile_text(SCHEMA + SPIKE + "@Name('after') SELECT a.symbol AS symbol FROM "
                          "PATTERN [every a=Spike -> b=StockTick] PARTITION BY symbol;")
    with pytest.raises(SparkRunError) as err:
        run(module, RunConfig({"StockTick": "unused.jsonl"}, progress=False))
    message = str(err.value)
    assert "\n" not in message and "reads stream StockTick" in message
    assert "--runner local" in message


def test_the_source_plans_drain_batches_until_the_last_stage_is_done(tmp_path, ticks):
    """A bounded input of three batches, two later stages: six batches, the last three
    reading no input (the first of them the end of the input, where all time passes,
    then two that drain the later stages), each with one task per later stage; then the
    offsets stop."""
    module = compile_text(RULES["three_stages"])
    config = SourceConfig({"StockTick": str(ticks)}, str(tmp_path), False,
                          TICKS // 3 + 1, 2, 1 << 20)
    reader = InputReader(config, module, stage_labels(2, 3), cloudpickle.dumps(key_grouping(2)))
    reader.prepareForTriggerAvailableNow()
    start = reader.initialOffset()
    offsets = []
    while (end := reader.latestOffset(start, reader.getDefaultReadLimit())) != start:
        offsets.append(end)
        tasks = [p.value for p in reader.partitions(start, end)]
        assert [t["stage"] for t in tasks if "stage" in t] == [1, 2]
        final = [t.get("final", False) for t in tasks if "stage" not in t]
        assert any(t.get("pieces") for t in tasks) == (end["idle"] == 0 and not any(final))
        assert any(final) == (len(offsets) == 4)
        start = end
    assert [o["idle"] for o in offsets] == [0, 0, 0, 0, 1, 2]
    assert [o["n"] for o in offsets] == [1, 2, 3, 4, 5, 6]
    assert [o.get("end", False) for o in offsets] == [False] * 3 + [True] * 3


# -- Spark == reference ------------------------------------------------------------


@pytest.mark.parametrize(("rule", "engines", "batch_size"), [
    ("window", 1, 150), ("window", 3, 37),
    ("three_stages", 2, 150), ("three_stages", 3, 37),
    ("pattern", 3, 60), ("join", 2, 60), ("timers", 3, 37),
])
def test_chains_on_spark_equal_the_reference(spark, ticks, rule, engines, batch_size):
    module = compile_text(RULES[rule])
    expected = reference(module, ticks)
    assert {r["rule"] for r in expected} == set(module.outputs)  # each has events
    run, records = run_and_read(module, ticks, engines=engines, batch_size=batch_size)
    assert records == expected
    input_batches = [m for m in run.metrics if m["events_in"]]
    assert sum(m["events_in"] for m in run.metrics) == TICKS
    # the later stages' events cross batches: read in one, processed in later ones, and
    # the run goes on after the input's last batch for the end of the input (where all
    # time passes) and one batch per later stage
    chained = [m for m in run.metrics if m.get("chain_events_in")]
    assert len(chained) >= min(3, len(input_batches))
    assert run.metrics[-1]["events_in"] == 0 and run.metrics[-1]["batch"] == max(
        m["batch"] for m in input_batches) + len(module.stages) + 1


def test_a_key_moving_strategy_on_a_chain_gives_the_kg_events(spark, ticks):
    """dlb-l moves stage 0's keys (symbols) through MongoDB; the sectors of stage 1 stay
    with their key-grouping engine; the events are the reference's."""
    module = compile_text(RULES["three_stages"])
    run, records = run_and_read(module, ticks, engines=3, batch_size=40, strategy="dlb-l",
                                threshold=5.0, moves="always")
    assert sum(m["exported_keys"] for m in run.metrics) > 0, "keys must move"
    assert sum(m["imported_keys"] for m in run.metrics) == sum(
        m["exported_keys"] for m in run.metrics[:-1])
    assert records == reference(module, ticks)


def test_a_stop_lets_the_later_stages_drain_first(spark, ticks, tmp_path):
    """A followed run stopped as soon as its first events are out: it reads no more
    input after the batch in flight, but runs the later stages' batches before it
    returns (they process complex events), so the output holds every event of the
    records it read (the reference over those records)."""
    module = compile_text(RULES["three_stages"])
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "ticks.jsonl").write_text(ticks.read_text())
    out = tmp_path / "out.jsonl"
    stop = threading.Event()
    config = RunConfig({"StockTick": str(folder)}, engines=2, batch_size=25,
                       master="local[2]", follow=True, trigger_s=0.3, progress=False,
                       output=Output(str(out), callback=lambda _b, text: text and stop.set()))
    result = run(module, config, stop)
    read = sum(m["events_in"] for m in result.metrics)
    assert 0 < read < TICKS, "the stop must come before the input's end"
    assert [m["events_in"] for m in result.metrics[-2:]] == [0, 0]  # two drain batches
    assert result.metrics[-2].get("chain_events_in", {}).get("1", 0) > 0
    prefix = tmp_path / "read" / "ticks.jsonl"
    prefix.parent.mkdir()
    prefix.write_text("".join(ticks.read_text().splitlines(keepends=True)[:read]))
    expected = reference(module, prefix.parent)
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected
