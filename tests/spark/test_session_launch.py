"""The JVM cep launches skips Spark's lookup of ``pyspark_*`` data source packages."""

from __future__ import annotations

import os

from pyspark.sql.datasource import DataSource

from cep.spark.jvm.session import NO_LOOKUP_PYTHON


class _Probe(DataSource):
    @classmethod
    def name(cls) -> str:
        return "cep_probe_source"


def test_the_jvm_skips_the_python_data_source_lookup_and_this_process_keeps_its_env(spark):
    # what Spark's PythonUtils.defaultPythonExec reads, for DataSourceManager alone
    assert spark.sparkContext._jvm.System.getenv("PYSPARK_DRIVER_PYTHON") == NO_LOOKUP_PYTHON
    assert os.environ.get("PYSPARK_DRIVER_PYTHON") != NO_LOOKUP_PYTHON
    spark.dataSource.register(_Probe)  # still works: only the pyspark_* lookup is skipped
    assert spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists(
        "cep_probe_source")


_PROXY_ERROR = """
import logging
from cep.spark.jvm.session import proxy_errors_to_log
proxy_errors_to_log()
try:
    raise RuntimeError("the sink failed")
except RuntimeError:
    logging.getLogger("py4j.clientserver").exception("There was an exception")
"""


def test_an_exception_py4j_logs_goes_to_the_spark_log_not_stderr(tmp_path):
    """Oracle: Python's own behaviour without cep's handler, where the same record goes
    to stderr (logging's last resort); with it, the record and its trace are in the log."""
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}  # SPARK_LOG is under the temp dir
    bare = subprocess.run([sys.executable, "-c", _PROXY_ERROR.replace(
        "proxy_errors_to_log()", "")], env=env, capture_output=True, text=True, check=True)
    assert "the sink failed" in bare.stderr
    done = subprocess.run([sys.executable, "-c", _PROXY_ERROR], env=env,
                          capture_output=True, text=True, check=True)
    assert done.stderr == ""
    log = (tmp_path / "cep-spark.log").read_text()
    assert "py4j.clientserver ERROR There was an exception" in log
    assert "RuntimeError: the sink failed" in log
