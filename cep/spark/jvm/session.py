"""A SparkSession configured for cep's streaming engines, quiet unless asked.

Why each setting: a shuffle partition per engine, or per task slot on a local master
(``splitter/engine_labels.py``); the RocksDB state store that
``transformWithStateInPandas`` needs, its native memory capped and only the last 10
batches' state and logs kept (a run may be unbounded); no console progress bars or UI
(cep draws its own progress); no empty micro-batches; Arrow for pandas transfers; and a
log4j configuration at ERROR so Spark's start-up chatter stays hidden without --verbose.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.resources
import importlib.util
import logging
import os
import sys
import tempfile
import threading
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from cep.spark.jvm.archive import sharing_options
from cep.spark.jvm.local_fs import spark_settings as local_fs_settings
from cep.spark.jvm.worker_python import worker_python

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# The driver's JVM (in local mode also the executors') compiles with C1 only: C2's
# compiler threads took about 9 CPU seconds of a 40 s run on 2 cores, and C1-only runs
# were faster on every workload measured (flights 1M batches 29.3 -> 25.7 s, FSD 1M
# 46.5 -> 42.9 s, FSD 2.95M 56.2 -> 52.9 s). CEP_DRIVER_JAVA_OPTIONS replaces it, and
# the class archive of ``cep prepare`` (jvm_archive.py) that is otherwise added.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"

# On a cluster, an engine task never waits for a busy executor while another is idle.
# Spark prefers to run a stateful partition on the executor that last loaded its state
# store, and by default waits up to 3 s (``spark.locality.wait``) for it to be free.
# Where that executor also runs another engine, the second engine's task queued behind
# the first every batch while an executor idled: a job scaled from 2 to 4 engines after
# 2 nodes joined kept its partition 3 on executor 0, behind partition 0 (2.1-2.5 s of
# waiting a batch), and one joined executor ran no engine at all
# (bench/results/scale_midrun-placement.json, batches 20-23: 5.6 s batches where KG
# started at 4 engines ran 3.6 s, its 4 partitions one per executor). The partitions
# of engines that do not exist yet (a job started with room for more) load their stores
# on the executors there at the time, so every scale-out after nodes joined met this.
# At 0 a task whose executor is busy starts on an idle one at once: its engine is
# rebuilt there from the state store once (resident.py), and the next batches prefer
# that executor. A task whose preferred executor is free still runs there (Spark offers
# the most local level first), so a job with no more engines than executors keeps its
# engines where they are. A user's own ``spark.locality.wait`` (``spark_conf``) wins.
CLUSTER_SETTINGS = {"spark.locality.wait": "0s"}

QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log_config() -> str:
    path = Path(tempfile.gettempdir()) / "cep-log4j2-quiet.properties"
    if not path.exists() or path.read_text() != QUIET_LOG4J:
        path.write_text(QUIET_LOG4J)
    return str(path)


SPARK_LOG = Path(tempfile.gettempdir()) / "cep-spark.log"


def _launch_gateway(conf, verbose: bool):
    """Launch the JVM (PySpark's own launcher) with its output in ``SPARK_LOG`` unless
    ``verbose``: the JVM and every Python worker it forks inherit those streams, so
    their banners, warnings and prints go to the log, while this process's stdout (the
    events, by default) and stderr stay the user's, even while the JVM starts in the
    background (``start_in_background``), and a run that fails before it needs the JVM
    leaves no JVM holding its pipes. None when this process has a JVM already (PySpark
    keeps one per process)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # PySpark's one gateway per process
        return None
    with _no_python_data_source_lookup():
        if verbose:
            return launch_gateway(conf)
        proxy_errors_to_log()
        with open(SPARK_LOG, "ab") as log:
            return launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})


def proxy_errors_to_log() -> None:
    """Send py4j's record of an exception in a Python function the JVM calls (cep's
    per-batch sink) to ``SPARK_LOG``, unless the application configured logging.

    Why: py4j logs such an exception at ERROR, with the whole Java trace, before it hands
    it back to the JVM; the query then stops and cep says what happened in one line, or
    starts the query again (``runtime.run_restarting``). With no handler anywhere, Python
    prints that record on stderr, so a lost executor put pages of trace before cep's
    line. In the log it sits beside the JVM's own account of the same failure. An
    application with handlers of its own (or ``--verbose``) gets the record as before."""
    logger = logging.getLogger("py4j.clientserver")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.FileHandler(SPARK_LOG, delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(handler)


# Not a command anywhere: the JVM's PYSPARK_DRIVER_PYTHON (see below).
NO_LOOKUP_PYTHON = "cep-skips-the-python-data-source-lookup"


@contextlib.contextmanager
def _no_python_data_source_lookup() -> Iterator[None]:
    """Launch the JVM with a PYSPARK_DRIVER_PYTHON that is no command.

    Spark's JVM reads that variable for one thing only (its ``PythonUtils.defaultPythonExec``
    feeds ``DataSourceManager`` alone, Spark 4.0-4.3): when it names a command, the first
    data source registration starts a Python daemon and worker that import every
    ``pyspark_*`` package on the path, to register their data sources. cep registers
    its own source and needs none of theirs; the lookup cost 1.1-1.9 s before every
    run's first batch. The Python processes that plan and run the tasks take their
    interpreter from PYSPARK_PYTHON, which stays as it is. The variable goes back to its
    value in this process once the JVM runs (launch_gateway copies the environment)."""
    before = os.environ.get("PYSPARK_DRIVER_PYTHON")
    os.environ["PYSPARK_DRIVER_PYTHON"] = NO_LOOKUP_PYTHON
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYSPARK_DRIVER_PYTHON", None)
        else:
            os.environ["PYSPARK_DRIVER_PYTHON"] = before


def is_local_master(master: str) -> bool:
    return master.startswith("local")


# cep's package directory, found from this file (cep/spark/jvm/session.py) rather than by
# importing the top package, which this module sits below; the other packages of
# ``CODE_PACKAGES`` are installed beside it
CEP_PACKAGE = Path(__file__).resolve().parents[2]

# The top-level packages of cep's own code (the project card's layout): ``cep`` and the
# rule language, the Splitter and the key-state migration beside it.
CODE_PACKAGES = ("cep", "grammar", "splitter", "migration")


def package_directory(name: str) -> Path:
    """Where a top-level package of cep's code lives, found by the import system's
    finders rather than by importing it (this module sits below ``cep``'s top)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"cep's package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def add_package(archive: zipfile.ZipFile, package: Path, suffixes: tuple[str, ...]) -> None:
    """The files of ``package`` (a directory) with these suffixes, under its name."""
    for path in sorted(package.rglob("*")):
        if path.suffix in suffixes:
            archive.write(path, (Path(package.name) / path.relative_to(package)).as_posix())


def code_archive(directory: Path) -> Path:
    """A zip of cep's own code for executors (``addPyFile``): the packages of
    ``CODE_PACKAGES`` with the grammar (``grammar/epl.lark``), and the example rules as
    the ``cep.rules`` package data they are in the wheel. Executors then need cep's
    third-party dependencies only."""
    target = directory / "cep-code.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in CODE_PACKAGES:
            add_package(archive, package_directory(name), (".py", ".lark"))
        archive.writestr("cep/rules/__init__.py", "")
        for entry in importlib.resources.files("cep.rules").iterdir():
            if entry.name.endswith(".epl"):
                archive.writestr(f"cep/rules/{entry.name}", entry.read_bytes())
    return target


def ship_code(spark) -> None:
    """Send cep's code to the executors of a cluster (not needed on ``local[…]``, whose
    workers run this very Python, nor when ``CEP_SHIP_CODE=0``)."""
    context = spark.sparkContext
    if (is_local_master(context.master) or os.environ.get("CEP_SHIP_CODE") == "0"
            or context.applicationId in _SHIPPED):
        return
    directory = Path(tempfile.mkdtemp(prefix="cep-code-"))
    context.addPyFile(str(code_archive(directory)))
    _SHIPPED.add(context.applicationId)


_SHIPPED: set[str] = set()  # applications whose executors have cep's code already


def ship_udf_files(spark, paths: tuple[str, ...]) -> None:
    """Send the modules of a run's user functions to every Python worker, the way PySpark
    ships code (``addPyFile``: a worker puts them on its ``sys.path`` before a task
    runs), also on a local master, whose workers do not share the driver's
    ``sys.path``: a module's ``.py`` file as it is, a package as a zip of its ``.py``
    files. A file already shipped to this application is not sent again (Spark refuses
    a second file of the same name)."""
    context = spark.sparkContext
    for path in paths:
        key = (context.applicationId, path)
        if key in _UDF_SHIPPED:
            continue
        source = Path(path)
        if source.is_dir():
            directory = Path(tempfile.mkdtemp(prefix="cep-udf-"))
            target = directory / f"{source.name}.zip"
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
                add_package(archive, source, (".py",))
            context.addPyFile(str(target))
        else:
            context.addPyFile(str(source))
        _UDF_SHIPPED.add(key)


_UDF_SHIPPED: set[tuple[str, str]] = set()  # (application, path) already shipped


def spark_session(master: str = "local[*]", partitions: int = 5, verbose: bool = False,
                  app_name: str = "cep", conf: Mapping[str, str] | None = None):
    """Get or create the session (the one ``start_in_background`` began, if it was begun
    for the same master); ``partitions`` sets the shuffle partitions for new queries
    (the engines', ``splitter.engine_labels.engine_partitions``).
    ``conf``: Spark settings over cep's own, for a session this call creates (a
    cluster's driver address and executor sizes: ``cluster.driver_conf``)."""
    spark = None
    if _starting:  # wait for it whatever it was for: one JVM per process
        key, future = _starting.pop()
        started = future.result()
        if key == (master, verbose, app_name) and not conf:
            spark = started
    if spark is None:
        spark = _get_or_create(master, verbose, app_name, conf or {})
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    ship_code(spark)
    return spark


# the session a background thread is creating, and the (master, verbose, app name) it
# is for: at most one
_starting: list[tuple[tuple[str, bool, str], concurrent.futures.Future]] = []


def start_in_background(master: str = "local[*]", verbose: bool = False,
                        app_name: str = "cep") -> None:
    """Begin creating the session in a daemon thread; ``spark_session`` takes it.

    The JVM takes about 2 s to start, on its own core, while ``cep run`` imports its
    commands, compiles the rules, checks its inputs and starts MongoDB on this one:
    started first, it is ready (or nearly) when the run needs it. A run that fails
    before then exits as it would have, and the JVM with it (it ends when its stdin pipe
    from this process closes)."""
    if _starting:
        return
    future: concurrent.futures.Future = concurrent.futures.Future()

    def create() -> None:
        try:
            future.set_result(_get_or_create(master, verbose, app_name, {}))
        except BaseException as err:  # handed to whoever takes the session
            future.set_exception(err)

    _starting.append(((master, verbose, app_name), future))
    threading.Thread(target=create, name="cep-spark-start", daemon=True).start()


def _get_or_create(master: str, verbose: bool, app_name: str, conf: Mapping[str, str]):
    # pandas' FutureWarnings from Spark's Arrow path would flood worker stderr
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning,ignore::DeprecationWarning")
    if not verbose:
        # workers print a line per stateful task; the JVM's banner goes to the log too
        SPARK_LOG.write_text("")
    if is_local_master(master):
        os.environ.setdefault("PYSPARK_PYTHON", worker_python())
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = {**_settings(verbose, is_local_master(master)), **conf}
    spark_conf = (SparkConf().setMaster(master).setAppName(app_name)
                  .setAll(list(settings.items())))
    # pyspark warns on every pandas 3 call; the pinned versions are the tested ones
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    gateway = _launch_gateway(spark_conf, verbose)
    if gateway is not None:  # a new JVM: its context, which the session below takes
        SparkContext(conf=spark_conf, gateway=gateway)
    spark = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    return spark


def _settings(verbose: bool, local: bool) -> dict[str, str]:
    settings = {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        # RocksDB's memtables and block cache, for every engine's store, within one cap
        "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
        "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256",
        # a commit writes the batch's changes, not a snapshot of the whole store
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # an unbounded run keeps 10 batches of state and logs, not Spark's default 100
        "spark.sql.streaming.minBatchesToRetain": "10",
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "false",
        # Spark marks the input tasks' Python workers (not the engines') with this
        # setting's environment variable, and workers of different environments come
        # from different pools: off, an engine task reuses its input task's warm worker
        # (pandas, pyarrow and cep imported) instead of starting a new one, about 0.6 s
        # a batch. Errors are reported by cep itself (a one-line SparkRunError).
        "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": os.environ.get("CEP_DRIVER_MEMORY", "4g"),
    }
    if local:  # checkpoints without a forked chmod or readlink per file (local_fs.py)
        settings.update(local_fs_settings())
    else:
        settings.update(CLUSTER_SETTINGS)
    driver_options = os.environ.get("CEP_DRIVER_JAVA_OPTIONS")
    if driver_options is None:  # cep's own options, and the class archive if there is one
        driver_options = f"{DRIVER_JAVA_OPTIONS} {sharing_options()}"
    if not verbose:
        option = f"-Dlog4j2.configurationFile=file:{_quiet_log_config()}"
        driver_options = f"{driver_options} {option}"
        settings["spark.executor.extraJavaOptions"] = option
    settings["spark.driver.extraJavaOptions"] = driver_options.strip()
    return settings
