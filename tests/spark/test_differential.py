"""Spark output equals the reference evaluator's, event for event.

Every example rule on its sample input, with 1, 2 and 5 engines and two batch sizes; the
same over a directory of files, one of them split over several micro-batches.
These run a real local Spark session (started once for the module)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.samples import DISTINCT_EXAMPLES
from support.spark_runs import reference, run_and_read

from splitter.engine_labels import engine_labels, murmur3_int

ROOT = Path(__file__).parent.parent.parent

@pytest.mark.parametrize("batch_size", [17, 40])
@pytest.mark.parametrize("engines", [1, 2, 5])
@pytest.mark.parametrize("rule", sorted(DISTINCT_EXAMPLES))
def test_spark_equals_reference(spark, example, rule, engines, batch_size):
    module, path, expected = example(rule, DISTINCT_EXAMPLES[rule])
    run, records = run_and_read(module, path, engines=engines, batch_size=batch_size)
    assert records == expected
    # the file becomes several micro-batches of about batch_size events
    lines = len(Path(path).read_text().splitlines())
    assert len(run.metrics) >= max(2, lines // (2 * batch_size))
    assert sum(m["events_in"] for m in run.metrics) == run.events == lines


def test_many_files_and_a_file_split_over_batches(spark, example, tmp_path):
    """A directory of files, one of them large enough for several micro-batches, gives
    the reference's events over the same directory."""
    module, path, _ = example("delay_streak.epl", DISTINCT_EXAMPLES["delay_streak.epl"])
    lines = Path(path).read_text().splitlines(keepends=True)
    folder = tmp_path / "flights"
    folder.mkdir()
    for i, (lo, hi) in enumerate([(0, 5), (5, 9), (9, len(lines))]):
        (folder / f"part-{i}.jsonl").write_text("".join(lines[lo:hi]))
    expected = reference(module, folder)
    run, records = run_and_read(module, folder, engines=2, batch_size=10)
    assert records == expected
    assert len(run.metrics) >= 5


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
