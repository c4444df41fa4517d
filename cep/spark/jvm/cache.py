"""Where cep keeps the files it makes for Spark's JVM, whether to trust them, and where
the JDK's tools are.

``cep prepare`` makes two such files in the user's cache (``$XDG_CACHE_HOME/cep`` or
``~/.cache/cep``): the class-data-sharing archive (``jvm_archive.py``) and the jar of
the checkpoint file system (``local_fs.py``). Both are code to the JVM, so both are used
only when they and their directory belong to this user and no one else can write them
(``is_private``, from :mod:`cep.user_cache`). A leaf that both import: neither module
imports the other.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def jdk_tool(name: str) -> Path | None:
    """A tool of the JDK that runs Spark (``java``, ``javac``): JAVA_HOME's if that is
    set, else PATH's; None where there is none (``javac`` on a machine with a JRE only)."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / name if home else shutil.which(name)
    return Path(found) if found and Path(found).exists() else None

