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
