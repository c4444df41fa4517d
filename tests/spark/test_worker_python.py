"""The local workers' Python drops Spark's zips and keeps the rest of PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cep.spark.worker_python import spark_zips, worker_python

SHOW = ("import json, os, sys, pyspark, py4j; print(json.dumps("
        "[os.environ.get('PYTHONPATH'), pyspark.__file__, py4j.__file__, sys.path]))")


def _run(pythonpath: str) -> tuple[str, str, str, list[str]]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run([worker_python(), "-c", SHOW], env=env, capture_output=True,
                          text=True, check=True, cwd="/")
    return tuple(json.loads(done.stdout))


def test_workers_import_pyspark_compiled_not_from_the_zip(tmp_path):
    zips = spark_zips()
    if not zips:
        pytest.skip("pyspark is not installed in site-packages here")
    mine = tmp_path / "my lib"  # a space, and entries before, between and after the zips
    spark_like = ":".join([str(mine), *zips, "/opt/spark-core.jar", str(tmp_path)])
    pythonpath, pyspark_file, py4j_file, path = _run(spark_like)
    assert pythonpath == f"{mine}:/opt/spark-core.jar:{tmp_path}"
    assert ".zip" not in pyspark_file and ".zip" not in py4j_file
    assert not any(p.endswith(".zip") and "pyspark" in p for p in path)
    assert [p for p in path if p in (str(mine), str(tmp_path))] == [str(mine), str(tmp_path)]


def test_a_pythonpath_of_only_the_zips_becomes_empty():
    if not spark_zips():
        pytest.skip("pyspark is not installed in site-packages here")
    pythonpath, pyspark_file, _, _ = _run(":".join(spark_zips()))
    assert pythonpath == "" and ".zip" not in pyspark_file
