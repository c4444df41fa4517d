"""The Splitter's data path inside Spark: stateless rules, keys, engine of every row.

Part of the Splitter (see ``splitter/__init__.py``): the part that routes.
Runs on executors inside the input source's tasks (``cep/spark/inputs/source.py``), right after
a task has read its pieces, in parallel and with no shuffle. For every engine it emits
exactly one row (its slice of every stream, ``payload.py``, for the engine task of the
same job), so every engine runs in every micro-batch even when it got no events (it may
have state to import or export). Output rows of stateless rules, and the task's counts and timings,
ride along with engine 0's row.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from cep.engine.derive import add_keys, derive_streams
from cep.engine.table import KEY, SEQ, Table, concat
from grammar import ir
from migration.hashing import kg_engine, stable_hash
from splitter.keymaps import key_map
from splitter.late_candidates import Candidates, candidates
from splitter.payload import (
    Coded,
    Factorized,
    code_table,
    factorize_without_nulls,
    pack_payload,
    take_coded,
)
from splitter.policies.pkg import PartialKeyGrouping

if TYPE_CHECKING:  # pymongo is imported only where keys move (a MongoDB store)
    from migration.store import StateStore

# key values of a batch → engine index of each (vectorised)
KeyRouter = Callable[[np.ndarray, int], np.ndarray]


def route_part(module: ir.CompiledModule, inputs: dict[str, Table], labels: list[int],
               engine_of: KeyRouter, batch: int, info: dict[str, float],
               truth: np.ndarray | None = None, time_info: tuple | None = None,
               late: tuple[bool, list[str]] | None = None,
               maps: dict[int, bytes] | None = None) -> list[tuple[int, bytes]]:
    """(label, payload) for every engine, from one task's input tables. Engine 0's
    payload also carries the stateless output and ``info``, the task's counts and the
    seconds its stages took, to which this adds ``derive`` (the stateless rules, FSD's
    LSH key) and ``route``. ``truth``: sequence numbers of the rows a generator knows
    to be first stories (each engine scores its own events against them). ``time_info``:
    how the task's pieces move the watermark, which every engine gets (``engine_batch``
    reads it). ``late``: for stage 0's input, whether late events are dropped and the
    task's segments (JSON), for the engines to find the late events (``late_rows``).
    ``maps``: the key maps every engine reads in this batch (``map_grouping``)."""
    started = time.perf_counter()
    streams, stateless = derive_streams(module, inputs)
    derived = time.perf_counter()
    keyed = {n: add_keys(streams[n], module.key) for n in module.stateful_streams()}
    owners, coded = {}, {}
    for name, table in keyed.items():
        owners[name], factorized = owners_of(engine_of, table[KEY], batch)
        coded[name] = code_table(table, factorized)
    passthrough = concat(stateless) if stateless else None
    mine = split_by_engine(coded, owners, len(labels))
    checks: list[Candidates | None] = [None] * len(labels)
    if late is not None:
        drop, segments = late
        rows_of = (engine_seqs(keyed, owners, passthrough, len(labels)) if drop
                   else [np.empty(0, np.int64)] * len(labels))
        checks = candidates(module, inputs, rows_of, segments)
    info = {**info, "derive": derived - started, "route": time.perf_counter() - derived}
    return [(label, pack_payload(batch, mine[e], passthrough if e == 0 else None,
                                 info if e == 0 else {}, truth, time_info, checks[e],
                                 maps))
            for e, label in enumerate(labels)]


def split_by_engine(coded: dict[str, Coded], owners: dict[str, np.ndarray], n: int
                    ) -> list[dict[str, Coded]]:
    """Every engine's rows of each coded stream, in their order: one stable sort of the
    rows by engine and one gather per column, each engine's rows a slice of it (a view).
    Why: a boolean mask per engine read every column once per engine (5 engines: 0.43
    of the flights' 9 CPU seconds of Python work on the Spark path)."""
    mine: list[dict[str, Coded]] = [{} for _ in range(n)]
    for name, table in coded.items():
        engine = owners[name].astype(np.int16 if n <= 1 << 15 else np.int32, copy=False)
        order = np.argsort(engine, kind="stable")  # a radix sort for int16
        cuts = np.searchsorted(engine[order], np.arange(n + 1), side="left")
        gathered = take_coded(table, order)
        for e in range(n):
            mine[e][name] = take_coded(gathered, slice(int(cuts[e]), int(cuts[e + 1])))
    return mine


def engine_seqs(keyed: dict[str, Table], owners: dict[str, np.ndarray],
                passthrough: Table | None, n: int) -> list[np.ndarray]:
    """The seqs of the rows each engine receives (engine 0: the stateless output too),
    whose late events it leaves out under ``--late drop``."""
    out = []
    for e in range(n):
        parts = [t[SEQ][owners[name] == e] for name, t in keyed.items()]
        if e == 0 and passthrough:
            parts.append(passthrough["seq"])
        out.append(np.concatenate(parts) if parts else np.empty(0, np.int64))
    return out


def owners_of(engine_of: KeyRouter, keys: np.ndarray, batch: int
              ) -> tuple[np.ndarray, Factorized | None]:
    """The engine of every row, and the keys' codes where that took factorizing them.

    A router that sends every row of a key to one engine is asked about each distinct
    key once: string keys are factorized anyway to hash them, and the payload reuses
    those codes (``code_table``) instead of factorizing the same column again. A
    router that places rows one by one (PKG) gets every row."""
    found = None
    if not getattr(engine_of, "per_row", False) and keys.dtype == object:
        found = factorize_without_nulls(keys)
    if found is None:  # PKG, numeric keys, or NULL or unhashable ones: row by row
        return engine_of(keys, batch), None
    codes, distinct = found
    owners = np.asarray(engine_of(np.asarray(distinct, dtype=object), batch))[codes]
    return owners, {id(keys): (codes, distinct)}


def key_grouping(n_engines: int, hash: str = "mod") -> KeyRouter:
    """Plain key grouping: a stable hash of the key, modulo the number of engines (or
    its jump consistent hash: ``migration.hashing``)."""

    def engine_of(keys: np.ndarray, batch: int) -> np.ndarray:
        return kg_engine(keys, n_engines, hash)

    return engine_of


def map_grouping(store: StateStore) -> KeyRouter:
    """Route batch t by key map ``M[t]`` (key grouping plus the Balancer's overrides).
    Its ``engines_at(batch)`` is the engine count of ``M[t]``: the engines that run
    batch t (``input_tasks.read_input``), so a job whose count changes (a scale change)
    runs the engines of each batch's map, new ones from their first batch on, retired
    ones no more once they handed their keys over."""

    def engine_of(keys: np.ndarray, batch: int) -> np.ndarray:
        return key_map(store, batch).owners(keys)

    def engines_at(batch: int) -> int:
        return key_map(store, batch).n_engines

    def maps_for(batch: int) -> dict[int, bytes]:
        """Maps ``M[t-1]``, ``M[t]``, ``M[t+1]``, which batch t's engines read (imports,
        exports), for the payloads: the input task reads them anyway (its cache keeps
        them from batch to batch), and each engine, a process of its own, would
        otherwise ask MongoDB for ``M[t+1]`` every batch, a round trip to a server that
        shares the machine's cores (bench/bench_balance_cost.py)."""
        return {v: key_map(store, v).encode() for v in (batch - 1, batch, batch + 1)
                if v >= 0}

    engine_of.engines_at = engines_at  # type: ignore[attr-defined]
    engine_of.maps_for = maps_for  # type: ignore[attr-defined]
    return engine_of


def partial_key_grouping(n_engines: int, seed: int = 0) -> KeyRouter:
    """PKG: each event to the less loaded of its key's two hash choices, by this router's
    own load estimates. It splits keys across engines, so stateful rules see partial
    state and their events differ from key grouping's (the point of comparing it)."""
    pkg = PartialKeyGrouping(n_engines, seed)  # estimates persist in this worker process

    def engine_of(keys: np.ndarray, batch: int) -> np.ndarray:
        return pkg.route(stable_hash(keys))

    engine_of.per_row = True  # type: ignore[attr-defined]  # see owners_of
    return engine_of
