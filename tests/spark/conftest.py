"""Shared by the Spark tests: one local session per module, example loading, and runs
whose events are read back from their output directory."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from cep.engine.output import output_records
from cep.io.inputs import load_inputs, parse_input_specs
from cep.lang.compile import compile_file
from cep.reference import run_reference
from cep.spark.delivery import read_output
from cep.spark.parts import EventParts
from cep.spark.runtime import Output, SparkRun, run_on_spark
from cep.spark.session import spark_session

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module")
def spark():
    return spark_session("local[2]", 5)


def _specs(source) -> list[str]:
    if isinstance(source, dict):
        return [f"{k}={v}" for k, v in source.items()]
    return [str(source)]


def run_and_read(module, source, **options) -> tuple[SparkRun, list[dict]]:
    """Run on Spark with the events written to a temporary directory; the run and its
    events, read back in reference order."""
    options.setdefault("master", "local[2]")
    options.setdefault("progress", False)
    with tempfile.TemporaryDirectory(prefix="cep-test-out-") as out:
        run = run_on_spark(module, parse_input_specs(module, _specs(source)),
                           output=Output(out), **options)
        order = {name: i for i, name in enumerate(module.outputs)}
        return run, read_output(EventParts(out), order)


def reference(module, source) -> list[dict]:
    return output_records(run_reference(module, load_inputs(module, _specs(source),
                                                            None).tables))


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
    compiled module over ``source`` (a path, or ``{stream: path}``), with ``run_on_spark``'s
    options (``engines``, ``batch_size``, ``strategy``, ``threshold``, ...). Tests of new
    language constructs use this and :func:`reference_events` so they keep working whatever
    the runner's own signature becomes."""
    return lambda module, source, **options: run_and_read(module, source, **options)[1]


@pytest.fixture
def reference_events() -> Callable:
    """``reference_events(module, source)``: the reference evaluator's events."""
    return reference
