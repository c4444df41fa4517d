"""``cep prepare``'s class archive: the small query whose JVM writes it.

The archive (``jvm_archive.py``) holds the classes a JVM loaded, so the JVM that makes it
must run what a real run runs: this module runs a real cep query through
``runtime.run_on_spark``. It sits above the runtime, so that the archive's own module,
which the session imports to map the archive, never imports the runtime.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from cep.lang.compile import compile_text
from cep.run_config import Output, RunConfig
from cep.spark.jvm_archive import build_archive
from cep.spark.runtime import run_on_spark
from cep.spark.session import DRIVER_JAVA_OPTIONS, spark_session

TRAINING_RULES = (
    "CREATE SCHEMA Reading (sensor string, ts timestamp, temp double);\n"
    "SELECT sensor, avg(temp) AS mean FROM Reading#groupwin(sensor)#length(5)\n"
    "HAVING avg(temp) > 20;\n")


def make_archive() -> Path:
    """Make the class archive of a driver JVM with cep's own options (``jvm_archive``)."""
    return build_archive(DRIVER_JAVA_OPTIONS, train)


def train():
    """Run a two-batch windowed query over a small file (every part of a run's data
    path: the input source, the shuffle, the stateful engines with RocksDB and the
    per-batch sink); stop Spark and hand back its gateway."""
    with tempfile.TemporaryDirectory(prefix="cep-prepare-") as work:
        data = Path(work) / "readings.jsonl"
        data.write_text("".join(
            f'{{"sensor":"s{i % 7}","ts":{1_700_000_000_000 + i},"temp":{i % 40}}}\n'
            for i in range(2000)))
        run_on_spark(compile_text(TRAINING_RULES), RunConfig(
            {"Reading": str(data)}, output=Output(str(Path(work) / "out.jsonl")), engines=2,
            batch_size=1000, master="local[2]", progress=False))
    spark = spark_session("local[2]", 2)
    gateway = spark.sparkContext._gateway
    spark.stop()
    return gateway
