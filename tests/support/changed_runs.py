"""The reference evaluator's events over what a run directory says happened: the input
log the run built and the rule changes it applied (``rules/applied.json``), so a Spark
run whose rules changed while it ran is compared with the reference event for event."""

from __future__ import annotations

from pathlib import Path

from cep.engine.output import output_records
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import InputLog
from cep.io.inputs import load_segments
from cep.io.rule_changes import ChangeLog, RuleBook
from cep.reference import Deployed, log_watermark, reference_run


def deployed(run: Path) -> list[Deployed]:
    """The versions the run applied, each with the first seq it saw and its module."""
    book = RuleBook.of_run(run)
    applied, _ = ChangeLog(run).applied()
    every = book.versions(applied[-1].version if applied else 0)
    return [Deployed(a.version, a.first_seq, every[a.version].module) for a in applied]


def log_reference(run: Path, final: bool = True, changes: bool = True,
                  late: str = "process") -> list[dict]:
    """The reference's events over the run's input log, with the run's rule changes
    (or, ``changes=False``, with the rules it started with only); ``final``: the input
    ended (a bounded run), else time stops at its last event (a stopped --follow run);
    ``late``: the run's late policy."""
    module = RuleBook.of_run(run).start
    log = InputLog(run / "input", {}, follow=True)
    with DeadLetter(None) as dead:
        loaded = load_segments(module, [log.segments[o] for o in sorted(log.segments)], dead)
    clock = log_watermark(module, loaded.clock, loaded.end_seq, final)
    return output_records(reference_run(module, loaded.tables, watermark=clock, late=late,
                                        changes=deployed(run) if changes else None).output)
