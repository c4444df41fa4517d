"""Shared by the Spark tests: one local session per module, and example loading."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.lang.compile import compile_file
from cep.reference import run_reference
from cep.spark.session import spark_session

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module")
def spark():
    return spark_session("local[2]", 5)


@pytest.fixture
def example() -> Callable:
    """``example(rule, data)``: the compiled rule file, its input tables and the
    reference evaluator's events (``data`` is relative to tests/data)."""

    def load(rule: str, data: str):
        module = compile_file(ROOT / "rules" / rule)
        tables = load_inputs(module, [str(ROOT / "tests" / "data" / data)], None).tables
        return module, tables, output_records(run_reference(module, tables))

    return load


@pytest.fixture
def spark_events() -> Callable:
    """``spark_events(module, source, **options)``: Spark's events (reference order) for a
    compiled module over ``source`` (a path, or ``{stream: path}``), with ``run_on_spark``'s
    options (``engines``, ``batch_size``, ``strategy``, ``threshold``, ...). Tests of new
    language constructs use this and :func:`reference_events` so they keep working whatever
    the runner's own signature becomes."""
    from cep.spark.runtime import run_on_spark

    def run(module, source, **options):
        specs = ([f"{k}={v}" for k, v in source.items()] if isinstance(source, dict)
                 else [str(source)])
        tables = load_inputs(module, specs, None).tables
        options.setdefault("master", "local[2]")
        options.setdefault("progress", False)
        return run_on_spark(module, tables, **options).records

    return run


@pytest.fixture
def reference_events() -> Callable:
    """``reference_events(module, source)``: the reference evaluator's events."""

    def run(module, source):
        specs = ([f"{k}={v}" for k, v in source.items()] if isinstance(source, dict)
                 else [str(source)])
        return output_records(run_reference(module, load_inputs(module, specs, None).tables))

    return run
