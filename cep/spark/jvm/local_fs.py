"""Spark's checkpoint files without a forked process per file.

Without Hadoop's native library (pyspark ships none), Hadoop's local file system forks a
``chmod`` for every file it creates, and the FileContext API that Spark's checkpoints
use by default forks a ``readlink`` for every status it asks for. A 1M-event flights run
(4 batches, 2 engines) made 228 such processes (strace: 60 chmod, 168 readlink), each a
fork of the driver JVM on a batch's critical path: 20 small batches ran 1.07x as fast
without them (about 75 ms a batch on a quiet 2-core machine, 0.2 s on a busy one).

``NioLocalFileSystem.java`` (beside this module) is Hadoop's checksummed local file
system with permissions set through java.nio. Spark then writes its checkpoints through
the FileSystem API (``FileSystemBasedCheckpointFileManager``, Spark's own fallback for
file systems without FileContext: a temporary file renamed into place, atomic on a local
POSIX file system, as the offsets, commits and state files need).

``cep prepare`` compiles it with the JDK's ``javac`` into the user's cache, before it
makes the class archive, so the archive records the class path that runs will have (a
JVM refuses an archive made with another class path, and then starts seconds slower).
A jar is code, so it is trusted on the same terms as the archive (``cep.user_cache.is_private``). No
``javac``, no jar: runs use Hadoop's own classes, as before. Local masters only: on a
cluster the executors would need the jar as well.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

from cep.spark.jvm.cache import jdk_tool, spark_jars
from cep.user_cache import cache_dir, is_private

SOURCE = Path(__file__).with_name("NioLocalFileSystem.java")
FILE_SYSTEM_CLASS = "cep.hadoop.NioLocalFileSystem"
CHECKPOINT_MANAGER_CLASS = ("org.apache.spark.sql.execution.streaming.checkpointing."
                            "FileSystemBasedCheckpointFileManager")


class LocalFsError(Exception):
    """The jar could not be made; the message says why in one line."""


def jar_path() -> Path:
    """Where the jar for this source and these Spark jars lives."""
    digest = hashlib.sha256(SOURCE.read_bytes())
    for path in sorted(spark_jars().glob("hadoop-client-*.jar")):
        digest.update(f"{path.name}\0{path.stat().st_size}\n".encode())
    return cache_dir() / f"cep-local-fs-{digest.hexdigest()[:16]}.jar"


def build_jar() -> Path:
    """Compile the file system into a private jar in the cache (written whole, then
    renamed into place)."""
    javac = jdk_tool("javac")
    if javac is None:
        raise LocalFsError("no javac on PATH or JAVA_HOME: checkpoints keep Hadoop's own "
                           "local file system")
    final = jar_path()
    final.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(final.parent, 0o700)
    with tempfile.TemporaryDirectory(prefix="cep-local-fs-") as work:
        classes = Path(work) / "classes"
        made = subprocess.run(
            [str(javac), "--release", "17", "-nowarn", "-d", str(classes),
             "-cp", str(spark_jars() / "*"), str(SOURCE)],
            capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            last = (made.stderr.strip().splitlines() or ["no message"])[-1]
            raise LocalFsError(f"javac failed ({last}): checkpoints keep Hadoop's own "
                               "local file system")
        partial = final.with_name(f"{final.name}.{os.getpid()}.partial")
        with zipfile.ZipFile(partial, "w") as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        os.chmod(partial, 0o600)
        os.replace(partial, final)
    return final


def spark_settings() -> dict[str, str]:
    """The settings that put the file system under a local run's checkpoints, or none
    when there is no jar to trust."""
    path = jar_path()
    if not (path.is_file() and is_private(path) and is_private(path.parent)):
        return {}
    return {"spark.driver.extraClassPath": str(path),
            "spark.hadoop.fs.file.impl": FILE_SYSTEM_CLASS,
            "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_MANAGER_CLASS}
