"""Clusters on one machine: a Spark standalone cluster on 127.0.0.1 (``standalone``), a
node per engine for ``cep bench --nodes N`` (``emulated``), and CPU quotas per group of
processes (``cpu_quota``). May import ``cep.spark.jvm``.
"""
