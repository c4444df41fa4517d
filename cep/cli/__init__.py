"""The ``cep`` command line: ``cep check FILE``, ``cep run FILE --input SRC``, ``cep produce
TOPIC_URI --input SRC`` and the strategy tools.

Exit status: 0 success, 2 a rule error or bad usage (the message names file:line:col),
1 a run that failed for another reason (unreadable input, ...). Rule errors never show a
Python traceback.

A command imports what it uses and nothing else (:mod:`cep.cli.dispatch` loads one
command's module), so ``cep --help`` and ``cep check`` never load pandas, pyarrow or
Spark. For ``cep run`` on Spark this entry starts Spark's JVM in the background first
(about 2 s on a core of its own), and only then imports the command (numpy, pandas,
pyarrow, pymongo, pyspark's driver side, about 0.7 s) and compiles the rules, which the
JVM's start then overlaps.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cep.cli.dispatch import run_command
from cep.cli.runner_options import spark_to_start


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    spark = spark_to_start(arguments)
    if spark is not None:
        from cep.spark.session import start_in_background

        start_in_background(*spark)
    return run_command(arguments)


if __name__ == "__main__":  # also run as a file, e.g. by spark-submit
    sys.exit(main())
