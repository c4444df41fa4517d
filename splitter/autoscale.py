"""Automatic scaling (``--engines auto[:LO-HI]``): Guo and Zhou's parallelism from the
measured load, with hysteresis, decided after each micro-batch.

Part of the Splitter (see ``splitter/__init__.py``): it decides how many engines the
keys go to; the Balancer (``splitter.balancer``) writes the rescaled map when a scale
request asks for another count (``migration.scaling``), exactly as for ``cep scale``.

**The policy** (Guo and Zhou, ELB/CLB, Algorithm 1 line 4): from the operator's total
load ``w`` and the bounds ``[v, u]`` an instance's load should stay in, the new
parallelism is ``pi = ceil(2w / (u + v))``, each instance then carrying the middle of
the band, ``(u + v) / 2``. In cep:

* an engine's load is its **busy share**: the seconds its task spent on the batch over
  the batch's wall time (the time from the previous batch's commit to this one's), so
  1.0 is an engine busy the whole time; ``w`` is their sum (how many engines' worth of
  work the batch took);
* when the input lag grew in the batch, ``w`` is scaled by the events that **arrived**
  over those processed (``(events_in + lag growth) / events_in``): a job that falls
  behind carries all the work its engines can do, and only the arrivals say how much
  more it was asked for, so one change reaches the count that keeps up;
* ``u = 0.8``, ``v = 0.3`` by default, so each engine is given 55% of its time: on
  Spark a batch's wall time also holds its fixed cost (~0.7 s planning and committing
  on 2 cores), reading and delivery, so an engine busy 80% of it leaves the batch no
  slack (a job that falls behind with engine-bound work runs full batches whose
  engines are busy ~85% of the time); under 30% it is mostly idle.

**Hysteresis**, so that it never flaps:

* scale out only when the mean busy share is above ``u`` **and the job falls behind**
  (the lag grew in every batch of the streak, and is more than the batch read; a
  bounded run, whose input is all there at its start, is behind while more is left
  than a batch reads); scale in only when it is below ``v``
  **and the job keeps up** (no lag, or a lag that shrinks) -- inside ``[v, u]`` it holds;
* the condition must hold for ``patience`` consecutive batches (default 3), and the new
  count comes from the mean load over them;
* never more than one change in flight: no decision while a request has not applied
  yet (the batch's engines are not the count asked), and ``cooldown`` batches (default
  5) after it applied, during which the loads of the new count settle (keys move,
  engines start empty);
* the count is clamped to ``[lo, hi]``; a clamped count equal to the current one is
  no change.

:func:`parallelism` is the formula; :class:`Autoscaler` the state machine over a series
of :class:`Observation`; both are pure (no I/O, no clock), so they are tested on
synthetic load series (``tests/splitter/test_autoscale.py``). :class:`AutoscaleHook`
reads a batch's metrics into an observation and writes the decision's request through a
callable (on Spark ``cep.io.scale_changes.ScaleLog.request``, as ``cep scale`` does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_UPPER = 0.8  # u: an engine busier than this share of the batch's wall time
DEFAULT_LOWER = 0.3  # v: an engine less busy than this is mostly idle
DEFAULT_PATIENCE = 3  # consecutive batches a condition must hold
DEFAULT_COOLDOWN = 5  # batches after a change applied before the next decision
#: ``--engines auto`` on a cluster, whose cores a job cannot know at its start (workers
#: join later): the most engines it may grow to
DEFAULT_CLUSTER_MAX = 16


def parallelism(load: float, upper: float = DEFAULT_UPPER,
                lower: float = DEFAULT_LOWER) -> int:
    """Guo and Zhou's ``pi = ceil(2w / (u + v))``: the instances that give each the
    middle of ``[v, u]`` for a total load ``w`` (at least 1)."""
    if not 0 <= lower < upper:
        raise ValueError(f"the load band must have 0 <= v < u, got v={lower}, u={upper}")
    if not load > 0:
        return 1
    return max(1, math.ceil(2 * load / (upper + lower) - 1e-9))


@dataclass(frozen=True)
class Observation:
    """One batch as the policy sees it: its engines' busy seconds, its wall seconds,
    the events it processed and the input records behind after it (None: not known,
    e.g. a local run without an input log)."""

    busy_s: tuple[float, ...]
    wall_s: float
    events_in: int
    behind: float | None

    @property
    def engines(self) -> int:
        return len(self.busy_s)


@dataclass(frozen=True)
class Decision:
    """What the policy said after one batch: ``action`` is ``out``, ``in``, ``hold`` or
    ``wait`` (a change in flight or cooling down); ``target`` the count it asks for
    (None unless it changes); ``load`` the demand ``w`` it measured, ``pi`` Guo and
    Zhou's count for it (clamped to the bounds); ``reason`` says why in words."""

    action: str
    engines: int
    load: float
    pi: int
    reason: str
    target: int | None = None
    lag_growth: float | None = None

    def as_metrics(self) -> dict:
        return {"action": self.action, "engines": self.engines,
                "load": round(self.load, 4), "pi": self.pi, "target": self.target,
                "reason": self.reason,
                **({"lag_growth": round(self.lag_growth, 1)}
                   if self.lag_growth is not None else {})}


@dataclass
class Autoscaler:
    """The policy's state across batches (module docstring): bounds, band, patience,
    cool-down; :meth:`step` takes each batch's observation in order."""

    lo: int
    hi: int
    upper: float = DEFAULT_UPPER
    lower: float = DEFAULT_LOWER
    patience: int = DEFAULT_PATIENCE
    cooldown: int = DEFAULT_COOLDOWN
    # a bounded run's input is all there at its start: its lag only shrinks, and it is
    # behind while more is left than a batch reads (no growth asked for)
    bounded: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.lo <= self.hi:
            raise ValueError(f"autoscale bounds must be 1 <= LO <= HI, got {self.lo}-{self.hi}")
        if self.patience < 1 or self.cooldown < 0:
            raise ValueError("patience must be at least 1 batch, cooldown at least 0")
        parallelism(1.0, self.upper, self.lower)  # checks the band
        self._asked: int | None = None  # the count of the change in flight
        self._quiet = 0  # batches left to cool down
        # (demand, lag growth, events) of the batches the condition held in a row
        self._streak: list[tuple[float, float, int]] = []
        self._direction = ""
        self._behind: float | None = None  # the lag after the batch before

    def expect(self, engines: int) -> None:
        """A change to ``engines`` is in flight (asked before this process started, or
        by ``cep scale``): decide nothing until the batches run that count."""
        if self._asked is None:
            self._asked = engines

    def step(self, obs: Observation) -> Decision:
        """The decision after one batch (see the module docstring)."""
        n = obs.engines
        growth = (None if obs.behind is None or self._behind is None
                  else obs.behind - self._behind)
        self._behind = obs.behind
        busy = sum(obs.busy_s) / obs.wall_s if obs.wall_s > 0 else 0.0
        demand = busy
        if growth is not None and growth > 0 and obs.events_in > 0:
            demand = busy * (obs.events_in + growth) / obs.events_in
        pi = min(self.hi, max(self.lo, parallelism(demand, self.upper, self.lower)))

        def said(action: str, reason: str, target: int | None = None) -> Decision:
            return Decision(action, n, demand, pi, reason, target, growth)

        if self._asked is not None:
            if n != self._asked:
                return said("wait", f"the change to {self._asked} engines has not "
                            "applied yet")
            self._asked, self._quiet = None, self.cooldown
        if self._quiet > 0:
            self._quiet -= 1
            self._streak = []
            return said("wait", f"cooling down after a change ({self._quiet + 1} "
                        "batches left)")
        if obs.wall_s <= 0 or n < 1:
            self._streak = []
            return said("hold", "no batch time measured")
        mean = busy / n
        # after a batch the lag is what arrived while it ran: a job that keeps up leaves
        # about one batch's events (jitter aside: twice), one that falls behind more
        # than it read, and more each batch
        falls_behind = (obs.behind is not None and obs.behind > obs.events_in
                        and (self.bounded or (growth is not None and growth > 0)))
        keeps_up = obs.behind is not None and (
            obs.behind <= 2 * max(obs.events_in, 1) or (growth is not None and growth <= 0))
        if mean > self.upper and falls_behind:
            direction, why = "out", (f"engines {mean:.0%} busy (> u = {self.upper:.0%}) "
                                     + (f"and {obs.behind:,.0f} records left to read"
                                        if self.bounded else
                                        f"and the input lag grew by {growth:,.0f}"))
        elif mean < self.lower and keeps_up:
            direction, why = "in", (f"engines {mean:.0%} busy (< v = {self.lower:.0%}) "
                                    "and the job keeps up")
        else:
            self._streak = []
            return said("hold", _holding(mean, self.lower, self.upper, obs.behind))
        if direction != self._direction:
            self._streak, self._direction = [], direction
        self._streak.append((demand, growth or 0.0, obs.events_in))
        if len(self._streak) < self.patience:
            return said("hold", f"{why}: {len(self._streak)} of {self.patience} batches")
        streak, self._streak = self._streak, []
        load = sum(d for d, _, _ in streak) / len(streak)
        grown = sum(g for _, g, _ in streak)
        if (direction == "out" and not self.bounded
                and grown <= sum(e for _, _, e in streak) / len(streak)):
            return said("hold", f"{why}, but over {len(streak)} batches the lag grew by "
                        f"{grown:,.0f}, less than a batch's events")
        target = min(self.hi, max(self.lo, parallelism(load, self.upper, self.lower)))
        if (direction == "out" and target <= n) or (direction == "in" and target >= n):
            return said("hold", f"{why}, but pi = {target} for w = {load:.2f} within "
                        f"[{self.lo}, {self.hi}] is no change from {n} engines")
        self._asked = target
        return Decision(direction, n, load, target,
                        f"{why} for {self.patience} batches: pi = ceil(2w/(u+v)) = "
                        f"{target} for w = {load:.2f}", target, growth)


def _holding(mean: float, lower: float, upper: float, behind: float | None) -> str:
    """Why a batch outside the band changes nothing (or that it is inside)."""
    if lower <= mean <= upper:
        return f"engines {mean:.0%} busy, inside [v, u] = [{lower:.0%}, {upper:.0%}]"
    if behind is None:
        return f"engines {mean:.0%} busy, but the input lag is not known"
    if mean > upper:
        return (f"engines {mean:.0%} busy, but the job is not falling behind (lag "
                f"{behind:,.0f}: not more than the batch read, or not growing)")
    return f"engines {mean:.0%} busy, but the job is behind (lag {behind:,.0f})"


def input_lag(sources: list[dict]) -> float:
    """The input records a job is behind, over its sources' progress
    (``cep.spark.inputs.progress``): found and not read, plus arrived since the last
    listing (a followed file's growth past what was listed, a Kafka partition's end
    past what was planned). The policy reads it, and the live view shows it."""
    return float(sum(s.get("behind_records", 0) + s.get("arrived_records", 0)
                     for s in sources))


def observation(metrics: dict, previous_wall: float | None) -> Observation:
    """A batch's metrics (``cep.spark.output.sink``) as an observation: its engines'
    busy seconds, its wall time since the previous batch's commit (0, not measured, for
    the first one a process runs: the policy holds), the events it processed and the
    input records behind: logged and not read, plus arrived since the last listing
    (``"input"``'s sources, ``cep.spark.inputs.progress``): a job following one growing
    file reads all of it at each planning, so only what arrived shows it falling behind."""
    wall = metrics.get("wall_time")
    if wall is not None and previous_wall is not None and wall > previous_wall:
        wall_s = wall - previous_wall
    else:
        wall_s = 0.0  # not measured: the policy holds
    sources = (metrics.get("input") or {}).get("sources")
    behind = input_lag(sources) if sources else metrics.get("behind_records")
    return Observation(tuple(float(b) for b in metrics.get("busy_s_per_engine", [])),
                       wall_s, int(metrics.get("events_in", 0)), behind)


class AutoscaleHook:
    """A batch hook (``sink.BatchHook``) that runs the policy after each batch and,
    when it decides a change, asks for it with ``request(engines, reason)`` (the number
    of the request it wrote, or None). It runs before the Balancer, so a request made
    after batch t is the map ``M[t+2]`` the Balancer writes in the same batch. The
    decision and its reason go into the batch's metrics under ``"autoscale"``."""

    def __init__(self, policy: Autoscaler, request: Callable[[int, str], int | None],
                 latest: Callable[[], int | None] | None = None) -> None:
        self.policy = policy
        self.request = request
        # the count of the newest request (a restart's, cep scale's, the policy's own):
        # while the batches run another count, a change is in flight
        self.latest = latest
        self._wall: float | None = None

    def __call__(self, batch: int, _stats: list[dict], metrics: dict) -> None:
        obs = observation(metrics, self._wall)
        self._wall = metrics.get("wall_time", self._wall)
        asked = self.latest() if self.latest is not None else None
        if asked is not None and asked != obs.engines and obs.engines:
            self.policy.expect(asked)
        decision = self.policy.step(obs)
        entry = {**decision.as_metrics(), "bounds": [self.policy.lo, self.policy.hi]}
        if decision.target is not None:
            entry["request"] = self.request(decision.target, decision.reason)
        metrics["autoscale"] = entry
