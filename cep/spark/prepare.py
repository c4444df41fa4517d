"""``cep prepare``'s class archive: the small query whose JVM writes it.

The archive (``jvm_archive.py``) holds the classes a JVM loaded, so the JVM that makes it
must run what a real run runs: this module runs a real cep query through
``runtime.run_on_spark``. The same query warms an emulated cluster's executors up
before ``cep bench --nodes`` measures them. It sits above the runtime, so that the
archive's own module, which the session imports to map the archive, never imports the
runtime.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from cep.run_config import Output, RunConfig
from cep.spark.jvm.archive import build_archive
from cep.spark.jvm.session import DRIVER_JAVA_OPTIONS, spark_session
from cep.spark.runtime import run_on_spark
from grammar.compile import compile_text

TRAINING_RULES = (
    "CREATE SCHEMA Reading (sensor string, ts timestamp, temp double);\n"
    "SELECT sensor, avg(temp) AS mean FROM Reading#groupwin(sensor)#length(5)\n"
    "HAVING avg(temp) > 20;\n")


def run_training_query(config: RunConfig) -> None:
    """Run a two-batch windowed query over a small file with ``config``'s master, engines
    and Spark settings: every part of a run's data path (the input source, the shuffle,
    the stateful engines with RocksDB and the per-batch sink), so the JVM that runs it
    loads the classes real runs load (the archive's, or an emulated cluster's executors
    warmed up before they are measured)."""
    with tempfile.TemporaryDirectory(prefix="cep-prepare-") as work:
        data = Path(work) / "readings.jsonl"
        data.write_text("".join(
            f'{{"sensor":"s{i % 7}","ts":{1_700_000_000_000 + i},"temp":{i % 40}}}\n'
            for i in range(2000)))
        run_on_spark(compile_text(TRAINING_RULES), dataclasses.replace(
            config, inputs=(f"Reading={data}",), output=Output(str(Path(work) / "out.jsonl")),
            batch_size=1000, strategy="kg", progress=False))


def make_archive() -> Path:
    """Make the class archive of a driver JVM with cep's own options (``jvm_archive``)."""
    return build_archive(DRIVER_JAVA_OPTIONS, train)


def train():
    """Run the training query on a local master; stop Spark and hand back its gateway."""
    run_training_query(RunConfig((), master="local[2]", engines=2))
    spark = spark_session("local[2]", 2)
    gateway = spark.sparkContext._gateway
    spark.stop()
    return gateway
