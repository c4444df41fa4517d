"""``--engines auto`` on the in-process engines: a simulated live input for
``cep.testing.strategies.split_run``.

The reference evaluator's engines take no measurable time, so this gives them a clock:
events arrive at a rate that changes by phases (:class:`Phase`), each engine processes
``capacity`` events per second, and a batch costs ``overhead_s`` besides its busiest
engine's events (Spark's fixed cost per micro-batch). Each batch reads what has arrived
and not been read, up to the batch size; what is left is the input lag. The policy
(``splitter.autoscale``) sees exactly what it sees on Spark: the engines' busy seconds,
the batch's wall time and the records behind, and its requests go to the Balancer as
``cep scale``'s do (the newest request's count, read when a map is decided).

Why a simulation and not a timer: a test of *when* the policy scales must not depend on
the machine's speed or load; the events, which are what the run proves, are the real
engines' over the real input (compared with KG's at a fixed count and the reference
evaluator's).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from cep.engine.table import SEQ, Table, sorted_unique
from splitter.autoscale import AutoscaleHook, Autoscaler


@dataclass(frozen=True)
class Phase:
    """Events arrive at ``rate`` per second for ``seconds`` (the last phase lasts until
    the input ends)."""

    seconds: float
    rate: float


@dataclass
class ElasticLoad:
    """The simulated input and clock of one ``split_run`` under a policy (module notes).
    ``trace`` has a row per batch: its start time, rate, events, engines, busy share
    and the lag after it."""

    policy: Autoscaler
    phases: Sequence[Phase]
    capacity: float  # events per second one engine processes
    overhead_s: float = 0.5  # a batch's fixed cost
    trace: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.requests: list[int] = []
        self.hook = AutoscaleHook(self.policy, self._request, self._latest)
        self.clock = 0.0  # simulated seconds
        self.read = 0  # events read by the batches so far
        self.total = 0  # events in the input (known once the batches are cut)

    def engines_at(self, _version: int) -> int | None:
        """The Balancer's ``engines_at``: the newest request's count."""
        return self._latest()

    def _latest(self) -> int | None:
        return self.requests[-1] if self.requests else None

    def _request(self, engines: int, _reason: str) -> int:
        self.requests.append(engines)
        return len(self.requests)

    def arrived(self, at: float) -> float:
        """Events arrived by simulated time ``at``."""
        total, start = 0.0, 0.0
        for i, phase in enumerate(self.phases):
            end = float("inf") if i == len(self.phases) - 1 else start + phase.seconds
            total += phase.rate * max(0.0, min(at, end) - start)
            if at <= end:
                break
            start = end
        return total

    def rate_at(self, at: float) -> float:
        start = 0.0
        for phase in self.phases[:-1]:
            if at < start + phase.seconds:
                return phase.rate
            start += phase.seconds
        return self.phases[-1].rate

    def batches(self, tables: dict[str, Table], batch_size: int | None, watermark
                ) -> Iterator[tuple[tuple[int, int], object, bool]]:
        """The batches' seq bounds, watermarks and whether each is the last, cut as the
        run goes: each reads what arrived by its start, up to ``batch_size``."""
        seqs = [t[SEQ] for t in tables.values() if t and len(t[SEQ])]
        ordered = sorted_unique(np.concatenate(seqs)) if seqs else np.zeros(0, np.int64)
        total = self.total = len(ordered)
        cap = batch_size or total or 1
        while self.read < total or (total == 0 and not self.trace):
            waiting = int(self.arrived(self.clock)) - self.read
            if waiting < 1 and total:  # nothing arrived yet: wait for the next event
                self.clock = self._time_of(self.read + 1)
                waiting = 1
            size = max(0, min(cap, waiting, total - self.read))
            lo = int(ordered[self.read]) if total else 0
            end = self.read + size
            hi = int(ordered[end]) if end < total else (int(ordered[-1]) + 1 if total else 0)
            last = end >= total
            self.trace.append({"start": self.clock, "rate": self.rate_at(self.clock),
                               "events": size})
            self.read = end
            yield (lo, hi), watermark.between(lo, hi, last), last

    def after_batch(self, batch: int, stats: list[dict], figures: dict) -> None:
        """Time the batch that ran (engines busy ``rows / capacity``, the batch the
        busiest plus the overhead), say the lag after it, and run the policy."""
        rows = np.asarray(figures["rows_per_engine"], dtype=float)
        busy = rows / self.capacity
        self.clock += self.overhead_s + (float(busy.max()) if len(busy) else 0.0)
        behind = max(0.0, min(self.arrived(self.clock), self.total) - self.read)
        figures["busy_s_per_engine"] = [round(b, 6) for b in busy.tolist()]
        for info, seconds in zip(stats, busy.tolist(), strict=False):
            info["busy_s"] = seconds
        figures["wall_time"] = self.clock
        figures["input"] = {"sources": [{"behind_records": behind}]}
        self.hook(batch, stats, figures)
        self.trace[-1].update(batch=batch, engines=len(rows), end=self.clock,
                              behind=behind, busy=float(busy.sum()) / max(
                                  1e-9, self.clock - self.trace[-1]["start"]) / len(rows),
                              action=figures["autoscale"]["action"])

    def _time_of(self, events: int) -> float:
        """The simulated time by which ``events`` events have arrived."""
        lo, hi = self.clock, self.clock + 1.0
        while self.arrived(hi) < events:
            hi = hi * 2 + 1
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.arrived(mid) < events else (lo, mid)
        return hi
