"""One CEP engine's micro-batch, as the ``transformWithStateInPandas`` processor
(``processor.EngineProcessor``) runs it, with the run's values of ``engine_task.py``.

Grouped by engine label, so each call of ``handleInputRows`` is one engine's whole
micro-batch. The engine's state lives per key in two MapStates (a head per key, and the
rows each batch appended to the key's windows, in :mod:`cep.engine.codec`'s data-only
form; ``key_layout``): a batch reads the state of the keys it touches (and of the keys
it hands over), runs an :class:`Engine` holding only those keys, and writes back what
changed. So a batch costs what its keys cost, not what the
engine holds: one blob of the whole engine, restored and written every batch, grew with
the retained state (1M keys of a ``#length(5)``: 0.9 s to snapshot, 0.5 s to restore,
5 s to process, against 0.05 s at 100k), while a MapState call costs ~0.05–0.1 ms.

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
import time
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cep.engine import codec
from cep.engine.engine import Engine
from cep.engine.table import KEY, Table, concat, factorize, nrows
from cep.handoff.protocol import exports, imports
from cep.spark.chain_stages import ChainParts, split_rows
from cep.spark.engine_task import EngineTask
from cep.spark.event_parts import EventParts, event_lines
from cep.spark.key_layout import (
    Layout,
    pack,
    plan,
    read_head,
    rebuild,
    split_state,
    unpack,
)
from cep.spark.latest import engine_latest
from cep.spark.mapstate import MapCalls
from cep.spark.splitter.keymaps import key_map
from cep.spark.splitter.payload import unpack_payload
from cep.spark.warm_state_files import WarmFiles

if TYPE_CHECKING:  # pymongo is imported only where keys move (a MongoDB store)
    from cep.handoff.store import StateStore


def run_engine_batch(p: EngineTask, heads, segments, key, rows) -> Iterator[pd.DataFrame]:
    """Engine label ``key``'s micro-batch: its rows' payloads through its engine, the
    events written as its part of the batch's output, one ``stats`` row returned.
    ``heads`` and ``segments`` are the processor's two MapStates (``KeyStates``)."""
    clock = StageClock()
    event_parts = EventParts(*p.parts_at)
    chain_parts = ChainParts(p.chain_at) if p.chain_at is not None else None
    stage, engine_index = p.engine_of_label[int(key[0])]
    module = p.stages[stage]
    store = p.store if stage == 0 else None  # later stages: key grouping
    streams: dict[str, list[Table]] = {n: [] for n in module.stateful_streams()}
    passthrough: list[Table] = []
    batch, tasks = -1, Counter()
    truth: list[np.ndarray] = []
    for frame in rows:
        for payload in frame["payload"].tolist():
            batch, mine, extra, info, first_stories = unpack_payload(payload)
            tasks.update(info)
            for name, table in mine.items():
                streams[name].append(table)
            if extra:
                passthrough.append(extra)
            if first_stories is not None:
                truth.append(first_stories)
    batch_streams = {n: concat(parts) for n, parts in streams.items()}
    clock.lap("unpack")
    engine = Engine(module)
    leaving = leaving_keys(store, engine_index, batch) if store is not None else []
    load = stream_key_load(batch_streams)  # rows per key, in order of first arrival
    arriving = list(load)
    key_states = KeyStates(heads, segments, p.start, int(key[0]))
    key_states.load(engine, list(dict.fromkeys([*arriving, *leaving])), batch)
    clock.lap("restore")
    moves = {"imported_keys": 0, "exported_keys": 0, "exported_bytes": 0}
    imported: list[str] = []
    if store is not None:
        imported = import_moved_keys(store, engine, engine_index, batch)
        moves["imported_keys"] = len(imported)
        clock.lap("import")
    events = engine.process(batch_streams)
    factor = p.slowdown.get(engine_index, 1.0)
    if factor > 1.0:
        time.sleep((factor - 1.0) * (time.perf_counter() - clock.last))
    clock.lap("process")
    if store is not None:
        moves.update(export_moved_keys(store, engine, leaving, batch))
        key_states.remove(leaving)
        clock.lap("export")
    gone = set(leaving)
    key_states.save(engine, [k for k in dict.fromkeys([*arriving, *imported])
                             if k not in gone], batch)
    clock.lap("snapshot")
    if passthrough:
        events = concat([*passthrough, events])
    if stage + 1 < len(p.stages):
        assert chain_parts is not None
        chained, events = split_rows(p.module, events)
        chain_parts.write(batch, stage + 1, engine_index, chained)
    frame = event_frame(events)
    event_parts.write(batch - stage, stage * p.n_engines + engine_index,
                      event_lines(frame, p.rule_order))
    latest = engine_latest(frame, p.rule_order)  # for a live view (latest.py)
    clock.lap("output")
    scores = rule_scores(frame, np.concatenate(truth) if truth else None)
    counts = {name: int(tasks.pop(name, 0)) for name in ("dead", "blank", "truth")}
    stages = {**clock.laps, **tasks}  # read, derive, route: in the input tasks
    stats = {"engine": engine_index, "batch": batch, "stage": stage,
             "rows": sum(nrows(t) for t in batch_streams.values()),
             "busy_s": round(clock.total, 6), "cpu_s": round(clock.cpu, 6), **moves,
             "restored": key_states.restored,
             **counts, "stages": stages, "outputs": scores,
             "latest": latest,
             "key_load": load if stage == 0 else {}}
    yield pd.DataFrame({"engine": np.array([engine_index], np.int32),
                        "stats": [json.dumps(stats)]})


def event_frame(events: Table) -> pd.DataFrame:
    """Output rows as the frame :func:`event_lines` formats (key as JSON text, so ints
    and strings survive)."""
    n = nrows(events) if events else 0
    if n == 0:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
            ("rule", object), ("key", object), ("seq", "int64"), ("ts", "int64"),
            ("ts_null", bool), ("payload", object))})
    return pd.DataFrame({
        "rule": events["rule"],
        "key": np.array([json.dumps(k) for k in events["key"].tolist()], dtype=object),
        "seq": events["seq"],
        "ts": events["ts"],
        "ts_null": events["ts__null"],
        "payload": events["values"],
    })


def rule_scores(frame: pd.DataFrame, truth: np.ndarray | None) -> dict[str, list[int]]:
    """Per rule: [events, events whose trigger a generator knows to be a first story]."""
    if frame.empty:
        return {}
    hits = (np.isin(frame["seq"].to_numpy(), truth) if truth is not None
            else np.zeros(len(frame), dtype=bool))
    grouped = pd.DataFrame({"rule": frame["rule"].to_numpy(dtype=object), "hit": hits}
                           ).groupby("rule", sort=False)["hit"].agg(["size", "sum"])
    return {str(rule): [int(n), int(h)] for rule, n, h in grouped.itertuples()}


# (query start, engine label) → (batch, key as JSON text → its state as values, key → its
# layout in the state store): the states this worker process wrote for that engine in
# that batch. Spark gives an engine's next batch to any of its Python workers; when it is
# this one, the keys it wrote need no read and no decoding. Valid for the very next batch
# only: any other batch of the engine may have run elsewhere since, so a gap drops it.
_WARM: dict[tuple[str, int], tuple[int, dict[str, dict], dict[str, Layout]]] = {}


class KeyStates:
    """An engine's state in Spark, per key: the keys a batch touches are read into an
    empty :class:`Engine` before it runs and written back after, the rest stay put. A key
    rests as a head and the row segments of the batches that appended to its windows
    (``key_layout``), so a batch writes what it changed, not the whole window."""

    def __init__(self, heads, segments, start: str, label: int) -> None:
        self.heads = MapCalls(heads)  # key (JSON text) → its head (codec "head" bytes)
        self.segments = MapCalls(segments)  # (key, batch) → rows (codec "segment" bytes)
        self.slot = (start, label)
        self.files = WarmFiles(start, label)  # what the last batch wrote, for any worker
        # where load found the keys ("new": batch 0, when no key can have state yet)
        self.restored = {"memory": 0, "file": 0, "store": 0, "new": 0}
        self.warm: dict[str, dict] = {}  # this engine's keys this worker wrote last batch
        self.layouts: dict[str, Layout] = {}  # how the state store holds each key
        self.began: dict[str, list[Table]] = {}  # the window tables a key began with
        self.stored: set[str] = set()  # keys of the running batch that had state

    def load(self, engine: Engine, keys: list[str], batch: int) -> None:
        """Put the state of ``keys`` (JSON texts) as of the previous batch into
        ``engine``: from this worker's memory when it ran that batch, else from the file
        that batch left on this host (``warm_state_files``), else from Spark's state store."""
        entry = _WARM.pop(self.slot, None)  # taken: a failure below must not leave it
        drop_stale(_WARM, self.slot[0], batch)
        ran_last = entry is not None and entry[0] == batch - 1
        self.warm, self.layouts = (entry[1], entry[2]) if entry and ran_last else ({}, {})
        states = {text: self.warm[text] for text in keys if text in self.warm}
        in_memory = len(states)
        # the file holds what the last batch wrote: all in memory if this worker ran it
        left = {} if ran_last or not keys else self._read_file(batch - 1)
        for text in keys:
            if text not in states and text in left:
                state, self.layouts[text] = left[text]
                states[text] = engine.check_state(state, text)
        cold = [text for text in keys if text not in states]
        # Nothing is in the store before batch 0: a stateful operator's batch N reads the
        # store's version N, which batch N - 1 committed, and version 0 is empty (also when
        # a restart replays a batch 0 that never committed). Skipping the look-ups saves
        # a bounded run's one batch about 0.12 ms per key.
        first = batch == 0
        if not first:
            states.update(self._read_store(engine, cold))
        self.restored = {"memory": in_memory, "file": len(keys) - len(cold) - in_memory,
                         "store": 0 if first else len(cold), "new": len(cold) if first else 0}
        self.stored = set(states)
        self.began = {text: split_state(state)[2] for text, state in states.items()}
        engine.put_states({json.loads(text): state for text, state in states.items()})

    def _read_file(self, batch: int) -> dict[str, tuple[dict, Layout]]:
        """The keys ``batch`` left in this host's file (none when there is no file, or
        one that does not decode as packed key states: the state store has them)."""
        blob = self.files.read(batch)
        if blob is None:
            return {}
        try:
            return unpack(codec.decode(blob, "warm", f"warm states of batch {batch}"))
        except codec.StateFormatError:
            return {}

    def _read_store(self, engine: Engine, keys: list[str]) -> dict[str, dict]:
        """The states of ``keys`` that have one in Spark's state store: each key's head,
        then the live segments of all of them in one pass."""
        heads = {}
        for text, blob in zip(keys, self.heads.get_values([(t,) for t in keys]), strict=True):
            if blob is not None:
                heads[text] = read_head(blob[0], text)
                self.layouts[text] = heads[text][1]
        wanted = [(text, b) for text, (_, layout, _) in heads.items() for b in layout.segments]
        blobs = iter(self.segments.get_values(wanted))
        states = {}
        for text, (rest, layout, rows) in heads.items():
            segments = [next(blobs) for _ in layout.segments]  # none: rows in the head
            if any(s is None for s in segments):
                raise codec.StateFormatError(f"state of key {text}: a segment is missing")
            state = rebuild(rest, layout, rows, [s[0] for s in segments], text)  # type: ignore[index]
            states[text] = engine.check_state(state, text)
        return states

    def save(self, engine: Engine, keys: list[str], batch: int) -> None:
        """Write back the state of ``keys`` after the batch (a key left without state,
        such as a ``#time`` window that emptied, is removed)."""
        values = [json.loads(text) for text in keys]
        states = engine.take_states(values)
        kept = [(text, states[value]) for text, value in zip(keys, values, strict=True)
                if value in states]
        plans = [plan(state, self.layouts.get(text), self.began.get(text), batch)
                 for text, state in kept]
        texts = [text for text, _ in kept]
        self.heads.update_values(((text,), (p.head,)) for text, p in zip(texts, plans,
                                                                         strict=True))
        self.segments.update_values(((text, batch), (p.segment,)) for text, p in zip(
            texts, plans, strict=True) if p.segment is not None)
        self.segments.remove_keys([(text, b) for text, p in zip(texts, plans, strict=True)
                                   for b in p.dropped])
        layouts = {text: p.layout for text, p in zip(texts, plans, strict=True)}
        self.files.write(batch, codec.encode(pack(texts, [state for _, state in kept],
                                                  list(layouts.values())), "warm"))
        self.warm.update(kept)
        self.layouts.update(layouts)
        self.remove([text for text, value in zip(keys, values, strict=True)
                     if value not in states])
        _WARM[self.slot] = (batch, self.warm, self.layouts)

    def remove(self, keys: list[str]) -> None:
        """Forget keys (handed over to another engine, or left without state)."""
        layouts = [self.layouts.pop(text, None) for text in keys]
        for text in keys:
            self.warm.pop(text, None)
        self.heads.remove_keys([(text,) for text in keys if text in self.stored])
        self.segments.remove_keys([(text, b) for text, layout in zip(keys, layouts, strict=True)
                                   if layout is not None for b in layout.segments])


def drop_stale(warm: dict[tuple[str, int], tuple], start: str, batch: int) -> None:
    """Forget the warm states no batch ``batch`` of query ``start`` can use: another
    query's (one that ended would otherwise keep every key it held in this worker's
    memory for the session's life, and slow the next query's tasks with it), and those
    of an engine whose later batch ran in another worker (stale for good)."""
    for slot in [s for s, entry in warm.items() if s[0] != start or entry[0] < batch - 1]:
        del warm[slot]


def import_moved_keys(store: StateStore, engine: Engine, e: int, batch: int) -> list[str]:
    """Adopt the keys that move to engine ``e`` in this batch (step 1 of
    docs/architecture.md#handoff-protocol)."""
    prev = key_map(store, batch - 1) if batch > 0 else None
    keys = imports(e, prev, key_map(store, batch))
    if keys:
        blobs = store.get_states(batch - 1, keys)  # a missing document fails the task
        engine.import_keys({json.loads(k): blob for k, blob in blobs.items()})
    return keys


def leaving_keys(store: StateStore, e: int, batch: int) -> list[str]:
    """The keys engine ``e`` hands over at the end of this batch (step 3)."""
    return exports(e, key_map(store, batch), key_map(store, batch + 1))


def export_moved_keys(store: StateStore, engine: Engine, keys: list[str], batch: int) -> dict:
    """Hand over the keys that leave this engine after this batch (step 3)."""
    if not keys:
        return {"exported_keys": 0, "exported_bytes": 0}
    values = [json.loads(k) for k in keys]
    blobs = engine.export_keys(values)
    store.put_states(batch, {text: blobs[value] for text, value in zip(keys, values,
                                                                       strict=True)})
    return {"exported_keys": len(keys), "exported_bytes": sum(len(b) for b in blobs.values())}


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

    @property
    def total(self) -> float:
        return time.perf_counter() - self.started

    @property
    def cpu(self) -> float:
        """CPU seconds of this worker process since the start: unlike the wall clock, not
        inflated by the other tasks, the JVM and the router sharing the machine's cores
        (nor by a ``--slow-engine`` sleep)."""
        return time.process_time() - self.cpu_started


def stream_key_load(streams: dict[str, Table]) -> dict[str, int]:
    """Rows per key over the engine's streams of a batch (the Balancer's load)."""
    keys = [t[KEY] for t in streams.values() if t and nrows(t)]
    return key_counts(np.concatenate(keys)) if keys else {}


def key_counts(keys: np.ndarray) -> dict[str, int]:
    """Rows per key (keys as JSON text), counted with one bincount."""
    codes = factorize(keys)
    counts = np.bincount(codes)
    first = np.zeros(len(counts), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return {json.dumps(keys[i]): int(c) for i, c in zip(first.tolist(), counts.tolist(),
                                                         strict=True)}
