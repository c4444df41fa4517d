"""A node dies while a job runs on a standalone cluster of two: its worker and executor
are killed with SIGKILL (``LocalStandaloneCluster.crash_worker``: no decommissioning,
its shuffle output and state stores gone with it), and the job goes on on the node that
stays, each engine's state back from the checkpoint's state store and the moved keys'
state from MongoDB.

Oracle: a key-grouping run at the same fixed engine count on ``local[2]``, row for row
(KG at a fixed count equals the reference evaluator, tests/spark/test_differential.py).
The run under test balances with DLB-L (``--moves always``). So that the equality
cannot hold vacuously, the output must be non-empty, keys must have moved, the node must
have died while batches were still to come, and batches must have committed after it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.cluster import cluster_session
from support.spark_runs import ROOT, run_and_read, run_beside, wait_for_commit

from cep.servers.mongo import EmbeddedMongo
from cep.spark.cluster.standalone import LocalStandaloneCluster
from cep.spark.run_dir import next_batch
from grammar.compile import compile_file

pytestmark = pytest.mark.slow

INPUT = "tweets:n=12000,mode=default"
BATCH = 800  # 15 batches of a second or two on two one-core workers
CRASH_AFTER = 3  # the node dies 0.8 s after this batch commits (in batch 4 or 5)
WAIT_S = 120.0


def crash_a_node(cluster: LocalStandaloneCluster, workdir: Path, record: dict) -> None:
    wait_for_commit(workdir, CRASH_AFTER, record, WAIT_S)
    time.sleep(0.8)
    record["crashed"] = (cluster.crash_worker(), next_batch(workdir) - 1, time.time())


def test_a_node_killed_mid_run_leaves_the_events_key_grouping_s(tmp_path):
    module = compile_file(ROOT / "rules" / "fsd.epl")
    workdir, record = tmp_path / "run", {}
    with (LocalStandaloneCluster() as cluster, cluster_session(cluster),
          EmbeddedMongo() as mongo):
        balanced, rows = run_beside(
            lambda: crash_a_node(cluster, workdir, record), record, module, INPUT,
            engines=3, batch_size=BATCH, master=cluster.master_url, strategy="dlb-l",
            threshold=5.0, moves="always", mongo_uri=mongo.uri, checkpoint=str(workdir))
        assert cluster.workers == 1
    _, expected = run_and_read(module, INPUT, engines=3, batch_size=BATCH, strategy="kg")
    assert rows and rows == expected
    assert sum(m["exported_keys"] for m in balanced.metrics) > 0
    name, after_batch, when = record["crashed"]
    assert any(m["wall_time"] > when for m in balanced.metrics), \
        "no batch committed after the node died"
    print(f"\n{name} died after batch {after_batch}; {len(rows)} rows; "
          f"{sum(m['exported_keys'] for m in balanced.metrics)} keys moved")
