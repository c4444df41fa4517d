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

SIGINT is the stop request every command documents (a run finishes its batch in flight,
``cep ui`` ends), so the command takes it even where it was inherited ignored: a shell
without job control (a script, ``nohup``, many schedulers) starts ``cep ... &`` with
SIGINT ignored, and ``kill -INT`` of that job then did nothing. What it loses is the
old convention that such a job ignores a terminal's Ctrl-C: a Ctrl-C that reaches it is
meant for it (the same as the foreground run, it ends cleanly and a ``--checkpoint`` run
resumes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from cep.cli.dispatch import run_command
from cep.cli.runner_options import spark_to_start


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    with interruptible(), quiet_broken_pipe():
        spark = spark_to_start(arguments)
        if spark is not None:
            from cep.spark.jvm.session import start_in_background

            start_in_background(*spark)
        return run_command(arguments)
    return EXIT_BROKEN_PIPE  # the reader left: quiet_broken_pipe ended the command


EXIT_BROKEN_PIPE = 1


@contextlib.contextmanager
def quiet_broken_pipe() -> Iterator[None]:
    """A reader that stops reading (``cep run … | head``) ends the command without a
    traceback: standard output goes to /dev/null, so that the interpreter's own flush at
    exit does not raise again (the recipe of Python's signal documentation)."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` while the command runs, also where it was
    inherited ignored (see the module's docstring); the disposition before is restored
    after, for callers of :func:`main` in a process of their own."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":  # also run as a file, e.g. by spark-submit
    sys.exit(main())
