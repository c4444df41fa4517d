"""The cluster path is real: cep's runtime on a standalone master with two workers on
127.0.0.1, whose Python has cep's dependencies but not cep (cep ships its own code),
gives the reference events, with key grouping and with DLB-H moving keys through a
MongoDB the executors reach by URI."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cluster import cluster_spark, spark_cluster  # noqa: F401 - pytest fixtures
from support.spark_runs import reference, run_and_read

from cep.run import run
from cep.run_config import RunConfig
from cep.servers.mongo import EmbeddedMongo
from cep.spark.runtime import SparkRunError
from grammar.compile import compile_file

ROOT = Path(__file__).parent.parent.parent
pytestmark = pytest.mark.slow


def test_cep_run_on_a_standalone_cluster(spark_cluster, cluster_spark):  # noqa: F811
    module = compile_file(ROOT / "rules" / "fsd.epl")
    path = ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"
    expected = reference(module, path)
    master = spark_cluster.master_url
    _, records = run_and_read(module, path, engines=3, batch_size=40, master=master)
    assert records == expected
    with pytest.raises(SparkRunError, match="unreachable from executors"):
        run(module, RunConfig({"Tweet": str(path)}, master=master, strategy="dlb-h",
                              progress=False))
    with EmbeddedMongo() as mongo:
        moved, records = run_and_read(module, path, engines=3, batch_size=40, master=master,
                                      strategy="dlb-h", threshold=5.0, mongo_uri=mongo.uri,
                                      moves="always")
    assert sum(m["exported_keys"] for m in moved.metrics) > 0
    assert records == expected
    # the executors' Python has cep's dependencies but not cep: they ran the code cep
    # shipped to them
    origin = (cluster_spark.sparkContext.parallelize([0], 1)
              .map(lambda _: __import__("cep").__file__).collect()[0])
    assert "cep-code.zip" in origin
