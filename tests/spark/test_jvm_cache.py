"""Where ``cep prepare``'s files live, when they are trusted, and which JDK tools a run
uses (``cep.spark.jvm.cache``): JAVA_HOME's when it is set, else PATH's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cep.spark.jvm.cache import jdk_tool
from cep.user_cache import cache_dir, is_private


def _tool(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    return tool


def test_java_home_s_tool_is_taken_before_path_s(tmp_path, monkeypatch):
    home_javac = _tool(tmp_path / "jdk" / "bin", "javac")
    _tool(tmp_path / "path", "javac")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert jdk_tool("javac") == home_javac


def test_a_java_home_without_the_tool_has_none_whatever_path_has(tmp_path, monkeypatch):
    _tool(tmp_path / "jre" / "bin", "java")  # a JRE: java, no javac
    _tool(tmp_path / "path", "javac")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert jdk_tool("javac") is None
    assert jdk_tool("java") == tmp_path / "jre" / "bin" / "java"


@pytest.mark.parametrize("java_home", [None, ""])
def test_without_java_home_the_tool_comes_from_path(tmp_path, monkeypatch, java_home):
    if java_home is None:
        monkeypatch.delenv("JAVA_HOME", raising=False)
    else:
        monkeypatch.setenv("JAVA_HOME", java_home)
    (tmp_path / "empty").mkdir()
    javac = _tool(tmp_path / "second", "javac")
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}:{tmp_path / 'second'}")
    assert jdk_tool("javac") == javac
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert jdk_tool("javac") is None


def test_the_cache_is_xdg_s_else_the_home_s(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "cep"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "cep"


@pytest.mark.parametrize(("mode", "private"), [(0o600, True), (0o700, True), (0o644, True),
                                               (0o620, False), (0o602, False),
                                               (0o666, False)])
def test_private_means_no_one_else_may_write(tmp_path, mode, private):
    path = tmp_path / "file"
    path.write_bytes(b"")
    path.chmod(mode)
    assert is_private(path) is private


def test_a_file_of_another_user_is_not_private(tmp_path, monkeypatch):
    path = tmp_path / "file"
    path.write_bytes(b"")
    path.chmod(0o600)
    monkeypatch.setattr(os, "getuid", lambda: path.stat().st_uid + 1)
    assert not is_private(path)
