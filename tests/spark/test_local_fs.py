"""The checkpoint file system of ``cep prepare`` (``cep.spark.jvm.local_fs``): trusted only
when private, and in a local session the file system that Hadoop hands out for file://,
setting the permissions Hadoop asks for without forking chmod."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.cache_files import plant
from support.jdk import javac_here

from cep.spark.jvm import local_fs
from cep.spark.jvm.local_fs import LocalFsError, build_jar, jar_path, spark_settings


def _plant(tmp_path, monkeypatch, file_mode: int, dir_mode: int):
    return plant(tmp_path, monkeypatch, jar_path, b"not really a jar", file_mode, dir_mode)


def test_a_private_jar_goes_on_the_class_path_with_its_settings(tmp_path, monkeypatch):
    path = _plant(tmp_path, monkeypatch, 0o600, 0o700)
    assert spark_settings() == {
        "spark.driver.extraClassPath": str(path),
        "spark.hadoop.fs.file.impl": local_fs.FILE_SYSTEM_CLASS,
        "spark.sql.streaming.checkpointFileManagerClass": local_fs.CHECKPOINT_MANAGER_CLASS}


def test_a_jar_others_can_write_or_in_a_shared_directory_is_not_used(tmp_path, monkeypatch):
    path = _plant(tmp_path, monkeypatch, 0o666, 0o700)
    assert spark_settings() == {}
    path.chmod(0o600)
    path.parent.chmod(0o777)
    assert spark_settings() == {}


def test_no_jar_no_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert spark_settings() == {}


def test_without_javac_prepare_is_told_why_and_runs_keep_hadoops_file_system(
        tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))  # a Java home with no javac
    with pytest.raises(LocalFsError, match="no javac"):
        build_jar()
    assert spark_settings() == {}


SESSION = """
import json, sys
from cep.spark.jvm.local_fs import build_jar
build_jar()
from cep.spark.jvm.session import spark_session
spark = spark_session("local[1]", 1)
jvm = spark._jvm
fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"),
                                             spark._jsc.hadoopConfiguration())
Path = jvm.org.apache.hadoop.fs.Path
fs.create(Path(sys.argv[1] + "/made")).close()
fs.create(Path(sys.argv[1] + "/kept")).close()
fs.setPermission(Path(sys.argv[1] + "/kept"),
                 jvm.org.apache.hadoop.fs.permission.FsPermission.createImmutable(0o600))
fs.mkdirs(Path(sys.argv[1] + "/dir"))
print(json.dumps({"class": fs.getClass().getName(),
                  "manager": spark.conf.get("spark.sql.streaming.checkpointFileManagerClass")}))
spark.stop()
"""


@pytest.mark.skipif(not javac_here(), reason="a JRE only: no jar can be compiled here")
def test_a_local_session_creates_files_through_it_with_hadoops_permissions(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    work = tmp_path / "files"
    work.mkdir()
    ran = subprocess.run([sys.executable, "-c", SESSION, str(work)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen == {"class": local_fs.FILE_SYSTEM_CLASS,
                    "manager": local_fs.CHECKPOINT_MANAGER_CLASS}
    mode = {name: (work / name).stat().st_mode & 0o777 for name in ("made", "kept", "dir")}
    # Hadoop's default umask 022 on its 0666 files and 0777 directories, and an explicit 0600
    assert mode == {"made": 0o644, "kept": 0o600, "dir": 0o755}
    assert (work / ".made.crc").is_file()  # still the checksummed local file system
