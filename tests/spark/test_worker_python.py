"""The local workers' Python drops Spark's zips and core jar and keeps the rest of
PYTHONPATH."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cep.spark.jvm.worker_python import spark_zips, worker_python

SHOW = ("import json, os, sys, pyspark, py4j; print(json.dumps("
        "[os.environ.get('PYTHONPATH'), pyspark.__file__, py4j.__file__, sys.path]))")


def _installed_zips() -> list[str]:
    """Spark's two zips beside this machine's pyspark, when that is a package directory
    of its own (as pip installs it) and py4j is one too, and Spark's core jar; read from
    the paths themselves, not from ``spark_zips``, which the tests below check against
    it."""
    pyspark, py4j = importlib.util.find_spec("pyspark"), importlib.util.find_spec("py4j")
    if not (pyspark and pyspark.origin and py4j and py4j.origin
            and Path(pyspark.origin).is_file() and Path(py4j.origin).is_file()):
        return []
    lib = Path(pyspark.origin).parent / "python" / "lib"
    zips = [lib / "pyspark.zip", *lib.glob("py4j-*-src.zip"),
            *(lib.parent.parent / "jars").glob("spark-core_*.jar")]
    return [str(z) for z in zips if z.is_file()]


INSTALLED = _installed_zips()
needs_zips = pytest.mark.skipif(len(INSTALLED) != 3, reason="pyspark and py4j are not "
                                "installed here as package directories beside Spark's zips")


def _run(pythonpath: str) -> tuple[str, str, str, list[str]]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run([worker_python(), "-c", SHOW], env=env, capture_output=True,
                          text=True, check=True, cwd="/")
    return tuple(json.loads(done.stdout))


@needs_zips
def test_workers_import_pyspark_compiled_not_from_the_zip(tmp_path):
    zips = spark_zips()
    assert zips == INSTALLED
    mine = tmp_path / "my lib"  # a space, and entries before, between and after the zips
    spark_like = ":".join([str(mine), *zips, "/opt/spark-core.jar", str(tmp_path)])
    pythonpath, pyspark_file, py4j_file, path = _run(spark_like)
    assert pythonpath == f"{mine}:/opt/spark-core.jar:{tmp_path}"
    assert ".zip" not in pyspark_file and ".zip" not in py4j_file
    assert not any(p.endswith((".zip", ".jar")) and "pyspark" in p for p in path)
    assert [p for p in path if p in (str(mine), str(tmp_path))] == [str(mine), str(tmp_path)]


@needs_zips
def test_a_pythonpath_of_only_the_zips_becomes_empty():
    pythonpath, pyspark_file, _, _ = _run(":".join(INSTALLED))
    assert pythonpath == "" and ".zip" not in pyspark_file


def _fake_specs(monkeypatch, specs: dict[str, str | None]) -> None:
    """``importlib.util.find_spec`` answers ``specs`` (module -> origin; None: absent)."""
    def find_spec(name, package=None):
        origin = specs.get(name)
        return None if origin is None else importlib.machinery.ModuleSpec(name, None,
                                                                          origin=origin)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def _fake_pyspark(root: Path) -> tuple[Path, Path, Path]:
    """A pyspark package directory with Spark's zips and jars, and a py4j package
    directory."""
    lib = root / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    for path in (root / "pyspark" / "__init__.py", lib / "pyspark.zip",
                 lib / "py4j-0.10.9.9-src.zip", root / "py4j" / "__init__.py",
                 root / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar",
                 root / "pyspark" / "jars" / "spark-sql_2.13-4.3.0.jar"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return root / "pyspark" / "__init__.py", lib, root / "py4j" / "__init__.py"


def test_both_zips_when_both_packages_are_compiled_copies(tmp_path, monkeypatch):
    pyspark, lib, py4j = _fake_pyspark(tmp_path)
    _fake_specs(monkeypatch, {"pyspark": str(pyspark), "py4j": str(py4j)})
    assert spark_zips() == [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"),
                            str(tmp_path / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar")]


def test_py4j_s_zip_stays_when_py4j_itself_comes_from_it(tmp_path, monkeypatch):
    pyspark, lib, _ = _fake_pyspark(tmp_path)
    in_zip = str(lib / "py4j-0.10.9.9-src.zip" / "py4j" / "__init__.py")
    _fake_specs(monkeypatch, {"pyspark": str(pyspark), "py4j": in_zip})
    assert spark_zips() == [str(lib / "pyspark.zip"),
                            str(tmp_path / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar")]


@pytest.mark.parametrize("where", ["absent", "in its zip"])
def test_nothing_to_drop_when_pyspark_is_not_a_package_directory(tmp_path, monkeypatch,
                                                                 where):
    _, lib, py4j = _fake_pyspark(tmp_path)
    origin = None if where == "absent" else str(lib / "pyspark.zip" / "pyspark" / "__init__.py")
    _fake_specs(monkeypatch, {"pyspark": origin, "py4j": str(py4j)})
    assert spark_zips() == []
    assert worker_python.__wrapped__() == sys.executable  # no wrapper: this interpreter
