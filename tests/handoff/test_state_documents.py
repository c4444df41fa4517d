"""Key-state documents in the real embedded MongoDB: data-only, and a planted pickle in
the ``states`` collection is refused when an engine imports it, without running."""

from __future__ import annotations

import numpy as np
import pytest
from support.planted import planted_pickle

from cep.engine.codec import MAGIC, StateFormatError
from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.table import SEQ, take
from cep.handoff.store import StateStore
from cep.lang.compile import compile_text
from cep.reference import batch_watermarks, input_watermark, run_batch, run_reference

RULES = (
    "CREATE SCHEMA S (k long, ts timestamp, v double, name string) TIMESTAMP ts;\n"
    "SELECT sum(v) AS s, last(name) AS n FROM S#groupwin(k)#time(4 sec);\n"
    "SELECT a.v AS av, b.name AS bn FROM PATTERN [every a=S(v > 5) -> b=S(v < a.v)] "
    "PARTITION BY k;"
)


def _inputs(n: int = 200) -> dict:
    rng = np.random.default_rng(5)
    names = np.empty(n, dtype=object)
    names[:] = [f"é{i}" if i % 7 else None for i in range(n)]
    return {"S": {SEQ: np.arange(n, dtype=np.int64), "__sub": np.zeros(n, dtype=np.int64),
                  "k": rng.integers(0, 5, n).astype(np.int64),
                  "ts": np.cumsum(rng.integers(0, 900, n)).astype(np.int64) * 1000,
                  "v": rng.integers(0, 10, n).astype(np.float64), "name": names,
                  "name__null": np.array([i % 7 == 0 for i in range(n)])}}


def test_moved_keys_travel_through_mongodb_as_data_and_change_no_output(
        store: StateStore) -> None:
    """Engine A runs the first half, hands every key over through the store, engine B
    runs the second half: together they write what one engine writes."""
    module = compile_text(RULES, "handoff")
    inputs = _inputs()
    expected = output_records(run_reference(module, inputs))
    halves = [{"S": take(inputs["S"], inputs["S"][SEQ] < 100)},
              {"S": take(inputs["S"], inputs["S"][SEQ] >= 100)}]
    first, second = Engine(module), Engine(module)
    clocks = batch_watermarks(input_watermark(module, inputs), [(0, 100), (100, 1 << 40)])
    out = [run_batch(module, first, halves[0], clocks[0])]
    keys = sorted(first.keys())
    store.put_states(0, first.export_keys(keys))
    blobs = store.get_states(0, keys)
    assert all(blob.startswith(MAGIC) for blob in blobs.values())
    second.import_keys(blobs)
    out.append(run_batch(module, second, halves[1], clocks[1]))
    got = output_records(out[0]) + output_records(out[1])
    assert got == expected and len(got) > 50


def test_planted_pickle_document_is_refused_and_nothing_runs(store: StateStore,
                                                             tmp_path) -> None:
    """Someone with write access to the MongoDB stores a pickle as key 3's state: the
    importing engine refuses it with a clear error and the pickle never runs."""
    target = tmp_path / "pwned"
    store.put_states(4, {3: planted_pickle(target)})
    blobs = store.get_states(4, [3])
    engine = Engine(compile_text(RULES, "victim"))
    with pytest.raises(StateFormatError, match=r"state document for key 3 is not in cep's "
                       r"state format \(it starts like a Python pickle"):
        engine.import_keys(blobs)
    assert not target.exists()
    assert engine.keys() == set()
