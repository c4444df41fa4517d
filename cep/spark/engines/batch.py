"""One CEP engine's micro-batch, as the ``transformWithStateInPandas`` processor
(``processor.EngineProcessor``) runs it, with the run's values of ``engine_task.py``.

Grouped by engine label, so each call of ``handleInputRows`` is one engine's whole
micro-batch. The engine's keys stay resident in the Python worker that ran its last
batch (``resident.py``: trusted only at the state store's version), and the batch runs
the keys it touches (``touched_keys``) in a work engine split off it, so its cost
follows the batch, not what the engine holds; moved keys are imported into and exported
from the work engine (``migration``). The batch's change, merged back, is appended to
the engine's changelog in the state store (``log.py``): three state calls per batch
(one more per 4 MiB part of its blob), where state kept per key cost one or more per
key touched.

The engine writes its complex events itself, as its part of the batch's output
(``event_parts.py``): events never travel to the driver. What the task returns is one
``stats`` row: the engine's rows, busy time, events per rule, per-key load for the
Balancer, and the counts and timings of the tasks that read and routed its input.

An INSERT INTO chain (``chain_stages.py``) has N engines per stage: the label says which stage
and engine a group is. A stage's engine runs that stage's rules, leaves its inserting
rules' rows to the next stage as chain rows, and writes the rest as the output part of
the batch its events' records were read in (``batch - stage``). Keys of later stages
stay with their key-grouping engine: only stage 0's keys move, and only stage 0 reports
per-key load to the Balancer.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cep.engine import codec
from cep.engine.clock import Watermark
from cep.engine.engine import Engine, Parcel
from cep.engine.json_rows import object_texts
from cep.engine.output import sort_output, stamp_stateless
from cep.engine.table import KEY, Table, concat, factorize, first_rows, nrows, with_null_fields
from cep.engine.udf.shipment import install_udfs
from cep.engine.udf_errors import collecting
from cep.io.event_time import ClockPiece, EventClock
from cep.io.rule_changes import RuleBook
from cep.io.udf_letters import write_udf_letters
from cep.spark.chains.stages import ChainParts, split_rows
from cep.spark.engines.late_rows import find_late, late_path
from cep.spark.engines.log import EngineLog
from cep.spark.engines.resident import keep, take_engine
from cep.spark.engines.task import EngineTask
from cep.spark.output.event_parts import EventParts, event_lines, order_table
from cep.spark.output.latest import engine_latest
from grammar import ir
from grammar.rule_set import output_order
from migration.protocol import (
    check_parcel,
    exports,
    key_text,
    parcel_name,
    parcel_receivers,
    parcel_senders,
    rescaled,
)
from splitter.keymaps import key_map, prime
from splitter.late_candidates import Candidates
from splitter.payload import unpack_payload

if TYPE_CHECKING:  # pymongo is imported only where keys move (a MongoDB store)
    from migration.store import StateStore


def run_engine_batch(p: EngineTask, changes, key, rows) -> Iterator[pd.DataFrame]:
    """Engine label ``key``'s micro-batch: its rows' payloads through its engine, the
    events written as its part of the batch's output, one ``stats`` row returned.
    ``changes`` is the processor's state variable (``engine_log``)."""
    install_udfs(p.udfs)  # before any rule runs: the user functions its rules call
    clock = StageClock()
    event_parts = EventParts(*p.parts_at)
    chain_parts = ChainParts(p.chain_at) if p.chain_at is not None else None
    stage, engine_index = p.engine_of_label[int(key[0])]
    store = p.store if stage == 0 else None  # later stages: key grouping
    streams: dict[str, list[Table]] = {}
    passthrough: list[Table] = []
    batch, tasks = -1, Counter()
    truth: list[np.ndarray] = []
    times: list[tuple] = []
    checks: list[Candidates] = []  # input events to check for lateness (late_rows)
    for frame in rows:
        for payload in frame["payload"].tolist():
            batch, mine, extra, info, first_stories, time_info, check, maps = (
                unpack_payload(payload))
            if maps and store is not None:  # no MongoDB round trip for these versions
                prime(store, maps)
            tasks.update(info)
            if time_info is not None:
                times.append(time_info)
            if check is not None:
                checks.append(check)
            for name, table in mine.items():
                streams.setdefault(name, []).append(table)
            if extra:
                passthrough.append(extra)
            if first_stories is not None:
                truth.append(first_stories)
    rules = RuleVersions(p, stage, rules_version(times))
    module = rules.stage_module(rules.version)
    # the input tasks left out the fields no rule reads: NULL where an engine binds them
    batch_streams = {n: with_null_fields(concat(streams.get(n, [])), module.streams[n].fields)
                     for n in module.stateful_streams()}
    clock.lap("unpack")
    label = int(key[0])
    log = EngineLog(changes)
    engine, origin = take_engine(rules.stage_module, log, p.start, label, batch)
    if engine.version != rules.version:  # the rules changed: carry the state over
        engine = engine.evolved(module, rules.version)[0]
    fetched = time.perf_counter()
    incoming = (open_moved_keys(store, engine, engine_index, batch, rules.stage_module)
                if store is not None else Incoming([], [], None))
    # reading and opening the parcels is the import's work, not the restore's: the gate
    # prices a moved key by its export and import seconds (move_gain.MoveCosts)
    fetched = time.perf_counter() - fetched
    if incoming.clock is not None:  # an engine starting at a scale change
        engine.clock = incoming.clock
    watermark = batch_watermark(p.module, engine, times)
    late = find_late(checks, watermark)
    received = sum(nrows(t) for t in batch_streams.values())
    if p.late == "drop" and len(late.seq):  # as the reference: before any rule sees them
        batch_streams = {n: late.drop_from(t) for n, t in batch_streams.items()}
        passthrough = [late.drop_from(t) for t in passthrough]
    if late.count and p.late == "drop" and p.dead_at is not None:
        late.write(p.module, late_path(p.dead_at, batch, label))
    load, plain = stream_key_load(batch_streams)  # rows per key, in order of first arrival
    leaving = (leaving_keys(store, engine_index, batch, engine, [*load, *incoming.keys])
               if store is not None else [])
    due = [json.dumps(k) for k in engine.due_keys(watermark.end)]
    touched = touched_keys(load, leaving, due)
    values = key_values(touched, plain)
    work = engine.split_off(values)
    clock.lap("restore")
    moves = {"imported_keys": 0, "exported_keys": 0, "exported_bytes": 0}
    imported: list[str] = []
    if store is not None:
        for parcel in incoming.parcels:  # only once every parcel checked out
            work.adopt(parcel)
        imported = incoming.keys
        moves["imported_keys"] = len(imported)
        clock.lap("import")
        clock.shift(fetched, "restore", "import")
    with collecting() as failures:
        events = work.process(batch_streams, watermark)
    if failures and p.dead_at is not None and p.log_at is not None:
        write_udf_letters(udf_path(p.dead_at, batch, label), p.module, p.log_at, failures)
    factor = p.slowdown.get(engine_index, 1.0)
    if factor > 1.0:
        time.sleep((factor - 1.0) * (time.perf_counter() - clock.last))
    clock.lap("process")
    if store is not None:
        moves.update(export_moved_keys(store, work, engine_index, leaving, batch,
                                       engine.clock))
        clock.lap("export")
    saved = save(log, engine, work, [*values, *(json.loads(k) for k in imported
                                                 if k not in load)], batch, incoming.bytes)
    keep(p.start, label, batch, saved["token"], engine)
    held = saved["held"]
    clock.lap("save")
    if stage == 0:
        injected_fault(batch, engine_index)
    if passthrough:
        placed = [stamp_stateless(rows, watermark.after(rows["seq"])) for rows in passthrough]
        events = sort_output(concat([*placed, events]), rules.order())
    if stage + 1 < len(p.stages):
        assert chain_parts is not None
        chained, events = split_rows(rules.module, events)
        chain_parts.write(batch, stage + 1, engine_index, chained)
        chain_parts.write_watermark(batch, stage + 1, watermark)
    frame = event_frame(events)
    event_parts.write(batch - stage, stage * p.n_engines + engine_index,
                      event_lines(frame), order_table(frame))
    latest = engine_latest(frame)  # for a live view (latest.py)
    clock.lap("output")
    scores = rule_scores(frame, np.concatenate(truth) if truth else None)
    counts = {name: int(tasks.pop(name, 0)) for name in ("dead", "blank", "truth")}
    stages = {**clock.laps, **tasks}  # read, derive, route: in the input tasks
    stats = {"engine": engine_index, "batch": batch, "stage": stage,
             "rows": received,
             "busy_s": round(clock.total, 6), "cpu_s": round(clock.cpu, 6), **moves,
             "restored": {origin.kind: 1, "log_entries": origin.entries},
             "keys_held": held, "state_bytes": saved["bytes"],
             "watermark": watermark.last, "late_events": late.count, "timer_keys": len(due),
             "input_ended": input_ended(times), "rules_version": rules.version,
             "saved": saved["kind"],
             **counts, "stages": stages, "outputs": scores,
             "latest": latest,
             "key_load": load if stage == 0 else {}}
    yield pd.DataFrame({"engine": np.array([engine_index], np.int32),
                        "stats": [json.dumps(stats)]})


def udf_path(dead_at: str, batch: int, label: int) -> str:
    """Where engine ``label`` dead-letters the records its user functions raised on in
    ``batch`` (beside its late events: ``late_rows.late_path``)."""
    return os.path.join(dead_at, f"batch-{batch:07d}", f"udf-engine-{label:06d}.jsonl")


def event_frame(events: Table) -> pd.DataFrame:
    """Output rows as the frame :func:`event_lines` formats (key as JSON text, so ints
    and strings survive)."""
    n = nrows(events) if events else 0
    if n == 0:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
            ("rule", object), ("key", object), ("seq", "int64"), ("ts", "int64"),
            ("ts_null", bool), ("payload", object), ("at", "int64"), ("origin", "int64"))})
    return pd.DataFrame({
        "rule": events["rule"],
        # JSON text per distinct key (``json.dumps``, as ``migration.protocol.key_text``)
        "key": object_texts(events["key"], json.dumps),
        "seq": events["seq"],
        "ts": events["ts"],
        "ts_null": events["ts__null"],
        "payload": events["values"],
        "at": events["at"],  # the place in the reference order within a seq
        "origin": events["origin"],
    })


def rule_scores(frame: pd.DataFrame, truth: np.ndarray | None) -> dict[str, list[int]]:
    """Per rule: [events, events whose trigger a generator knows to be a first story]."""
    if frame.empty:
        return {}
    codes, rules = pd.factorize(frame["rule"].to_numpy(dtype=object))
    events = np.bincount(codes, minlength=len(rules))
    hits = (np.bincount(codes[np.isin(frame["seq"].to_numpy(), truth)], minlength=len(rules))
            if truth is not None else np.zeros(len(rules), dtype=np.int64))
    return {str(rule): [int(n), int(h)]
            for rule, n, h in zip(rules.tolist(), events.tolist(), hits.tolist(), strict=True)}


def key_values(texts: list[str], plain: dict[str, object]) -> list:
    """The key values of JSON ``texts``: those in ``plain`` (keys of the batch's rows
    that are a ``str`` or an ``int``, whose ``json.loads`` gives them back equal and of
    their type) as they are, any other (a composite, a float, a key only handed over or
    due) read from its text. Why: one ``json.loads`` per key touched cost 0.45 of the
    flights' 9 CPU seconds of Python work on the Spark path."""
    return [plain[text] if text in plain else json.loads(text) for text in texts]


def touched_keys(load: dict[str, int], leaving: list[str], due: list[str]) -> list[str]:
    """The keys (JSON texts) a batch splits off its resident engine: those its events
    reach, those it hands over and those whose event-time timers (or rows waiting for
    the watermark) the batch's watermark makes due: never every key the engine holds."""
    return list(dict.fromkeys([*load, *leaving, *due]))


def batch_watermark(module: ir.CompiledModule, engine: Engine, times: list[tuple]
                    ) -> Watermark:
    """The watermark through this batch, from what its tasks sent (``input_tasks``):
    stage 0's engines combine the pieces' rises on their own copy of the input log's
    clock (kept in the engine's state: ``Engine.clock``), every engine of a stage to
    the same watermark; a later stage's engines get the one the stage before used."""
    for info in times:
        if info[0] == "watermark":
            return (Watermark.from_plain(info[1]) if info[1] is not None
                    else Watermark(end_seq=0))
    pieces = [ClockPiece.from_plain(piece) for info in times for piece in info[1]]
    final = any(info[2] for info in times)
    end_seq = max((info[3] for info in times), default=0)
    clock = EventClock(module.lateness_us, engine.clock)
    watermark = clock.advance(pieces, final, end_seq)
    engine.clock = clock.state()
    return watermark


class RuleVersions:
    """The rule set versions an engine task may meet: the batch's own (``version``), the
    one its state was saved under, and a moved key's parcel's. Version 0 is the task's
    own module; later ones come from the run directory's change log (``rule_versions``)."""

    def __init__(self, p: EngineTask, stage: int, version: int) -> None:
        self.task, self.stage, self.version = p, stage, version
        self.book = RuleBook(p.workdir, p.module) if p.workdir is not None else None
        self.module = self.full(version)

    def full(self, version: int) -> ir.CompiledModule:
        if version == 0 or self.book is None:
            return self.task.module
        return self.book.module(version)

    def stage_module(self, version: int) -> ir.CompiledModule:
        """This task's stage's rules in ``version``."""
        if version == 0 or self.book is None:
            return self.task.stages[self.stage]
        return self.full(version).stage_modules()[self.stage]

    def order(self) -> dict[str, int]:
        """The reference order of rules over every version so far."""
        if self.version == 0 or self.book is None:
            return self.task.rule_order
        return output_order([v.module for v in self.book.versions(self.version)])


def rules_version(times: list[tuple]) -> int:
    """The rule set version of the batch's input, as its tasks were told by the planner
    (``source.py``): the last item of what each task sent about time."""
    for info in times:
        if (info[0] == "pieces" and len(info) > 4) or (info[0] == "watermark"
                                                       and len(info) > 2):
            return int(info[-1])
    return 0


def input_ended(times: list[tuple]) -> bool:
    """Whether this is the batch in which a bounded input ends (all event time passes),
    from what its input tasks sent: the progress line names that batch for what it is."""
    return any(info[0] == "pieces" and info[2] for info in times)


def save(log: EngineLog, engine: Engine, work: Engine, keys: list, batch: int,
         moved_in: int = 0) -> dict:
    """Merge the work engine back into the resident one and append the batch to the
    engine's log: its change (a delta), or the whole engine (a base) where the fold
    rule says so (``engine_log.py``; ``moved_in``: the bytes of the parcels the batch
    imported) or where the engine is left holding no key. Returns the token drawn for
    this processing of the batch, the kind of blob, its bytes and how many keys the
    engine holds after it.

    Why a base when no key is left: an engine that retires at a scale change hands all
    its keys over, and its log (a base and deltas) stays behind in the checkpoint. When
    the job later scales out again, the engine starting under that label rebuilt the
    whole log to arrive at nothing: 'restore' took 1.18 s of task time against 0.41 in
    the next batch on a 2 -> 4 FSD change (``bench/results/scale_midrun-importfold.json``,
    batch 19, ``restored.rebuilt``). The base of an empty engine is a few hundred bytes
    and clears the entries before it."""
    before = log.version()
    change = engine.merge_in(work, keys)
    held = len(engine.keys())
    # a first entry, an engine left empty and a new rule set (which starts a new log)
    # write a base whatever the delta's size: their change is not encoded at all
    base = before is None or held == 0 or before.rules != engine.version
    blob = b"" if base else codec.encode(change, "change")
    kind = "delta"
    if base or before.folds(len(blob), moved_in):
        blob, kind = engine.snapshot(), "base"
    token = uuid.uuid4().hex
    log.append(batch, token, blob, base=kind == "base", rules=engine.version,
               moved_in=moved_in)
    return {"token": token, "kind": kind, "bytes": len(blob), "held": held}


def injected_fault(batch: int, engine: int) -> None:
    """For the retry test only: ``CEP_FAULT_AFTER_SAVE="batch,engine,marker"`` fails
    the task of that engine (of the first stage) once (the marker file says it did),
    after its resident copy advanced and before the task commits, so that Spark retries
    it. Named by engine, not label: the labels depend on the run's partitions."""
    spec = os.environ.get("CEP_FAULT_AFTER_SAVE")
    if not spec:
        return
    at_batch, at_engine, marker = spec.split(",", 2)
    if (int(at_batch), int(at_engine)) == (batch, engine) and not os.path.exists(marker):
        with open(marker, "x"):
            pass
        raise RuntimeError(f"injected fault in engine {engine}'s batch {batch}")


@dataclass
class Incoming:
    """The parcels an engine reads at the start of a batch, opened and checked: the
    keys they name (JSON text), the parcels, and, for an engine that starts at a scale
    change, the watermark clock its senders had (``Engine.export_keys``)."""

    keys: list[str]
    parcels: list[Parcel]
    clock: dict | None
    bytes: int = 0  # the parcels' encoded size (the state log's fold rule)


def open_moved_keys(store: StateStore, engine: Engine, e: int, batch: int,
                    rules_of: Callable[[int], ir.CompiledModule] | None = None) -> Incoming:
    """Read and check the parcels sent to engine ``e`` for this batch (step 1 of
    docs/architecture.md#handoff-protocol); :meth:`Engine.adopt` takes them in. A
    parcel written under another rule set version is opened with ``rules_of(its
    version)`` and carried onto the engine's (``Engine.open_parcel``). An engine
    outside ``M[t]`` (past the engine count) imports nothing."""
    prev = key_map(store, batch - 1) if batch > 0 else None
    cur = key_map(store, batch)
    if prev is None or e >= cur.n_engines:
        return Incoming([], [], None)
    senders = parcel_senders(e, prev, cur)
    if not senders:
        return Incoming([], [], None)
    names = {source: parcel_name(source, e) for source in senders}
    parcels = store.get_states(batch - 1, list(names.values()))  # missing: the task fails
    opened = [engine.open_parcel(parcels[names[source]], rules_of) for source in senders]
    keys: list[str] = []
    for source, parcel in zip(senders, opened, strict=True):
        named = [key_text(k) for k in parcel.keys]
        check_parcel(e, source, named, prev, cur)
        keys += named
    clock = None
    if rescaled(prev, cur) and e >= prev.n_engines:
        clock = next((p.engine.clock for p in opened if p.engine.clock), None)
    return Incoming(keys, opened, clock, sum(len(parcels[n]) for n in names.values()))


def import_moved_keys(store: StateStore, engine: Engine, e: int, batch: int,
                      rules_of: Callable[[int], ir.CompiledModule] | None = None
                      ) -> list[str]:
    """Adopt the keys that move to engine ``e`` in this batch (:func:`open_moved_keys`,
    then :meth:`Engine.adopt` once every parcel checked out)."""
    incoming = open_moved_keys(store, engine, e, batch, rules_of)
    for parcel in incoming.parcels:
        engine.adopt(parcel)
    return incoming.keys


def leaving_keys(store: StateStore, e: int, batch: int, engine: Engine | None = None,
                 arriving: Iterable[str] = ()) -> list[str]:
    """The keys engine ``e`` hands over at the end of this batch (step 3): across a
    scale change also every key whose owner changes among those ``engine`` holds (all
    of them on an engine that retires) and those ``arriving`` in this batch (JSON text:
    the keys its rows reach and the keys it imports).

    Why ``arriving``: this is asked before the batch runs (the keys leave from the work
    engine, which must be split off with them), when the resident engine does not hold
    yet a key whose first row comes in this batch, nor one a parcel brings. Such a key
    has state after the batch; left out, it would stay behind with the old owner and
    its new owner would start it empty (a rescaled restart lost one row of a length
    window that way: tests/spark/test_rescale_restart.py)."""
    cur, nxt = key_map(store, batch), key_map(store, batch + 1)
    if e >= cur.n_engines:
        return []
    held: list[str] = []
    if engine is not None and rescaled(cur, nxt):
        kept = engine.keys()
        held = [key_text(k.item() if isinstance(k, np.generic) else k) for k in kept]
        held = list(dict.fromkeys([*held, *arriving]))
    return exports(e, cur, nxt, held)


def export_moved_keys(store: StateStore, engine: Engine, e: int, keys: list[str],
                      batch: int, clock: dict | None = None) -> dict:
    """Hand over the keys that leave engine ``e`` after this batch, one parcel per
    receiving engine (step 3; across a scale change one to every engine of ``M[t+1]``,
    empty or not, carrying ``clock``, the sender's watermark clock)."""
    cur, nxt = key_map(store, batch), key_map(store, batch + 1)
    scaling = rescaled(cur, nxt) and e < cur.n_engines
    if not keys and not scaling:
        return {"exported_keys": 0, "exported_bytes": 0}
    receivers = parcel_receivers(e, keys, cur, nxt)
    parcels = {parcel_name(e, target): engine.export_keys([json.loads(k) for k in sent],
                                                          clock if scaling else None)
               for target, sent in receivers.items()}
    store.put_states(batch, parcels)
    return {"exported_keys": len(keys), "exported_bytes": sum(map(len, parcels.values()))}


class StageClock:
    """Seconds spent in each stage of an engine's batch, for the time breakdown that
    ``cep bench`` reports (Spark's own costs, such as the state store commit, come from
    the query's progress reports instead)."""

    def __init__(self) -> None:
        self.started = self.last = time.perf_counter()
        self.cpu_started = time.process_time()
        self.laps: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.laps[stage] = round(now - self.last, 6)
        self.last = now

    def shift(self, seconds: float, source: str, target: str) -> None:
        """Count ``seconds`` timed inside stage ``source`` as ``target``'s."""
        seconds = min(seconds, self.laps.get(source, 0.0))
        self.laps[source] = round(self.laps[source] - seconds, 6)
        self.laps[target] = round(self.laps.get(target, 0.0) + seconds, 6)

    @property
    def total(self) -> float:
        return time.perf_counter() - self.started

    @property
    def cpu(self) -> float:
        """CPU seconds of this worker process since the start: unlike the wall clock, not
        inflated by the other tasks, the JVM and the router sharing the machine's cores
        (nor by a ``--slow-engine`` sleep)."""
        return time.process_time() - self.cpu_started


def stream_key_load(streams: dict[str, Table]) -> tuple[dict[str, int], dict[str, object]]:
    """Rows per key over the engine's streams of a batch (the Balancer's load), and the
    keys that are a plain ``str`` or ``int`` by their JSON text (``key_values``)."""
    keys = [t[KEY] for t in streams.values() if t and nrows(t)]
    return _key_load(np.concatenate(keys)) if keys else ({}, {})


def key_counts(keys: np.ndarray) -> dict[str, int]:
    """Rows per key (keys as JSON text), counted with one bincount."""
    return _key_load(keys)[0]


def _key_load(keys: np.ndarray) -> tuple[dict[str, int], dict[str, object]]:
    codes = factorize(keys)
    counts = np.bincount(codes)
    first = keys[first_rows(codes, len(counts))].tolist()
    texts = [json.dumps(k) for k in first]
    plain = {t: k for t, k in zip(texts, first, strict=True) if type(k) in (str, int)}
    return dict(zip(texts, counts.tolist(), strict=True)), plain
