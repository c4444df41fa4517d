"""The Splitter's data path inside Spark: stateless rules, keys, engine of every row.

Runs in ``mapInPandas`` on each staged part, in parallel and with no shuffle. For every
engine it emits exactly one row (its slice of every stream, pickled), so every engine runs
in every micro-batch even when it got no events (it may have state to import or export).
Output rows of stateless rules ride along with engine 0's row.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from cep.engine.derive import add_keys, derive_streams
from cep.engine.table import KEY, Table, concat, take
from cep.lang import ir
from cep.spark.keymaps import key_map
from migration.store import StateStore
from splitter.hashing import kg_engine, stable_hash
from splitter.pkg import PartialKeyGrouping

ROUTED_SCHEMA = "engine int, payload binary"

# key values of a batch → engine index of each (vectorised)
KeyRouter = Callable[[np.ndarray, int], np.ndarray]


def route_part(module: ir.CompiledModule, inputs: dict[str, Table], labels: list[int],
               engine_of: KeyRouter, batch: int) -> list[tuple[int, bytes]]:
    """(label, payload) for every engine, from one staged part. Engine 0's payload also
    carries the part's stateless output and the seconds its stages took (for the
    metrics): ``derive`` for the stateless rules (FSD's LSH key), ``route`` for the rest."""
    started = time.perf_counter()
    streams, stateless = derive_streams(module, inputs)
    derived = time.perf_counter()
    keyed = {n: add_keys(streams[n], module.key) for n in module.stateful_streams()}
    owners = {n: engine_of(t[KEY], batch) for n, t in keyed.items()}
    passthrough = concat(stateless) if stateless else None
    mine = [{n: take(t, owners[n] == e) for n, t in keyed.items()} for e in range(len(labels))]
    seconds = {"derive": derived - started, "route": time.perf_counter() - derived}
    return [(label, pickle.dumps((batch, mine[e], passthrough if e == 0 else None,
                                  seconds if e == 0 else {}), protocol=5))
            for e, label in enumerate(labels)]


def router(module: ir.CompiledModule, labels: list[int], engine_of: KeyRouter
           ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The ``mapInPandas`` function over staged parts."""

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for frame in frames:
            for batch, payload in zip(frame["batch"].tolist(), frame["payload"].tolist(),
                                      strict=True):
                inputs = pickle.loads(payload)
                rows = route_part(module, inputs, labels, engine_of, int(batch))
                yield pd.DataFrame(rows, columns=["engine", "payload"])

    return run


def key_grouping(n_engines: int) -> KeyRouter:
    """Plain key grouping: a stable hash of the key, modulo the number of engines."""

    def engine_of(keys: np.ndarray, batch: int) -> np.ndarray:
        return kg_engine(keys, n_engines)

    return engine_of


def map_grouping(store: StateStore) -> KeyRouter:
    """Route batch t by key map ``M[t]`` (key grouping plus the Balancer's overrides)."""

    def engine_of(keys: np.ndarray, batch: int) -> np.ndarray:
        return key_map(store, batch).owners(keys)

    return engine_of


def partial_key_grouping(n_engines: int, seed: int = 0) -> KeyRouter:
    """PKG: each event to the less loaded of its key's two hash choices, by this router's
    own load estimates. It splits keys across engines, so stateful rules see partial
    state and their events differ from key grouping's (the point of comparing it)."""
    pkg = PartialKeyGrouping(n_engines, seed)  # estimates persist in this worker process

    def engine_of(keys: np.ndarray, batch: int) -> np.ndarray:
        return pkg.route(stable_hash(keys))

    return engine_of
