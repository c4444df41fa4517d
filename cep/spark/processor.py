"""One CEP engine as a ``transformWithStateInPandas`` stateful processor.

Grouped by engine label, so each call of ``handleInputRows`` is one engine's whole
micro-batch. The engine's state lives in one ValueState blob (``Engine.snapshot``):
measured on this machine, per-key MapState costs ~1–2 ms per key per batch while one
blob costs tens of milliseconds for thousands of keys, and when most keys are touched
every batch the per-key granularity buys nothing.

Output rows carry ``kind``: ``event`` rows are complex events (key as JSON text, so ints
and strings survive), the ``stats`` row reports the engine's rows, busy time and per-key
load for the Balancer and the metrics.
"""

from __future__ import annotations

import json
import pickle
import time
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from cep.engine.engine import Engine
from cep.engine.table import KEY, Table, concat, factorize, nrows
from cep.lang import ir
from cep.spark.keymaps import key_map
from migration.protocol import exports, imports
from migration.store import StateStore

OUTPUT_SCHEMA = ("kind string, engine int, rule string, key string, seq long, ts long, "
                 "ts_null boolean, payload string")


class EngineProcessor(StatefulProcessor):
    """Runs :class:`Engine` for one engine label per micro-batch."""

    def __init__(self, module: ir.CompiledModule, labels: list[int],
                 store: StateStore | None = None,
                 slowdown: dict[int, float] | None = None) -> None:
        self.module = module
        self.engine_of_label = {label: e for e, label in enumerate(labels)}
        self.store = store  # None: keys never move (key grouping, PKG)
        # engine index -> factor: that engine's processing takes factor times as long, to
        # show capacity-aware balancing on a machine whose engines are all equally fast
        self.slowdown = slowdown or {}

    def init(self, handle) -> None:
        self.state = handle.getValueState("engine", "blob binary")

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        clock = StageClock()
        engine_index = self.engine_of_label[int(key[0])]
        streams: dict[str, list[Table]] = {n: [] for n in self.module.stateful_streams()}
        passthrough: list[Table] = []
        batch, router_s = -1, Counter()
        for frame in rows:
            for payload in frame["payload"].tolist():
                batch, mine, extra, part_seconds = pickle.loads(payload)
                router_s.update(part_seconds)
                for name, table in mine.items():
                    streams[name].append(table)
                if extra:
                    passthrough.append(extra)
        batch_streams = {n: concat(parts) for n, parts in streams.items()}
        clock.lap("unpack")
        engine = Engine(self.module)
        if self.state.exists():
            engine.restore(self.state.get()[0])
        clock.lap("restore")
        moves = {"imported_keys": 0, "exported_keys": 0, "exported_bytes": 0}
        if self.store is not None:
            moves["imported_keys"] = import_moved_keys(self.store, engine, engine_index, batch)
            clock.lap("import")
        events = engine.process(batch_streams)
        factor = self.slowdown.get(engine_index, 1.0)
        if factor > 1.0:
            time.sleep((factor - 1.0) * (time.perf_counter() - clock.last))
        clock.lap("process")
        if self.store is not None:
            moves.update(export_moved_keys(self.store, engine, engine_index, batch))
            clock.lap("export")
        self.state.update((engine.snapshot(),))
        clock.lap("snapshot")
        out = [event_frame(concat([*passthrough, events]) if passthrough else events,
                           engine_index)]
        clock.lap("output")
        stages = {**clock.laps, **router_s}  # derive, route: before, in the router tasks
        out.append(stats_frame(engine_index, batch_streams, clock, moves, stages))
        yield arrow_safe(pd.concat(out, ignore_index=True))

    def close(self) -> None:
        pass


def arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """pandas 3 turns concatenated text columns into chunked Arrow strings, which
    Spark's Arrow writer refuses; plain object columns convert cleanly."""
    for column in ("kind", "rule", "key", "payload"):
        frame[column] = frame[column].astype(object)
    return frame


def event_frame(events: Table, engine_index: int) -> pd.DataFrame:
    n = nrows(events) if events else 0
    if n == 0:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
            ("kind", object), ("engine", "int32"), ("rule", object), ("key", object),
            ("seq", "int64"), ("ts", "int64"), ("ts_null", bool), ("payload", object))})
    return pd.DataFrame({
        "kind": np.full(n, "event", dtype=object),
        "engine": np.full(n, engine_index, dtype=np.int32),
        "rule": events["rule"],
        "key": np.array([json.dumps(k) for k in events["key"].tolist()], dtype=object),
        "seq": events["seq"],
        "ts": events["ts"],
        "ts_null": events["ts__null"],
        "payload": events["values"],
    })


def import_moved_keys(store: StateStore, engine: Engine, e: int, batch: int) -> int:
    """Adopt the keys that move to engine ``e`` in this batch (DESIGN §2, step 1)."""
    prev = key_map(store, batch - 1) if batch > 0 else None
    keys = imports(e, prev, key_map(store, batch))
    if keys:
        blobs = store.get_states(batch - 1, keys)  # a missing document fails the task
        engine.import_keys({json.loads(k): blob for k, blob in blobs.items()})
    return len(keys)


def export_moved_keys(store: StateStore, engine: Engine, e: int, batch: int) -> dict:
    """Hand over the keys that leave engine ``e`` after this batch (step 3)."""
    keys = exports(e, key_map(store, batch), key_map(store, batch + 1))
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


def stats_frame(engine_index: int, streams: dict[str, Table], clock: StageClock,
                moves: dict, stages: dict[str, float]) -> pd.DataFrame:
    keys = [t[KEY] for t in streams.values() if t and nrows(t)]
    rows = sum(len(k) for k in keys)
    stats = {"rows": rows, "busy_s": round(clock.total, 6), "cpu_s": round(clock.cpu, 6),
             **moves, "stages": stages,
             "key_load": key_counts(np.concatenate(keys)) if keys else {}}
    return pd.DataFrame({"kind": ["stats"], "engine": np.array([engine_index], np.int32),
                         "rule": [None], "key": [None], "seq": np.array([-1], np.int64),
                         "ts": np.array([0], np.int64), "ts_null": [True],
                         "payload": [json.dumps(stats)]})


def key_counts(keys: np.ndarray) -> dict[str, int]:
    """Rows per key (keys as JSON text), counted with one bincount."""
    codes = factorize(keys)
    counts = np.bincount(codes)
    first = np.zeros(len(counts), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return {json.dumps(keys[i]): int(c) for i, c in zip(first.tolist(), counts.tolist(),
                                                         strict=True)}
