"""Runs on Spark whose events are read back from their output directory, and the
reference evaluator's events for the same rules and input."""

from __future__ import annotations

from pathlib import Path

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import log_watermark, reference_run
from cep.run import run
from cep.run_config import Output, RunConfig, RunResult

ROOT = Path(__file__).resolve().parent.parent.parent


def _specs(source) -> list[str]:
    if isinstance(source, dict):
        return [f"{k}={v}" for k, v in source.items()]
    return [str(source)]


def run_and_read(module, source, **options) -> tuple[RunResult, list[dict]]:
    """Run on Spark with the events handed back (:class:`RunConfig`'s ``options``); the
    run and its events, in reference order."""
    options.setdefault("master", "local[2]")
    options.setdefault("progress", False)
    result = run(module, RunConfig(_specs(source), output=Output(collect=True), **options))
    assert result.records is not None
    return result, result.records


def reference(module, source) -> list[dict]:
    """The reference evaluator's events over ``source``, with the watermark of its input
    log, as ``cep run --runner local`` computes it (a clock per Kafka partition)."""
    loaded = load_inputs(module, _specs(source), None)
    clock = log_watermark(module, loaded.clock, loaded.end_seq)
    return output_records(reference_run(module, loaded.tables, watermark=clock).output)
