"""Runs on Spark whose events are read back from their output directory, and the
reference evaluator's events for the same rules and input."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import log_watermark, reference_run
from cep.run import run
from cep.run_config import Output, RunConfig, RunResult
from cep.spark.run_dir import next_batch

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


def wait_for_commit(workdir: Path, batch: int, record: dict, wait_s: float = 120.0) -> None:
    """Return once Spark committed ``batch`` of the run in ``workdir`` (its checkpoint,
    ``run_dir.next_batch``); raise if it did not within ``wait_s`` or the run ended
    first (``record["ended"]``, set by :func:`run_beside` once the run returned)."""
    deadline = time.monotonic() + wait_s
    while next_batch(workdir) <= batch:
        if record.get("ended") or time.monotonic() > deadline:
            raise TimeoutError(f"batch {batch} did not commit")
        time.sleep(0.02)


def run_beside(fault: Callable[[], None], record: dict, module, source,
               wait_s: float = 120.0, **options) -> tuple[RunResult, list[dict]]:
    """:func:`run_and_read` while ``fault`` runs in a thread of its own (it kills,
    crashes or scales what the run stands on). ``record`` is the two threads' notes:
    ``ended`` is set once the run returned, and a fault that raised leaves ``error``,
    which fails the test."""
    def guarded() -> None:
        try:
            fault()
        except BaseException as err:  # the fault's thread: the assertion below reports it
            record["error"] = repr(err)

    thread = threading.Thread(target=guarded, daemon=True)
    thread.start()
    try:
        result = run_and_read(module, source, **options)
    finally:
        record["ended"] = True
        thread.join(wait_s)
    assert "error" not in record, record.get("error")
    return result
