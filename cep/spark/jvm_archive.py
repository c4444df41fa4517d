"""A class-data-sharing archive of the driver JVM's classes: Spark starts seconds sooner.

A local run spends several seconds before its first batch loading and verifying the
classes of Spark, its SQL engine, streaming, RocksDB and Arrow (tens of thousands, one
by one from the jars). Java's application class-data sharing (AppCDS, JEP 350) maps
them from an archive instead. ``cep prepare`` (which the README's install command runs)
makes the archive once: it runs a small cep streaming query in a JVM started with
``-XX:ArchiveClassesAtExit`` and lets that JVM exit normally, which writes the archive.
Every later driver JVM maps it with ``-XX:SharedArchiveFile`` (flights, 3.3M events on
2 cores: about 19 -> 15 s).

The archive is code to the JVM, so it is used only from the user's own cache directory
(``$XDG_CACHE_HOME/cep`` or ``~/.cache/cep``): the file and its directory must belong to
this user and be writable by no one else. Its name carries a digest of the Java binary
and Spark's jars; the JVM itself also refuses an archive of other jars and then runs
without one (``-Xshare:auto``), so an upgrade costs speed until the next ``cep
prepare``, never correctness.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

#: JVM options that keep the class-sharing messages out of a run's output
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


class ArchiveError(Exception):
    """The archive could not be made; the message says why in one line."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cep"


def spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def jdk_tool(name: str) -> Path | None:
    """A tool of the JDK that runs Spark (``java``, ``javac``): JAVA_HOME's if that is
    set, else PATH's; None where there is none (``javac`` on a machine with a JRE only)."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / name if home else shutil.which(name)
    return Path(found) if found and Path(found).exists() else None


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


def is_private(path: Path) -> bool:
    """Owned by this user and writable by no one else (group and others)."""
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def sharing_options() -> str:
    """The options that map the archive, or "" when there is none to trust."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    if not (is_private(path) and is_private(path.parent)):
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def build_archive(java_options: str) -> Path:
    """Make the archive: a small query in a JVM that writes its classes when it exits.

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
        gateway = _train()
        gateway.proc.stdin.close()  # the JVM exits on end of input, writing the archive
        code = gateway.proc.wait(timeout=300)
        if code != 0 or not partial.is_file():
            raise ArchiveError(f"the JVM exited with status {code} without an archive")
        os.chmod(partial, 0o600)
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    return final


def _train():
    """Run a two-batch windowed query over a small file (every part of a run's data
    path: the input source, the shuffle, the stateful engines with RocksDB and the
    per-batch sink); stop Spark and hand back its gateway."""
    from cep.lang.compile import compile_text
    from cep.run_config import Output, RunConfig
    from cep.spark.runtime import run_on_spark
    from cep.spark.session import spark_session

    rules = ("CREATE SCHEMA Reading (sensor string, ts timestamp, temp double);\n"
             "SELECT sensor, avg(temp) AS mean FROM Reading#groupwin(sensor)#length(5)\n"
             "HAVING avg(temp) > 20;\n")
    with tempfile.TemporaryDirectory(prefix="cep-prepare-") as work:
        data = Path(work) / "readings.jsonl"
        data.write_text("".join(
            f'{{"sensor":"s{i % 7}","ts":{1_700_000_000_000 + i},"temp":{i % 40}}}\n'
            for i in range(2000)))
        run_on_spark(compile_text(rules), RunConfig(
            {"Reading": str(data)}, output=Output(str(Path(work) / "out.jsonl")), engines=2,
            batch_size=1000, master="local[2]", progress=False))
    spark = spark_session("local[2]", 2)
    gateway = spark.sparkContext._gateway
    spark.stop()
    return gateway
