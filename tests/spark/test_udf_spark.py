"""User functions on Spark (``cep run --udf``): the workers import the file, the events
equal the reference runner's, and a function that raises dead-letters exactly the
records it raised on, once each, with its message (``cep.engine.udf_shipment``,
``cep.spark.udf_seen``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from support.spark_runs import reference
from support.udf_sample import FAILING, RULES, UDF_TEXT, letters

from cep.engine.udf_files import load_udf_files
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text

DATA = Path(__file__).parent.parent / "data"


def test_udfs_on_spark_equal_the_reference_and_dead_letter_the_same_records(spark, tmp_path):
    udf_file = tmp_path / "udfs_spark_sample.py"  # a name no other test imports
    udf_file.write_text(UDF_TEXT)
    load_udf_files([udf_file])
    module = compile_text(RULES, "loud.epl")
    source = str(DATA / "tweets_small.jsonl")
    local_dead, spark_dead = tmp_path / "local.dead.jsonl", tmp_path / "spark.dead.jsonl"
    local = run(module, RunConfig(source, runner="local", output=Output(collect=True),
                                  dead_letter=str(local_dead)))
    on_spark = run(module, RunConfig(source, output=Output(collect=True), engines=3,
                                     batch_size=20, master="local[2]", progress=False,
                                     dead_letter=str(spark_dead)))
    assert local.records == reference(module, source)
    assert on_spark.records == local.records  # scalar and vectorised, event for event
    assert len(on_spark.metrics) >= 4  # a window's rows re-evaluated in later batches
    assert letters(local_dead) == letters(spark_dead) == FAILING  # once each
    failed = sum(map(len, FAILING.values()))
    assert on_spark.totals["udf_failures"] == local.totals["udf_failures"] == failed


def test_python_api_ships_functions_registered_in_process(spark, tmp_path):
    """``cep.compile_rules(..., udf=[...])`` loads files as ``--udf`` does, and functions
    registered in this process from an importable module (here ``support``, a directory
    Spark's workers do not have on their path) reach the workers too."""
    from support import udf_functions

    import cep
    from cep.engine.functions import register_udf

    register_udf("spaced", udf_functions.spaced, ["string"], "string")
    register_udf("halved", udf_functions.halved, ["int"], "double", vectorized=True)
    udf_file = tmp_path / "udfs_api_sample.py"
    udf_file.write_text(UDF_TEXT)
    rules = cep.compile_rules(
        "CREATE SCHEMA Tweet (id long, ts timestamp, user string, lang string, text string,"
        " retweets int, topic string) TIMESTAMP ts;\n"
        "@Name('r') SELECT id, spaced(topic) AS t, halved(retweets) AS h, shout(text) AS s "
        "FROM Tweet(retweets > 20);", udf=[udf_file])
    source = str(DATA / "tweets_small.jsonl")
    local = rules.run(source, runner="local")
    assert list(local["t"][:1]) == ["s p o r t"] and local["s"].isna().any()
    on_spark = rules.run(source, runner="spark", engines=2, batch_size=30,
                         master="local[2]")
    pd.testing.assert_frame_equal(on_spark, local)
    assert rules.last_run is not None and rules.last_run.udf_failures > 0
