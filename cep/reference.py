"""The in-process reference evaluator: the definition of correct output.

It runs the compiled rules over an ordered list of events in one Python process, with no
Spark and no Splitter: derive streams, attach keys, feed one :class:`Engine`. Cutting the
input into batches (``batch_size``) must not change the output; tests use that, and the
Spark runtime is compared against this runner event for event. A module with an INSERT
INTO chain (``ir.Stage``) runs one engine per stage, stage after stage within a batch.

Event time: the watermark through the input (``cep.engine.clock``) is computed from the
input log (``cep.io.event_time``) or, for inputs given as tables, from their events in
seq order; the input is bounded, so it ends at +infinity and every pending timer fires.
An event below the watermark is *late*: counted, and under the ``drop`` policy taken out
before any rule sees it (the caller dead-letters it).

Rules that change while a job runs (``grammar.rule_set``): given the change log as
(version, first seq, module) triples, the input is cut at each first seq as well, and the
batch that starts there runs the version's rules, every engine's state carried over by
``Engine.evolved`` (unchanged rules go on as if nothing changed, new and replaced rules
start empty, removed rules' state goes). That defines the right events of a run whose
rules changed, which Spark's are compared with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import pandas as pd

from cep.engine.clock import Watermark, late_mask, timed_events
from cep.engine.derive import add_keys, derive_streams
from cep.engine.engine import Engine
from cep.engine.insert_into import complex_events, output_only
from cep.engine.output import (
    concat_sorted,
    empty_output,
    output_records,
    sort_output,
    stamp_stateless,
)
from cep.engine.table import KEY, SEQ, Table, concat, sorted_unique, take
from cep.io.event_time import FILES, ClockPiece, EventClock, end_of_log
from cep.io.inputlog import SEQ_SHIFT
from grammar import ir
from grammar.rule_set import output_order


@dataclass(frozen=True)
class Deployed:
    """A rule set version as a run applied it: its number, the seq of the first input
    event it sees, and its module."""

    version: int
    first_seq: int
    module: ir.CompiledModule


def batch_bounds(inputs: dict[str, Table], batch_size: int | None) -> list[tuple[int, int]]:
    """Half-open seq ranges covering every input event, ``batch_size`` events each
    (sequence numbers are places in the input, not counts, so they have gaps)."""
    seqs = [t[SEQ] for t in inputs.values() if t and len(t[SEQ])]
    if not seqs:
        return []
    if not batch_size:  # one batch: its bounds need no sort of millions of numbers
        return [(min(int(s.min()) for s in seqs), max(int(s.max()) for s in seqs) + 1)]
    ordered = sorted_unique(np.concatenate(seqs))
    lows = ordered[::batch_size]
    highs = np.append(lows[1:], ordered[-1] + 1)
    return list(zip(lows.tolist(), highs.tolist(), strict=True))


def input_watermark(module: ir.CompiledModule, inputs: dict[str, Table]) -> Watermark:
    """The watermark through inputs given as tables (one clock, events in seq order),
    ending after their last event's segment."""
    seqs, times, last = [], [], -1
    for name in module.input_streams:
        table, ts = inputs.get(name), module.streams[name].timestamp
        if table and len(table[SEQ]):
            last = max(last, int(table[SEQ].max()))
            if ts is not None:
                seqs.append(table[SEQ])
                times.append(table[ts])
    end = end_of_log((last >> SEQ_SHIFT) + 1) if last >= 0 else 0
    if not seqs:
        return Watermark(final=True, end_seq=end)
    seq, ts = np.concatenate(seqs), np.concatenate(times)
    order = np.argsort(seq, kind="stable")
    piece = ClockPiece(0, 0, FILES, False, seq[order], ts[order])
    return EventClock(module.lateness_us).advance([piece], final=True, end_seq=end)


def batch_watermarks(clock: Watermark, bounds: list[tuple[int, int]]) -> list[Watermark]:
    """The watermark through each batch ``bounds`` of an input (the end of the input
    in the last): what a runner that cuts the input so hands its engines."""
    return [clock.between(lo, hi, i == len(bounds) - 1) for i, (lo, hi) in enumerate(bounds)]


def log_watermark(module: ir.CompiledModule, pieces: list[ClockPiece], end_seq: int,
                  final: bool = True) -> Watermark:
    """The watermark through an input log read piece by piece (Kafka partitions as
    separate clocks, idle marks included: ``cep.io.event_time``); ``final``: the input
    ends there (a bounded input; not a followed one that was stopped)."""
    return EventClock(module.lateness_us).advance(pieces, final=final, end_seq=end_seq)


@dataclass
class ReferenceRun:
    """A reference run's events (in the reference order), its late events (seq, ts and
    the watermark they were below) and per batch what the engines held after it."""

    output: Table
    late: dict[str, np.ndarray]
    batches: list[dict] = field(default_factory=list)


def reference_run(module: ir.CompiledModule, inputs: dict[str, Table],
                  batch_size: int | None = None, watermark: Watermark | None = None,
                  late: str = "process", figures: bool = False,
                  changes: list[Deployed] | None = None) -> ReferenceRun:
    """Every output row of the module over the inputs, in the reference order, with the
    late events (taken out first under ``late="drop"``) and, with ``figures``, what each
    batch did and left in the engines (a snapshot of them per batch: for runs, not for
    tests that cut an input into many batches), with the seconds it took. ``changes``:
    the rule set versions after ``module`` (version 0), each from its first seq on."""
    changes = sorted(changes or [], key=lambda d: d.first_seq)
    clock = watermark if watermark is not None else input_watermark(module, inputs)
    found = late_events(module, inputs, clock)
    if late == "drop" and len(found["seq"]):
        inputs = {name: take(t, ~np.isin(t[SEQ], found["seq"])) if t else t
                  for name, t in inputs.items()}
    engines = stage_engines(module)
    outputs, batches = [], []
    bounds = cut_at(batch_bounds(inputs, batch_size) or [(0, 0)],
                    [d.first_seq for d in changes])
    clocks = [clock] if len(bounds) == 1 else batch_watermarks(clock, bounds)
    running, pending = module, list(changes)
    order = output_order([module, *(d.module for d in changes)])
    for i, (lo, hi) in enumerate(bounds):
        while pending and pending[0].first_seq <= lo:
            deployed = pending.pop(0)
            running = deployed.module
            engines = [engine.evolved(stage, deployed.version)[0] for engine, stage
                       in zip(engines, running.stage_modules(), strict=True)]
        chunk = inputs if len(bounds) == 1 else batch_of(inputs, lo, hi)
        part = clocks[i]
        started = time.perf_counter()
        out = run_stages(running, engines, chunk, part, order)
        seconds = time.perf_counter() - started
        outputs.append(out)
        if figures:
            batches.append({**batch_figures(i, chunk, out, engines, part, found["seq"], lo,
                                            hi), "seconds": round(seconds, 4)})
    return ReferenceRun(concat_sorted(outputs, order), found, batches)


def batch_of(inputs: dict[str, Table], lo: int, hi: int) -> dict[str, Table]:
    """The events of ``inputs`` whose seq is in [lo, hi): one batch of :func:`batch_bounds`."""
    return {name: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi)) for name, t in inputs.items()}


def cut_at(bounds: list[tuple[int, int]], seqs: list[int]) -> list[tuple[int, int]]:
    """Batch bounds also cut where a rule set version starts; a version that starts
    after the last event gets an empty last batch of its own (where a bounded input's
    end lets all time pass: under that version's rules, as on Spark)."""
    out = list(bounds)
    for seq in sorted(set(seqs)):
        for i, (lo, hi) in enumerate(out):
            if lo < seq < hi:
                out[i:i + 1] = [(lo, seq), (seq, hi)]
                break
        else:
            if seq >= out[-1][1] and out[-1][1] > out[-1][0]:
                out.append((seq, seq))
    return out


def run_reference(module: ir.CompiledModule, inputs: dict[str, Table],
                  batch_size: int | None = None, watermark: Watermark | None = None,
                  late: str = "process") -> Table:
    """Every output row of the module over the inputs, in the reference order."""
    return reference_run(module, inputs, batch_size, watermark, late).output


def late_events(module: ir.CompiledModule, inputs: dict[str, Table], clock: Watermark
                ) -> dict[str, np.ndarray]:
    """The input events below the watermark when they arrive: their seq, timestamp and
    that watermark, in seq order."""
    seq, ts = timed_events(module, inputs)
    late = late_mask(seq, ts, clock)
    seq, ts = seq[late], ts[late]
    order = np.argsort(seq, kind="stable")
    seq, ts = seq[order], ts[order]
    return {"seq": seq, "ts": ts, "watermark": clock.just_before(seq)}


def batch_figures(batch: int, inputs: dict[str, Table], out: Table, engines: list[Engine],
                  clock: Watermark, late: np.ndarray, lo: int, hi: int) -> dict:
    """What a batch did and what the engines hold after it: the figures a Spark batch
    reports (``watermark`` is its value after the batch's last event)."""
    return {"batch": batch,
            "events_in": sum(len(t[SEQ]) for t in inputs.values() if t),
            "events_out": len(out["seq"]) if out else 0,
            "watermark": clock.last,
            "late_events": int(((late >= lo) & (late < hi)).sum()),
            **held_figures(engines)}


def held_figures(engines: list[Engine]) -> dict:
    """What the engines hold: keys and state bytes (a batch's figures, and the streamed
    local runner's whole-input row)."""
    return {"keys_held": sum(len(e.keys()) for e in engines),
            "state_bytes": sum(len(e.snapshot()) for e in engines)}


def run_batch(module: ir.CompiledModule, engine: Engine, inputs: dict[str, Table],
              clock: Watermark) -> Table:
    """One batch through stateless rules, keys and the engine; all output rows."""
    return _run_stage(module, engine, inputs, clock)[1]


def stage_engines(module: ir.CompiledModule) -> list[Engine]:
    """A new engine per stage of ``module`` (one without INSERT INTO chains)."""
    return [Engine(stage) for stage in module.stage_modules()]


def _run_stage(module: ir.CompiledModule, engine: Engine, inputs: dict[str, Table],
               clock: Watermark) -> tuple[dict[str, Table], Table, bool]:
    """One stage of one batch: every stream after its stateless rules, its rows and
    whether they are the engine's alone (no stateless rule's), in the engine's order."""
    streams, keyed, placed = _keyed_stage(module, inputs, clock)
    out = engine.process(keyed, clock)
    return streams, concat([*placed, out]) or empty_output(), not placed


def _keyed_stage(module: ir.CompiledModule, inputs: dict[str, Table], clock: Watermark
                 ) -> tuple[dict[str, Table], dict[str, Table], list[Table]]:
    """A stage's streams after its stateless rules, its engine's streams with their
    keys, and the stateless rules' output rows placed at the watermark after them."""
    streams, stateless = derive_streams(module, inputs)
    keyed = {name: add_keys(streams[name], module.key) for name in module.stateful_streams()}
    placed = [stamp_stateless(rows, clock.after(rows["seq"])) for rows in stateless
              if rows and len(rows["seq"])]
    return streams, keyed, placed


#: the engine of each row from its key value (a ``splitter.routing.KeyRouter`` of a batch)
Owners = Callable[[np.ndarray], np.ndarray]


def split_batch(module: ir.CompiledModule, engines: list[Engine], owners: Owners,
                inputs: dict[str, Table], clock: Watermark, order: dict[str, int]
                ) -> tuple[list[dict], list[dict[str, int]]]:
    """One batch of a one-stage module over several engines, each row to the engine
    ``owners`` names for its key, as the Splitter routes it on Spark: the output
    records in the reference ``order``, and each engine's rows per key (key as JSON
    text), the load the Balancer reads. Per key, rows keep their seq order, so engines
    that hold whole keys give the one engine's events (``cep.testing`` checks that)."""
    _, keyed, placed = _keyed_stage(module, inputs, clock)
    routed = {name: np.asarray(owners(table[KEY])) for name, table in keyed.items()}
    outputs, loads = list(placed), []
    for e, engine in enumerate(engines):
        mine = {name: take(table, routed[name] == e) for name, table in keyed.items()}
        outputs.append(engine.process(mine, clock))
        keys = [t[KEY] for t in mine.values() if t and len(t[SEQ])]
        loads.append(_rows_per_key(np.concatenate(keys)) if keys else {})
    rows = sort_output(concat(outputs) or empty_output(), order)
    return output_records(rows), loads


def _rows_per_key(keys: np.ndarray) -> dict[str, int]:
    """Rows per key, keys as JSON text (a NULL key is ``null``)."""
    counts = pd.Series(keys, dtype=object).value_counts(sort=False, dropna=False)
    return {json.dumps(None if k is None or k != k else k): int(n)
            for k, n in zip(counts.index.tolist(), counts.tolist(), strict=True)}


def run_stages(module: ir.CompiledModule, engines: list[Engine],
               inputs: dict[str, Table], clock: Watermark,
               order: dict[str, int] | None = None) -> Table:
    """One batch through every stage of an INSERT INTO chain (one engine per stage, see
    ``CompiledModule.stage_modules``): each stage's inserting rules' rows become events
    of the next stage's streams (``cep.engine.insert_into``); the rows that are output,
    with ``order`` (rule → place) in that reference order: as the one engine gave them
    where it made them all and ranks its rules alike, else sorted."""
    streams = inputs
    outputs, engine_order = [], len(engines) == 1
    for stage, engine in zip(module.stage_modules(), engines, strict=True):
        streams, out, alone = _run_stage(stage, engine, streams, clock)
        engine_order = engine_order and alone and _ranks_alike(engine.rule_order, order)
        outputs.append(output_only(module, out))
        streams = {**streams, **complex_events(module, out)}
    rows = concat(outputs) or empty_output()
    return rows if order is None or engine_order else sort_output(rows, order)


def _ranks_alike(engine_order: dict[str, int], order: dict[str, int] | None) -> bool:
    """Whether ``order`` ranks the engine's rules as the engine does (rules it does not
    rank first, as ``sort_output`` does): the engine's sorted rows are then in it."""
    if order is None:
        return False
    ranks = [order.get(name, -1) for name in sorted(engine_order, key=engine_order.get)]
    return all(a < b for a, b in pairwise(ranks))


def batch_records(module: ir.CompiledModule, engines: list[Engine], inputs: dict[str, Table],
                  clock: Watermark, order: dict[str, int]) -> list[dict]:
    """One batch through every stage (:func:`run_stages`), its output as records in the
    reference ``order``: what a caller feeding the evaluator batch by batch reads."""
    return output_records(run_stages(module, engines, inputs, clock, order))


def time_passes(clock: EventClock, to_us: int, at_seq: int, end_seq: int) -> Watermark:
    """The watermark of a batch without events in which event time is moved to
    ``to_us`` by hand (a test's ``advance_watermark``) at ``at_seq``, the place in the
    input after the events so far: the timers it makes due fire there, with that seq.
    ``clock`` moves with it, so later events below ``to_us`` are late. Time never goes
    back: a ``to_us`` at or below the watermark changes nothing."""
    before = clock.wm
    if to_us <= before:
        return Watermark(before, final=False, end_seq=end_seq)
    clock.wm = to_us
    return Watermark(before, np.array([at_seq], dtype=np.int64),
                     np.array([to_us], dtype=np.int64), False, end_seq)


def input_ends(clock: EventClock, end_seq: int) -> Watermark:
    """The watermark of the batch without events in which a bounded input ends: all
    event time passes, every pending timer fires at ``end_seq``."""
    return Watermark(clock.wm, final=True, end_seq=end_seq)
