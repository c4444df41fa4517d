"""The class archive of ``cep prepare``: made private, used only when it is private, and
one that Spark's driver JVM really maps (``-Xshare:on`` fails a JVM that cannot)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cache_files import plant
from support.jdk import javac_here

from cep.spark.jvm import archive as jvm_archive
from cep.spark.jvm.archive import archive_path, sharing_options
from cep.spark.jvm.session import DRIVER_JAVA_OPTIONS

RULES = Path(__file__).parents[2] / "rules" / "sensor_average.epl"


def _plant(tmp_path, monkeypatch, file_mode: int, dir_mode: int) -> Path:
    return plant(tmp_path, monkeypatch, archive_path, b"not really an archive", file_mode,
                 dir_mode)


def test_a_private_archive_is_mapped(tmp_path, monkeypatch):
    path = _plant(tmp_path, monkeypatch, 0o600, 0o700)
    assert sharing_options() == f"-XX:SharedArchiveFile={path} {jvm_archive.QUIET}"


def test_an_archive_others_can_write_is_not_used(tmp_path, monkeypatch):
    _plant(tmp_path, monkeypatch, 0o666, 0o700)
    assert sharing_options() == ""


def test_an_archive_in_a_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    _plant(tmp_path, monkeypatch, 0o600, 0o777)
    assert sharing_options() == ""


def test_no_archive_no_options(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert sharing_options() == ""


@pytest.mark.slow
def test_prepare_makes_an_archive_that_the_driver_jvm_maps(tmp_path):
    """``cep prepare`` in an empty cache (80 s on 2 cores: slow; the README's install
    runs it, and the next test checks what it made)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("CEP_DRIVER_JAVA_OPTIONS", None)
    made = subprocess.run([sys.executable, "-m", "cep.cli", "prepare"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    archives = list((tmp_path / "cep").glob("*.jsa"))
    assert len(archives) == 1 and "JVM class archive" in made.stdout
    assert not list((tmp_path / "cep").glob("*.partial"))
    # the checkpoint file system's jar, made first: the archive holds the class path the
    # runs below have, and -Xshare:on would fail a run whose class path differs
    jars = list((tmp_path / "cep").glob("*.jar"))
    assert len(jars) == (1 if javac_here() else 0)  # a JRE only: no jar, still an archive
    assert all(jar.stat().st_mode & 0o777 == 0o600 for jar in jars)
    _assert_private_and_mapped(archives[0], env, tmp_path)


def test_the_installed_archive_is_private_and_the_driver_jvm_maps_it(tmp_path):
    """What the install's ``cep prepare`` made, where runs look for it."""
    env = {**os.environ}
    env.pop("CEP_DRIVER_JAVA_OPTIONS", None)
    path = archive_path()
    if path is None or not path.is_file():
        pytest.skip("cep prepare has not run on this machine (the README's install runs it)")
    _assert_private_and_mapped(path, env, tmp_path)


def _assert_private_and_mapped(archive: Path, env: dict[str, str], tmp_path: Path) -> None:
    assert archive.stat().st_mode & 0o777 == 0o600
    assert archive.parent.stat().st_mode & 0o777 == 0o700
    # -Xshare:on: a JVM that cannot map the archive refuses to start, so the run fails
    strict = {**env, "CEP_DRIVER_JAVA_OPTIONS":
              f"{DRIVER_JAVA_OPTIONS} -XX:SharedArchiveFile={archive} -Xshare:on"}
    data = tmp_path / "readings.jsonl"
    data.write_text("".join(f'{{"sensor":"s{i % 3}","ts":"2024-01-01T00:00:{i:02d}Z",'
                            f'"temp":{20 + i},"ok":true}}\n' for i in range(30)))
    run = subprocess.run([sys.executable, "-m", "cep.cli", "run", str(RULES), "--input",
                          str(data), "--output", str(tmp_path / "out.jsonl"), "--quiet",
                          "--engines", "2", "--master", "local[2]"],
                         env=strict, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "30 events" in run.stderr + run.stdout
