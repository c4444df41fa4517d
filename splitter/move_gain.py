"""Whether a key map's moves pay for themselves: the Balancer's gate (``--moves pays``).

A strategy proposes a key map from the keys' loads alone, as the DLB paper's policies
do. Moving a key costs work that key grouping never does (its state exported by one
engine, carried through MongoDB, imported and rebuilt by another), and what the move
buys is a shorter busiest engine in the batches that follow, since a micro-batch lasts
as long as its busiest engine. The gate prices both in seconds:

* **saving per batch**: the busiest engine's measured busy seconds in the batch just
  run, times the share of the busiest engine's load that the proposal takes off (the
  busiest engine load under the proposal against under the current map, both from the
  load statistics the strategy read, capacity-relative when shares are measured);
* **cost**: the keys the proposal moves, times the seconds a moved key has cost so far:
  the engines' export and import seconds over the keys they handed over, an
  exponentially weighted mean over the batches that moved keys (``PRIOR_KEY_S`` before
  the first was measured).

The proposal goes through when the saving over ``payback`` batches exceeds the cost,
and otherwise the current map stays.

Where the strategy balances events (the paper's measure), the share is also taken of the
keys' measured work (``work``: each key's seconds in the batch just run, from
``key_cost``), and the saving uses the smaller of the two shares: a proposal that evens
the events but puts more of the measured work on the busiest engine saves nothing, and
is refused. Events and work part where keys cost different seconds per event: an FSD
job balanced by events at 4 engines on 4 emulated nodes left one engine about 0.2 CPU s
a batch against about 0.7 for the others and ran at 0.81x key grouping
(``bench/results/scale_midrun-dlbl4-fixed.json``).

A batch in which keys arrived (its engines imported moved keys: a move's or a scale
change's) measured their hand-over, not the keys' steady work: the importing engines'
seconds hold the import and the rebuilt state, so their keys look costlier than they
are. No move is judged to pay on such a batch; the next batch decides. Why: after a
2 -> 4 engine change of an FSD job the new engines' first batch ran 1.09 and 1.26 CPU s
against 0.53 and 0.54, the gate let a proposal by events through on it, and the work
the change had spread evenly (0.57-0.61 CPU s a batch) went 1.58, 1.64, 0.21, 0.34
(``bench/results/scale_midrun-shape.json``, batches 19-21).

Under a skew that no placement can spread (one key heavier than an engine's share), or
on an already even load, the saving is small and nothing moves: the run then costs what
key grouping costs. ``--moves always`` is the paper's Balancer, which moves whenever the
strategy proposes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from splitter.policies.names import MOVE_POLICIES, PAYBACK_BATCHES
from splitter.policies.stats import engine_loads

# Seconds per moved key before any move was measured: export plus import of one FSD key
# on a 0.4-core node (bench/bench_handoff.py: 1,000 keys took 0.12-0.15 s on a full core)
PRIOR_KEY_S = 4e-4
SMOOTHING = 0.5  # weight of the newest measured batch in the per-key cost


@dataclass
class MoveCosts:
    """What moving keys has cost the engines so far, per key (seconds)."""

    per_key_s: float = PRIOR_KEY_S
    measured_batches: int = 0

    def observe(self, metrics: dict) -> None:
        """Fold in a batch's handoff: the engines' ``export`` and ``import`` stage
        seconds over the keys exported and imported (each moved key is both, in
        consecutive batches; the larger count stands for the keys handed over)."""
        keys = max(int(metrics.get("exported_keys", 0)), int(metrics.get("imported_keys", 0)))
        if keys <= 0:
            return
        stages = metrics.get("stage_s", {})
        seconds = float(stages.get("export", 0.0)) + float(stages.get("import", 0.0))
        measured = seconds / keys
        if self.measured_batches == 0:
            self.per_key_s = measured
        else:
            self.per_key_s = SMOOTHING * measured + (1 - SMOOTHING) * self.per_key_s
        self.measured_batches += 1


@dataclass(frozen=True)
class Verdict:
    """The gate's reckoning of one proposal, as the metrics report it."""

    keys_moved: int
    saving_s: float  # over the pay-back horizon
    cost_s: float
    pays: bool
    settling: bool = False  # keys arrived in the batch: its work measured their hand-over

    def as_metrics(self) -> dict:
        return {"move_saving_s": round(self.saving_s, 4), "move_cost_s": round(self.cost_s, 4),
                "move_pays": self.pays, **({"move_settling": True} if self.settling else {})}


@dataclass
class MoveGate:
    """Lets a proposed key map through only when its moves pay (see the module notes)."""

    policy: str = "pays"
    payback: int = PAYBACK_BATCHES
    costs: MoveCosts = field(default_factory=MoveCosts)

    def __post_init__(self) -> None:
        if self.policy not in MOVE_POLICIES:
            raise ValueError(f"moves must be one of {MOVE_POLICIES}, got {self.policy!r}")
        if self.payback < 1:
            raise ValueError("payback must be >= 1 batch")

    def judge(self, load: np.ndarray, current: np.ndarray, proposal: np.ndarray,
              n_engines: int, busiest_busy_s: float,
              capacity: np.ndarray | None = None, partitions: int | None = None,
              work: np.ndarray | None = None, settling: bool = False) -> Verdict:
        """The verdict on moving from ``current`` to ``proposal`` (engine per key id),
        given the keys' ``load`` and the busiest engine's busy seconds last batch.

        ``partitions``: Spark's tasks of the engines, engine e in task e mod P, one
        task's engines one after another (a local master with fewer slots than
        engines: ``engine_labels.engine_partitions``). Then a batch lasts as long as its
        busiest task, so loads are summed per task and ``busiest_busy_s`` is that task's
        seconds: a move between two engines of one task saves nothing, and the gate
        lets no such move through where the paper's Balancer would make it.

        ``work``: each key's measured seconds last batch, where ``load`` is not that
        (events): the saving takes the smaller share, so a move must shorten the
        busiest engine by both measures.

        ``settling``: keys arrived in the batch just run, so under ``pays`` nothing
        moves on it (see the module notes)."""
        moved = int(np.count_nonzero(proposal != current))
        share = _busiest_share_off(load, current, proposal, n_engines, capacity, partitions)
        if work is not None and moved:
            share = min(share, _busiest_share_off(work, current, proposal, n_engines,
                                                  capacity, partitions))
        saving = max(busiest_busy_s, 0.0) * share * self.payback
        cost = moved * self.costs.per_key_s
        pays = moved == 0 or self.policy == "always" or (saving > cost and not settling)
        return Verdict(moved, saving, cost, pays, settling and self.policy != "always")


def _busiest_share_off(load: np.ndarray, current: np.ndarray, proposal: np.ndarray,
                       n_engines: int, capacity: np.ndarray | None,
                       partitions: int | None) -> float:
    """The share of the busiest task's ``load`` that ``proposal`` takes off (negative
    where the busiest task gets more)."""
    before = float(_per_task(engine_loads(load, current, n_engines, capacity),
                             partitions).max(initial=0.0))
    after = float(_per_task(engine_loads(load, proposal, n_engines, capacity),
                            partitions).max(initial=0.0))
    return (before - after) / before if before > 0 else 0.0


def _per_task(loads: np.ndarray, partitions: int | None) -> np.ndarray:
    """Engine loads summed per Spark task (engine e in task e mod ``partitions``)."""
    if partitions is None or partitions >= len(loads):
        return loads
    return np.bincount(np.arange(len(loads)) % partitions, weights=loads,
                       minlength=partitions)
