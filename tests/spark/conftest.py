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
