"""A class-data-sharing archive of the driver JVM's classes: Spark starts seconds sooner.

A local run spends several seconds before its first batch loading and verifying the
classes of Spark, its SQL engine, streaming, RocksDB and Arrow (tens of thousands, one
by one from the jars). Java's application class-data sharing (AppCDS, JEP 350) maps
them from an archive instead. ``cep prepare`` (which the README's install command runs)
makes the archive once: it runs a small cep streaming query (``prepare.py``) in a JVM
started with ``-XX:ArchiveClassesAtExit`` and lets that JVM exit normally, which writes
the archive. Every later driver JVM maps it with ``-XX:SharedArchiveFile`` (flights, 3.3M
events on 2 cores: about 19 -> 15 s).

The archive is code to the JVM, so it is used only from the user's own cache directory
(``jvm_cache.py``): the file and its directory must belong to this user and be writable
by no one else. Its name carries a digest of the Java binary
and Spark's jars; the JVM itself also refuses an archive of other jars and then runs
without one (``-Xshare:auto``), so an upgrade costs speed until the next ``cep
prepare``, never correctness.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cep.spark.jvm.cache import jdk_tool, spark_jars
from cep.user_cache import cache_dir, is_private

#: JVM options that keep the class-sharing messages out of a run's output
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


class ArchiveError(Exception):
    """The archive could not be made; the message says why in one line."""


def _java() -> Path | None:
    java = jdk_tool("java")
    return java.resolve() if java else None


def archive_path() -> Path | None:
    """Where the archive for this Java and these Spark jars lives (None: no Java)."""
    java = _java()
    if java is None:
        return None
    digest = hashlib.sha256()
    for path in [java, *sorted(spark_jars().glob("*.jar"))]:
        info = path.stat()
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return cache_dir() / f"spark-classes-{digest.hexdigest()[:16]}.jsa"


def sharing_options() -> str:
    """The options that map the archive, or "" when there is none to trust."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    if not (is_private(path) and is_private(path.parent)):
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def build_archive(java_options: str, train: Callable[[], Any]) -> Path:
    """Make the archive: ``train`` runs a small query in a JVM that writes its classes
    when it exits, and hands back that JVM's py4j gateway (``prepare.py``).

    Runs in the calling process, which must not have started Spark yet (the JVM's
    options are fixed when it starts). The archive is written to a temporary name and
    renamed into place only once the JVM has exited normally."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        raise ArchiveError("Spark is already running in this process: run cep prepare alone")
    final = archive_path()
    if final is None:
        raise ArchiveError("no java on PATH or JAVA_HOME: Spark cannot run")
    final.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(final.parent, 0o700)
    partial = final.with_name(f"{final.name}.{os.getpid()}.partial")
    os.environ["CEP_DRIVER_JAVA_OPTIONS"] = (
        f"{java_options} -XX:ArchiveClassesAtExit={partial} {QUIET}")
    try:
        gateway = train()
        gateway.proc.stdin.close()  # the JVM exits on end of input, writing the archive
        code = gateway.proc.wait(timeout=300)
        if code != 0 or not partial.is_file():
            raise ArchiveError(f"the JVM exited with status {code} without an archive")
        os.chmod(partial, 0o600)
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    return final
