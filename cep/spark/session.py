"""A SparkSession configured for cep's streaming engines, quiet unless asked.

Why each setting: N shuffle partitions so each engine owns one (labels.py); the RocksDB
state store that ``transformWithStateInPandas`` needs; no console progress bars or UI
(cep draws its own progress); no empty micro-batches; Arrow for pandas transfers; and a
log4j configuration at ERROR so Spark's start-up chatter stays hidden without --verbose.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log_config() -> str:
    path = Path(tempfile.gettempdir()) / "cep-log4j2-quiet.properties"
    if not path.exists() or path.read_text() != QUIET_LOG4J:
        path.write_text(QUIET_LOG4J)
    return str(path)


def is_local_master(master: str) -> bool:
    return master.startswith("local")


def spark_session(master: str = "local[*]", engines: int = 5, verbose: bool = False,
                  app_name: str = "cep"):
    """Get or create the session; ``engines`` sets the shuffle partitions for new queries."""
    # pandas' FutureWarnings from Spark's Arrow path would flood worker stderr
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning,ignore::DeprecationWarning")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local_master(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(engines))
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("CEP_DRIVER_MEMORY", "4g"))
    )
    if not verbose:
        option = f"-Dlog4j2.configurationFile=file:{_quiet_log_config()}"
        builder = builder.config("spark.driver.extraJavaOptions", option).config(
            "spark.executor.extraJavaOptions", option)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    spark.conf.set("spark.sql.shuffle.partitions", str(engines))
    return spark
