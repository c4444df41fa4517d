"""``assert_strategies_equal``: the product's promise in one call. Every key-preserving
balancing strategy gives key grouping's events while keys move between engines; PKG,
which splits keys, is reported beside them and never fails the test.

It is ``cep verify`` (:func:`cep.verify.verify`: KG first, each strategy's events
compared with KG's as multisets, the same table) with two things a test needs:

* **No Spark by default.** :func:`split_run` runs the strategies in this process: the
  reference evaluator's engines, ``engines`` of them, each holding the keys the
  Splitter's router gives it (``splitter.routing``: key grouping, PKG, or the key maps
  the real :class:`splitter.balancer.Balancer` writes after each batch, kept in memory
  instead of MongoDB), and a moved key's state handed from engine to engine as on Spark
  (``Engine.export_keys`` and ``import_keys`` at the end of the batch before the map
  that moves it, ``migration.protocol``). ``runner="spark"`` compares real runs instead.
* **It cannot pass vacuously.** Keys are made to move (a threshold of 0 and ``moves=
  "always"``: the Balancer moves whatever the strategy proposes; batches of
  ``batch_size`` events, since a key first moves in batch 2), and a key-preserving
  strategy under which no key moved fails the test: equal events would prove nothing.

On failure the message names the strategy, how many keys it moved, and the events that
differ from KG's, grouped by rule and key (:mod:`cep.testing.compare`).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cep.api import Rules, compile_rules, write_input
from cep.io.inputs import load_inputs
from cep.reference import (
    batch_bounds,
    batch_of,
    batch_watermarks,
    log_watermark,
    split_batch,
    stage_engines,
)
from cep.run import rule_order
from cep.run import run as run_rules
from cep.run_config import RunConfig, RunResult
from cep.testing.compare import diff_events, records_of
from cep.verify import StrategyResult, format_table, verify
from grammar import ir
from migration.protocol import KeyMap, by_owner, exports, key_text, rescaled
from migration.scaling import Schedule

if TYPE_CHECKING:
    from cep.testing.elastic import ElasticLoad
from splitter.balancer import Balancer
from splitter.keymaps import key_map
from splitter.policies.names import KEY_PRESERVING
from splitter.policies.stats import rstd
from splitter.routing import KeyRouter, key_grouping, map_grouping, partial_key_grouping

DEFAULT_STRATEGIES = ("kg", "dlb-h", "dlb-l", "lptf", "pkg")  # as cep verify's
DEFAULT_BATCH_SIZE = 1_000  # events per batch: many batches, so keys have time to move


class MemoryMaps:
    """The key maps of one emulated run, in memory: what the Balancer and the routers
    read and write of :class:`migration.store.StateStore` (write-once maps by version)."""

    def __init__(self) -> None:
        self.run_id = f"cep-testing-{uuid.uuid4().hex}"  # the routers' cache is by run
        self.maps: dict[int, bytes] = {}

    def put_key_map(self, version: int, data: bytes) -> bool:
        if version in self.maps:
            return False
        self.maps[version] = bytes(data)
        return True

    def get_key_map(self, version: int) -> bytes | None:
        return self.maps.get(version)

    def gc(self, before_batch: int, keep_key_maps: int = 2) -> int:
        return 0  # a test's run is short: nothing to collect


def split_run(module: ir.CompiledModule, config: RunConfig,
              stop: threading.Event | None = None, schedule: Schedule | None = None,
              hash: str = "mod", elastic: ElasticLoad | None = None) -> RunResult:
    """One strategy's run in this process (module notes): ``config.engines`` engines,
    routed by ``config.strategy`` over batches of ``config.batch_size`` events, with
    its events and per-batch metrics as ``cep verify`` reads them (``exported_keys``:
    the keys handed over at the end of the batch).

    ``schedule`` changes the engine count while the run goes on (``migration.scaling``):
    engines are added empty and retired once they handed every key over, the keys KG
    or the maps move going with their state as on Spark; key grouping then routes by
    the maps too (the ``kg`` strategy never overrides a key). ``hash``: KG's hash
    (``migration.hashing.HASHES``).

    ``elastic`` (``cep.testing.elastic``) runs ``--engines auto``: it sizes each batch
    from a simulated input rate and backlog, times the engines from their events, and
    its policy (``splitter.autoscale``) writes scale requests the Balancer follows as
    it follows a ``schedule`` (one of the two)."""
    if len(module.stage_modules()) != 1:
        raise ValueError("rules with INSERT INTO chains between keys run their strategies "
                         "on Spark: runner='spark'")
    if config.load != "events":
        raise ValueError("the in-process engines measure no cost per key: load='events'")
    started = time.perf_counter()
    loaded = load_inputs(module, list(config.inputs), config.dead_letter)
    bounds = batch_bounds(loaded.tables, config.batch_size) or [(0, 0)]
    clocks = batch_watermarks(log_watermark(module, loaded.clock, loaded.end_seq), bounds)
    n = config.engines
    if schedule is not None and schedule.initial != n:
        raise ValueError(f"the schedule starts at {schedule.initial} engines, the run at {n}")
    if elastic is not None:
        if schedule is not None:
            raise ValueError("a run scales by a schedule or by its policy, not both")
        steps = elastic.batches(loaded.tables, config.batch_size,
                                log_watermark(module, loaded.clock, loaded.end_seq))
    else:
        steps = ((b, c, i == len(bounds) - 1)
                 for i, (b, c) in enumerate(zip(bounds, clocks, strict=True)))
    engines = [stage_engines(module)[0] for _ in range(n)]
    maps = MemoryMaps()
    balancer = None
    route: KeyRouter
    if config.strategy == "pkg":
        if schedule is not None or elastic is not None or hash != "mod":
            raise ValueError("PKG splits keys: it has no key maps to scale or hash")
        route = partial_key_grouping(n)
    elif config.strategy == "kg" and schedule is None and elastic is None and hash == "mod":
        route = key_grouping(n)
    else:
        balancer = Balancer(maps, config.strategy, n, config.threshold,  # type: ignore[arg-type]
                            config.stat_window, capacity="equal", moves=config.moves,
                            hash=hash,
                            engines_at=(elastic.engines_at if elastic is not None else
                                        schedule.engines_at if schedule is not None else None))
        balancer.prepare()
        route = map_grouping(maps)  # type: ignore[arg-type]
    order, records, metrics = rule_order(module), [], []
    for batch, ((lo, hi), clock, last) in enumerate(steps):
        if stop is not None and stop.is_set():
            raise KeyboardInterrupt("stopped")
        if balancer is not None:
            n = key_map(maps, batch).n_engines  # type: ignore[arg-type]
            assert len(engines) == n, "engines follow the maps (_hand_over)"
        out, loads = split_batch(module, engines, lambda keys, b=batch: route(keys, b),
                                 batch_of(loaded.tables, lo, hi), clock, order)
        records += out
        rows = [sum(load.values()) for load in loads]
        figures: dict[str, Any] = {
            "batch": batch, "engines": n, "events_in": sum(rows), "events_out": len(out),
            "rows_per_engine": rows, "busy_s_per_engine": [0.0] * n,
            "rstd": round(rstd(rows), 3), "input_ended": last,
            "exported_keys": 0, "exported_bytes": 0}
        if balancer is not None:
            stats = [{"engine": e, "busy_s": 0.0, "key_load": load}
                     for e, load in enumerate(loads)]
            if elastic is not None:  # before the Balancer, as on Spark
                elastic.after_batch(batch, stats, figures)
            balancer(batch, stats, figures)
            figures["exported_keys"], figures["exported_bytes"] = _hand_over(
                engines, key_map(maps, batch), key_map(maps, batch + 1))  # type: ignore[arg-type]
        figures["wall_time"] = time.time()
        metrics.append(figures)
    per_rule: dict[str, int] = {}
    for record in records:
        per_rule[record["rule"]] = per_rule.get(record["rule"], 0) + 1
    return RunResult(metrics=metrics, totals={"events_in": loaded.accepted,
                                              "events_out": len(records)},
                     seconds=time.perf_counter() - started, outputs_per_rule=per_rule,
                     records=records)


def _hand_over(engines: list, now: KeyMap, after: KeyMap) -> tuple[int, int]:
    """Each key that changes engine between ``now`` and ``after`` leaves its engine with
    its whole state for the next owner (``migration.protocol.exports``): the keys and
    the bytes handed over. Across a scale change (``protocol.rescaled``) engines are
    added empty before, and the retired ones, checked empty, dropped after."""
    keys = size = 0
    scaling = rescaled(now, after)
    while len(engines) < after.n_engines:
        engines.append(type(engines[0])(engines[0].module, engines[0].version))
    for e, engine in enumerate(engines[:now.n_engines]):
        kept = engine.keys() if scaling else set()
        held = [key_text(_plain_key(k)) for k in kept]
        for target, texts in by_owner(exports(e, now, after, held), after).items():
            parcel = engine.export_keys([json.loads(t) for t in texts])
            engines[target].import_keys(parcel)
            keys += len(texts)
            size += len(parcel)
    for engine in engines[after.n_engines:]:
        if engine.keys():
            raise AssertionError(f"a retired engine still holds {len(engine.keys())} keys")
    del engines[after.n_engines:]
    return keys, size


def _plain_key(key: object) -> object:
    """A key as JSON writes it: NumPy scalars (int64 key columns) as Python values."""
    return key.item() if isinstance(key, np.generic) else key


@dataclass
class StrategiesReport:
    """What :func:`assert_strategies_equal` ran: ``cep verify``'s results per strategy
    (events, equal to KG's, missing and extra, keys moved, …) and its table."""

    results: list[StrategyResult]
    seconds: float
    pkg_differs: bool | None = None  # None: PKG was not run
    problems: list[str] = field(default_factory=list)

    @property
    def keys_moved(self) -> dict[str, int]:
        """Keys handed from one engine to another, per strategy."""
        return {r.label: r.keys_moved for r in self.results}

    def table(self) -> str:
        return format_table(self.results)

    def __str__(self) -> str:
        verdict = ("" if self.pkg_differs is None else
                   f"\npkg: {'differs from' if self.pkg_differs else 'equals'} KG "
                   "(it splits keys: reported, not failed)")
        return f"{self.table()}{verdict}\n({self.seconds:.1f}s)"


def assert_strategies_equal(rules: str | Path | Rules, source: Any, *,
                            strategies: Sequence[str] = DEFAULT_STRATEGIES,
                            engines: int = 5, moves: str = "always",
                            batch_size: int | None = DEFAULT_BATCH_SIZE,
                            threshold: float = 0.0, stat_window: int = 1,
                            runner: str = "local", set: Mapping[str, object] | None = None,
                            udf: Sequence[str | Path] = (), **options: Any) -> StrategiesReport:
    """Fail unless every key-preserving strategy of ``strategies`` gives key grouping's
    events over ``source`` while keys move (module notes); return the report (its
    ``keys_moved`` per strategy, its table as ``cep verify`` prints it).

    ``rules``: a rule file, rule text or :class:`cep.api.Rules`; ``source``: an
    ``--input`` spec (``"tweets:n=20000"``, a path), a mapping of input streams to
    specs, a DataFrame or a list of event dicts. ``moves="always"`` and ``threshold=0``
    force moves; ``batch_size`` events per batch (a key moves from batch 2 on).
    ``runner="spark"`` runs each strategy on Spark (``options``: RunConfig's, such as
    ``master``)."""
    compiled = rules if isinstance(rules, Rules) else compile_rules(rules, set=set, udf=udf)
    module = compiled.module
    names = list(dict.fromkeys(["kg", *strategies]))
    kept: dict[str, list[dict]] = {}

    def run_one(module: ir.CompiledModule, config: RunConfig,
                stop: threading.Event) -> RunResult:
        result = (split_run if config.runner == "local" else run_rules)(module, config, stop)
        kept[config.strategy] = result.records or []
        return result

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cep-strategies-") as tmp:
        config = RunConfig(_specs(module, source, Path(tmp)), runner=runner, engines=engines,
                           batch_size=batch_size, threshold=threshold,
                           stat_window=stat_window, moves=moves, progress=False, **options)
        results = verify(module, config, names, runner=run_one)
    report = StrategiesReport(results, time.perf_counter() - started)
    for result in results:
        if result.strategy == "pkg":
            report.pkg_differs = not result.equal_to_kg
        if result.strategy not in KEY_PRESERVING or result.strategy == "kg":
            continue
        if not result.equal_to_kg:
            diff = diff_events(kept[result.strategy], kept["kg"])
            report.problems.append(
                f"{result.strategy} changed the events ({result.keys_moved} keys moved); "
                f"its events against KG's:\n{diff.report()}")
        elif result.keys_moved == 0:
            batches = len(batch_bounds_of(result))
            report.problems.append(
                f"{result.strategy} moved no key, so its equal events prove nothing: the "
                f"input made {batches} batches of at most {batch_size} events (a key moves "
                "from the third on); use a smaller batch_size, more keys or more events")
    if report.problems:
        raise AssertionError("\n".join([*report.problems, "", str(report)]))
    return report


def batch_bounds_of(result: StrategyResult) -> list[int]:
    """The batches of a strategy's run (their events)."""
    return result.batch_events


def _specs(module: ir.CompiledModule, source: Any, tmp: Path) -> tuple[str, ...]:
    """``source`` as ``--input`` specs; events in memory are written to ``tmp`` first."""
    items = source.items() if isinstance(source, Mapping) else [(None, source)]
    specs = []
    for i, (stream, item) in enumerate(items):
        if isinstance(item, pd.DataFrame | list | tuple):
            name = stream or module.input_streams[0]
            frame = item if isinstance(item, pd.DataFrame) else pd.DataFrame.from_records(
                records_of(item))
            path = tmp / f"input-{i}.jsonl"
            write_input(module, name, frame, path)
            item = path
        specs.append(f"{stream}={item}" if stream else str(item))
    return tuple(specs)
