"""Which rule set version each micro-batch runs: decided where Spark plans, recorded
before the batch's output can commit, the same after ``kill -9`` and restart.

The planner (``source.InputReader.latestOffset``) gives the end offset of batch B the
version ``"rules": v`` of the newest change written to the change log
(``cep.io.rule_changes``) by then. Spark writes that offset to its offsets log (its
write-ahead log) before the batch runs, and a replayed batch is planned again from the
logged offsets, never anew: so a change applies at exactly one batch, the first planned
after it was written, however often that batch runs. ``applied.json`` records it for
people and the live view (version, batch, first seq), rewritten by the planning of each
batch that starts a version, dropping any record of a batch that a crash left unlogged
(it is planned again, with the changes written by then).

Later stages of an INSERT INTO chain process in batch B what the stage before made of
batch B-1's input: stage s runs the version of batch B - s, so every stage sees a change
at the same input event, as the reference evaluator does.
"""

from __future__ import annotations

import sys

from cep.io.rule_changes import Applied, ChangeLog, RuleBook, running_rules, version_at
from grammar.rule_set import output_order, rule_changes


class RulePlanner:
    """The planning side of a job's rule versions."""

    def __init__(self, book: RuleBook) -> None:
        self.book = book
        self.log = ChangeLog(book.workdir)

    def pending(self, running: int) -> bool:
        """A change written since version ``running``: worth a batch of its own, even
        without new input (so that ``cep rules`` soon says it runs)."""
        return self.book.latest() > running

    def plan(self, batch: int, running: int, first_seq: int) -> int:
        """The version of batch ``batch``, whose start offset ran ``running``: the newest
        change written, recorded as applied at this batch (and its refused changes)."""
        version = max(running, self.book.latest())
        applied, refused = self.log.applied()
        kept = [a for a in applied if a.batch < batch]  # a later one was never logged
        now = dict(refused)
        if version > running:
            for entry in self.book.versions(version)[running + 1:]:
                if entry.refused is not None:
                    now.setdefault(entry.number, entry.refused)
            kept.append(Applied(version, batch, first_seq))
        if kept != applied or now != refused:
            self.log.write_applied(kept, now)
        return version

    def version_of(self, batch: int) -> int:
        """The version batch ``batch`` ran (for a later stage's task: its input's batch)."""
        return version_at(self.log.applied()[0], batch)


class RuleVersionsHook:
    """A hook of the driver's ``foreachBatch`` (``sink.BatchSink``): after each batch,
    the rules it ran go into its metrics (``rules``: the version, whether it changed at
    this batch, each rule with its version and start batch) for the live view and
    ``cep rules``; the delivery's order of rules learns the new ones; and a change
    that applied, or was refused, is said in one line on standard error."""

    def __init__(self, book: RuleBook, order: dict[str, int]) -> None:
        self.book = book
        self.log = ChangeLog(book.workdir)
        self.order = order  # the delivery's rule order, updated in place
        self.version = -1
        self.running: list[dict] = []
        self.told: set[int] = set()

    def __call__(self, batch: int, _stats: list[dict], metrics: dict) -> None:
        applied, refused = self.log.applied()
        version = version_at(applied, batch)
        starts = next((a for a in applied if a.batch == batch), None)
        if version != self.version:
            every = self.book.versions(version)
            for name in output_order([v.module for v in every]):
                self.order.setdefault(name, len(self.order))
            self.running = running_rules(self.book, [a for a in applied if a.batch <= batch])
            if starts is not None and self.version >= 0:
                print(change_line(batch, every[self.version].module,
                                  every[version].module, version), file=sys.stderr)
            self.version = version
        for number, reason in sorted(refused.items()):
            if number not in self.told:
                self.told.add(number)
                print(f"cep: change {number} refused, the job goes on unchanged: {reason}",
                      file=sys.stderr)
        metrics["rules"] = {"version": version, "changed": starts is not None,
                            "first_seq": starts.first_seq if starts is not None else None,
                            "running": self.running}


def change_line(batch: int, before, after, version: int) -> str:
    """``batch 7: rule set version 2: chatty added, busy_topic compatible (keeps its
    state)``: what a change did, in one line."""
    kinds = {name: kind for name, kind in rule_changes(before, after).items()
             if kind != "kept"}
    said = {"compatible": "replaced, keeps its state", "replaced": "replaced, starts empty"}
    parts = [f"{name} {said.get(kind, kind)}" for name, kind in kinds.items()]
    return (f"batch {batch}: rule set version {version}: "
            f"{', '.join(parts) if parts else 'no rule changed'}")
