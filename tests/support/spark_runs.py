"""Runs on Spark whose events are read back from their output directory, and the
reference evaluator's events for the same rules and input."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cep.engine.output import output_records
from cep.io.inputs import load_inputs, parse_input_specs
from cep.reference import run_reference
from cep.spark.delivery import read_output
from cep.spark.event_parts import EventParts
from cep.spark.runtime import Output, SparkRun, run_on_spark

ROOT = Path(__file__).resolve().parent.parent.parent


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
