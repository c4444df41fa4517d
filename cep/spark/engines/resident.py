"""Resident engines: each engine's whole state kept in the Python worker that ran its
last batch, trusted only where it is what the state store says.

Spark gives an engine's next batch to any of its Python workers, so a worker holds, per
(query start, engine label), the :class:`Engine` of the last batch it ran of that engine
and the version it reflects: (batch, token), where the token is drawn anew by every
processing of a batch (every task attempt). The durable copy is the engine's changelog
in the state store (``engine_log.py``), whose ``version`` names the (batch, token) of the
processing that committed. The trust rule, at a batch:

* **resident**: this worker's copy is at ``version``: use it as it is;
* **caught_up**: this worker's copy is older, and the log still holds its entry with its
  token: apply the log's entries after it (cost: the bytes changed since);
* **rebuilt**: anything else: the log's base and the deltas after it;
* **new**: nothing committed yet: an empty engine.

So a replayed batch, a restart after ``kill -9`` (a new query start), a task retried
after a failure (its store writes were discarded while the worker's copy advanced, with
a token the store never saw) and an engine whose batches alternate between workers are
all correct by construction: the warm copy is never trusted where the durable one
differs.

This is also where an engine's per-key timer index (event time) is to live: it belongs
to the resident engine and travels in its snapshots and changes.

Measured: see ``engine_batch.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cep.engine import codec
from cep.engine.engine import Engine
from cep.spark.engines.log import EngineLog
from grammar import ir

# A copy this many batches behind its engine's batch is dropped (the log has most
# likely folded past it, so it could only be rebuilt anyway): bounds what a worker
# keeps of engines that its later batches went elsewhere for.
STALE_BATCHES = 64


@dataclass
class Resident:
    """One engine as a worker holds it between batches."""

    batch: int
    token: str
    engine: Engine


# (query start, engine label) -> the engine this worker holds
_RESIDENT: dict[tuple[str, int], Resident] = {}


@dataclass(frozen=True)
class Origin:
    """Where a batch found its engine (``kind``) and how many log entries it read."""

    kind: str  # resident, caught_up, rebuilt or new
    entries: int = 0


def take_engine(rules_of: Callable[[int], ir.CompiledModule] | ir.CompiledModule,
                log: EngineLog, start: str, label: int, batch: int
                ) -> tuple[Engine, Origin]:
    """Engine ``label``'s state as of the batch before ``batch``, by the trust rule,
    under the rules of the version its state belongs to (``rules_of(version)``; the
    caller carries it onto the batch's own: ``Engine.evolved``). The worker's copy is
    taken out of the registry: a batch that fails half way (its work engine split off)
    must not leave it for the next; :func:`keep` puts it back."""
    if isinstance(rules_of, ir.CompiledModule):  # a job whose rules never change
        rules_of = _always(rules_of)
    held = _RESIDENT.pop((start, label), None)
    for slot in [s for s, r in _RESIDENT.items()
                 if s[0] != start or r.batch < batch - STALE_BATCHES]:
        del _RESIDENT[slot]  # another query's, or long stale
    version = log.version()
    if version is None:
        return Engine(rules_of(0)), Origin("new")
    if held is not None and (held.batch, held.token) == (version.batch, version.token):
        return held.engine, Origin("resident")
    if (held is not None and held.batch in version.entries[:-1]
            and log.token(held.batch) == held.token):  # its first part: not the rest
        later = version.after(held.batch)
        _replay(held.engine, log, later)
        return held.engine, Origin("caught_up", len(later))
    engine = Engine(rules_of(version.rules), version.rules)
    base = _entry(log, version.base)
    engine.restore(base)
    later = version.after(version.base)
    _replay(engine, log, later)
    return engine, Origin("rebuilt", 1 + len(later))


def _always(module: ir.CompiledModule) -> Callable[[int], ir.CompiledModule]:
    return lambda _version: module


def keep(start: str, label: int, batch: int, token: str, engine: Engine) -> None:
    """Hold ``engine`` as engine ``label``'s state after ``batch`` (processed as
    ``token``) for this worker's next batch of it."""
    _RESIDENT[(start, label)] = Resident(batch, token, engine)


def _replay(engine: Engine, log: EngineLog, batches: list[int]) -> None:
    engine.apply_changes([codec.decode(_entry(log, batch), "change",
                                       f"state change of batch {batch}")
                          for batch in batches])


def _entry(log: EngineLog, batch: int) -> bytes:
    found = log.entry(batch)
    if found is None:
        raise codec.StateFormatError(f"the engine's state log has no entry {batch}")
    return found[1]
