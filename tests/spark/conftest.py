"""Shared by the Spark tests: one local session per module, example loading, and runs
whose events are read back from their output directory."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.spark_runs import ROOT, reference, run_and_read

from cep.spark.jvm.session import spark_session
from grammar.compile import compile_file


@pytest.fixture(scope="module")
def spark():
    return spark_session("local[2]", 5)


@pytest.fixture
def example() -> Callable:
    """``example(rule, data)``: the compiled rule file, its input path and the reference
    evaluator's events (``data`` is relative to tests/data)."""

    def load(rule: str, data: str):
        module = compile_file(ROOT / "rules" / rule)
        path = str(ROOT / "tests" / "data" / data)
        return module, path, reference(module, path)

    return load


@pytest.fixture
def spark_events() -> Callable:
    """``spark_events(module, source, **options)``: Spark's events (reference order) for a
    compiled module over ``source`` (a path, or ``{stream: path}``), with ``RunConfig``'s
    options (``engines``, ``batch_size``, ``strategy``, ``threshold``, ...). Tests of new
    language constructs use this and :func:`reference_events` so they keep working whatever
    the runner's own signature becomes."""
    return lambda module, source, **options: run_and_read(module, source, **options)[1]


@pytest.fixture
def reference_events() -> Callable:
    """``reference_events(module, source)``: the reference evaluator's events."""
    return reference
