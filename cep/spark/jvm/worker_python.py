"""The Python that a local master's workers run: this interpreter, minus Spark's zips
and its core jar.

Spark puts ``pyspark.zip`` and the py4j zip first on every Python worker's
``PYTHONPATH``. Python never caches bytecode for modules imported from a zip, so each of
the dozen worker processes a run starts (data source lookup and planning, the streaming
source runner, the state driver, one per task slot and module) compiled pyspark's
sources again: 3.1 CPU seconds of a 26 s flights run on 2 cores, most of them before the
first batch could start. A pip-installed pyspark has the same package, compiled, in
site-packages, and a local master's workers run the driver's interpreter, so the wrapper
drops the two zips from ``PYTHONPATH`` and the workers import the compiled copies.

Spark also puts its core jar there (``PythonUtils.sparkPythonPath``: the jar of its own
classes, 5,973 entries and no Python). Every new worker's ``setup_spark_files`` calls
``importlib.invalidate_caches()``, which has the zip importer read the jar's directory
again: 65 ms a time on a full core, for every task whose worker was forked for it.
Nothing is imported from it, so the wrapper drops it too.

Only for local masters and only when the user has not chosen ``PYSPARK_PYTHON``: the
executors of a cluster may have pyspark only in Spark's zip.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

SCRIPT = """\
#!/usr/bin/env bash
# Written by cep (cep/spark/jvm/worker_python.py): {python} without Spark's zips on
# PYTHONPATH, so workers import the compiled pyspark and py4j of site-packages, and
# without Spark's core jar, which holds no Python but costs a directory read per task.
ZIPS=({zips})
path=":$PYTHONPATH:"
for zip in "${{ZIPS[@]}}"; do path="${{path//":$zip:"/:}}"; done
path="${{path#:}}"
export PYTHONPATH="${{path%:}}"
exec {python} "$@"
"""


def spark_zips() -> list[str]:
    """Spark's zips whose package this interpreter imports from site-packages, and its
    core jar."""
    pyspark = importlib.util.find_spec("pyspark")
    if pyspark is None or pyspark.origin is None or not Path(pyspark.origin).is_file():
        return []  # pyspark itself from a zip (or not here): nothing to gain
    lib = Path(pyspark.origin).parent / "python" / "lib"
    zips = [str(p) for p in sorted(lib.glob("pyspark.zip"))]
    py4j = importlib.util.find_spec("py4j")
    if py4j is not None and py4j.origin is not None and Path(py4j.origin).is_file():
        zips += [str(p) for p in sorted(lib.glob("py4j-*-src.zip"))]
    jars = Path(pyspark.origin).parent / "jars"
    return zips + [str(p) for p in sorted(jars.glob("spark-core_*.jar"))]


@functools.cache
def worker_python() -> str:
    """Path of the wrapper script (made once per process, in a private directory that
    goes when the process exits), or this interpreter when there is nothing to drop."""
    zips = spark_zips()
    if not zips:
        return sys.executable
    directory = Path(tempfile.mkdtemp(prefix="cep-python-"))  # mode 0700: ours alone
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    script = directory / "python"
    script.write_text(SCRIPT.format(python=shlex.quote(sys.executable),
                                    zips=" ".join(shlex.quote(z) for z in zips)))
    script.chmod(0o700)
    return str(script)
