"""What a key cost its engine in a batch, in seconds: the Balancer's ``--load cost``.

The DLB paper balances events: a key's load is its tuples. An engine's work does not
follow its events alone, though: every key a batch touches is read from the state store
before the batch and written back after it, whatever its events (in a 5-engine FSD run
at the paper's scale the engines spent 62 task seconds restoring and saving key state
against 34 processing tweets), so an even split of events can be an uneven split of
work. ``--load cost`` balances the work as the engines measured it.

Each engine's stats row (``engine_batch``) carries its busy seconds, the seconds of
each stage of its batch and its events per key. Those are split over the keys the batch
touched: all the engine seconds outside the row stages (reading, writing and handing
over key state) in equal parts, since each touched key costs one restore and one save;
the stages that run over the batch's rows (``EVENT_STAGES``) in proportion to
``alpha + beta · events``, a cost per touched key and one per event. Why both: a rule
whose operator reads each touched key's whole window once a batch (FSD's similarity
sweep flattens every touched bucket's last H texts) spends its row stages per key as
much as per event; split by events alone, a 2 -> 4 engine change of an FSD job left the
engine that kept the many light keys 0.83 CPU s a batch against 0.41-0.46 for the
others, where key grouping's even key counts ran 0.51-0.60 each with the same uneven
events (``bench/results/scale_midrun-work.json``, batches 20-23). ``alpha`` and
``beta`` are fitted over the engines' rows (:class:`CostShape`, least squares with both
at least 0, pooled over recent batches); without a fit, the events alone
(``beta`` only). Each engine's row seconds are split, not replaced: a key costs
``fixed_e + rows_e · (alpha + beta · n) / (alpha · K_e + beta · N_e)``, with the engine's
own totals, so a key on a slower or busier engine costs more there, which is what its
engine's batch length feels. The stages the input tasks ran before the shuffle (read,
derive, route) are not the engine's and are left out.
"""

from __future__ import annotations

import numpy as np

EVENT_STAGES = ("unpack", "process", "output")  # seconds that follow the batch's rows


DECAY = 0.8  # a batch's weight in the pooled fit, against the one after it
EVENTS_ONLY = (0.0, 1.0)  # (alpha, beta) without a fit: the row stages follow the events


def row_seconds(info: dict) -> float:
    """An engine's seconds in the stages that run over the batch's rows."""
    stages = info.get("stages", {})
    return sum(stages.get(name, 0.0) for name in EVENT_STAGES)


class CostShape:
    """The row stages' cost per touched key (``alpha``) and per event (``beta``), fitted
    by least squares over the engines' stats rows of recent batches: each engine's row
    seconds against its touched keys and its events, batch b weighted ``DECAY``^age.

    Why pooled: one batch gives an equation per engine, as few as 2 at the start of a
    2-engine run, with key counts that a hash keeps nearly equal; the batches before it
    tell the two costs apart where one batch cannot."""

    def __init__(self, decay: float = DECAY) -> None:
        self.decay = decay
        self.gram = np.zeros((2, 2))  # Σ w·x·xᵀ, x = (keys, events)
        self.moment = np.zeros(2)  # Σ w·x·seconds

    def observe(self, stats: list[dict]) -> None:
        """Fold one batch's engine rows in (the older batches decayed)."""
        self.gram *= self.decay
        self.moment *= self.decay
        for info in stats:
            loads = info.get("key_load", {})
            events = sum(loads.values())
            if events:
                x = np.array([len(loads), events], dtype=np.float64)
                self.gram += np.outer(x, x)
                self.moment += x * row_seconds(info)

    def shape(self) -> tuple[float, float]:
        """``(alpha, beta)``, both at least 0; :data:`EVENTS_ONLY` where the rows so far
        cannot tell the two apart (one engine, or keys and events in one ratio)."""
        return fit_shape(self.gram, self.moment)


def fit_shape(gram: np.ndarray, moment: np.ndarray) -> tuple[float, float]:
    """Non-negative least squares in two unknowns from the normal equations: the
    unconstrained solution where both are at least 0, else the better of the two one-term
    fits; :data:`EVENTS_ONLY` where the system is singular or nothing is positive."""
    if np.linalg.cond(gram) > 1e12:
        return EVENTS_ONLY
    both = np.linalg.solve(gram, moment)
    if (both >= 0).all() and both.sum() > 0:
        return float(both[0]), float(both[1])
    fits = []
    for i in (0, 1):  # one term alone: x_i·c, c = Σ w x_i y / Σ w x_i²
        c = moment[i] / gram[i, i] if gram[i, i] > 0 else 0.0
        if c > 0:
            residual = -2 * c * moment[i] + c * c * gram[i, i]  # up to a constant
            fits.append((residual, (float(c), 0.0) if i == 0 else (0.0, float(c))))
    return min(fits)[1] if fits else EVENTS_ONLY


def key_costs(stats: list[dict], shape: tuple[float, float] = EVENTS_ONLY
              ) -> dict[str, float]:
    """Seconds per key (JSON text) over the engines' stats rows of one batch, the row
    stages split by ``shape`` (``alpha`` per touched key, ``beta`` per event: see
    :class:`CostShape`); a key that more than one engine reported (a later stage's)
    adds up."""
    alpha, beta = shape
    costs: dict[str, float] = {}
    for info in stats:
        loads = info.get("key_load", {})
        events = sum(loads.values())
        if not events:
            continue
        per_rows = row_seconds(info)
        per_key = max(info.get("busy_s", 0.0) - per_rows, 0.0) / len(loads)
        scale = per_rows / (alpha * len(loads) + beta * events)
        for text, n in loads.items():
            costs[text] = costs.get(text, 0.0) + per_key + scale * (alpha + beta * n)
    return costs
