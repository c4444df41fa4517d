"""The cluster path is real: cep's runtime on a standalone master with two workers on
127.0.0.1 gives the reference events, with key grouping and with DLB-H moving keys
through a MongoDB the executors reach by URI."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster import cluster_spark, spark_cluster  # noqa: F401 - pytest fixtures

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.lang.compile import compile_file
from cep.reference import run_reference
from cep.spark.runtime import SparkRunError, run_on_spark
from migration.server import EmbeddedMongo

ROOT = Path(__file__).parent.parent.parent
pytestmark = pytest.mark.slow


def test_cep_run_on_a_standalone_cluster(spark_cluster, cluster_spark):  # noqa: F811
    module = compile_file(ROOT / "rules" / "fsd.epl")
    path = ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"
    tables = load_inputs(module, [str(path)], None).tables
    expected = output_records(run_reference(module, tables))
    master = spark_cluster.master_url
    kg = run_on_spark(module, tables, engines=3, batch_size=40, master=master, progress=False)
    assert kg.records == expected
    with pytest.raises(SparkRunError, match="unreachable from executors"):
        run_on_spark(module, tables, master=master, strategy="dlb-h", progress=False)
    with EmbeddedMongo() as mongo:
        moved = run_on_spark(module, tables, engines=3, batch_size=40, master=master,
                             strategy="dlb-h", threshold=5.0, mongo_uri=mongo.uri,
                             progress=False)
    assert sum(m["exported_keys"] for m in moved.metrics) > 0
    assert moved.records == expected
