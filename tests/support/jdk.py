"""Whether this machine can compile Java, read from the environment itself: the skips
and expectations of the tests of ``cep prepare`` must not come from the lookup they test
(``cep.spark.jvm.cache.jdk_tool``, tested on its own in ``tests/spark/test_jvm_cache.py``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def javac_here() -> bool:
    """A ``javac`` that runs, where Spark's JDK is: JAVA_HOME's when that is set (a
    Java home that is a JRE has none), else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    javac = Path(home, "bin", "javac") if home else shutil.which("javac")
    return javac is not None and os.access(javac, os.X_OK)
