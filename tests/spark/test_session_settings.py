"""The Spark settings cep gives a session it creates, on a cluster and on a local master."""

from __future__ import annotations

from cep.spark.jvm import session


def test_on_a_cluster_an_engine_task_never_waits_for_a_busy_executor_while_one_idles() -> None:
    """Oracle: Spark's delay scheduling (``spark.locality.wait``, 3 s by default) held a
    scaled job's partition 3 behind partition 0 on one executor every batch while a
    joined executor idled (bench/results/scale_midrun-placement.json); at 0 a task
    whose preferred executor is busy starts on a free one. A local master has one
    executor, where the setting changes nothing, so cep leaves it alone there."""
    cluster = session._settings(verbose=False, local=False)
    assert cluster["spark.locality.wait"] == "0s"
    assert session.CLUSTER_SETTINGS.items() <= cluster.items()
    assert "spark.locality.wait" not in session._settings(verbose=False, local=True)
