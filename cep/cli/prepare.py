"""``cep prepare``: the checkpoint file system of :mod:`cep.spark.jvm.local_fs`, then the
class archive of :mod:`cep.spark.jvm.archive` (made with the jar on the class path), so
that Spark starts seconds sooner (the install command runs it)."""

from __future__ import annotations

import argparse
import sys
import time

from cep.cli.errors import EXIT_RUN_ERROR
from cep.spark.jvm.archive import ArchiveError
from cep.spark.jvm.local_fs import LocalFsError, build_jar
from cep.spark.prepare import make_archive
from cep.tables import count, seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=prepare)


def prepare(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        print(f"cep: checkpoint file system {build_jar()}")
    except LocalFsError as err:  # runs still work, with Hadoop's own file system
        print(f"cep: {err}", file=sys.stderr)
    try:
        path = make_archive()
    except ArchiveError as err:
        print(f"cep: {err}", file=sys.stderr)
        return EXIT_RUN_ERROR
    print(f"cep: JVM class archive {path} ({count(path.stat().st_size / 2**20)} MiB) in "
          f"{seconds(time.perf_counter() - started)}")
    return 0
