"""The Spark runtime: compiled rules as PySpark Structured Streaming stateful engines.

Where to start reading, by the way one record goes (``runtime.py`` draws the query):

- the run: ``runtime.py`` (``run_on_spark``: the run directory, the query, stopping),
  ``session.py`` (the SparkSession and why each setting);
- input: ``source.py`` plans micro-batches over the input log (``source_config.py`` is
  what it knows), ``input_tasks.py`` reads on the executors;
- the Splitter, which engine gets each event and the Balancer deciding it: ``splitter/``;
- the engines: ``processor.py`` (Spark's stateful processor, kept tiny),
  ``engine_task.py`` (what every engine task knows), ``engine_batch.py`` (one engine's
  micro-batch), its state: resident in the Python workers (``resident.py``), durable as
  a changelog in the state store (``engine_log.py``); INSERT INTO chains across stages
  (``chain_stages.py``; ``chain_check.py`` says which chains it runs);
- output: ``event_parts.py`` (the engines write their events themselves), ``sink.py``
  (after each batch, on the driver), ``delivery.py`` (exactly once, in order);
- a quicker start: ``jvm_archive.py``, ``local_fs.py`` and ``prepare.py`` (what ``cep
  prepare`` makes, in the cache of ``jvm_cache.py``), ``worker_python.py``,
  ``worker_warmup.py``;
- a cluster on one machine: ``cluster.py`` (a standalone master and workers on
  127.0.0.1), ``cpu_quota.py`` (a cgroup with a CPU quota per worker) and
  ``emulated_cluster.py`` (a node per engine, what ``cep bench --nodes`` runs on).
"""
