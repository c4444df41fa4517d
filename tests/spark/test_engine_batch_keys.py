"""An engine task's key texts and key values, written per distinct key, are what
``json.dumps`` and ``json.loads`` give per row (the oracle: the per-row calls the
engine task made before)."""

from __future__ import annotations

import json

import numpy as np

from cep.engine.table import KEY, object_array
from cep.spark.engines.batch import event_frame, key_values, stream_key_load

KEY_SETS = [
    ["N14228", "é", "日本", "", "\ud800", "N14228", "x" * 5000],  # strings
    [5, -1, 2**70, 5, 0],  # ints, one past int64
    [5, "5", True, None, 1.5, (1, "a"), 5],  # mixed: per value
]


def _events(keys: list) -> dict[str, np.ndarray]:
    n = len(keys)
    return {"rule": object_array(["r"] * n), "key": object_array(keys),
            "seq": np.arange(n, dtype=np.int64), "ts": np.zeros(n, np.int64),
            "ts__null": np.zeros(n, bool), "values": object_array(["{}"] * n),
            "at": np.zeros(n, np.int64), "origin": np.zeros(n, np.int64)}


def test_event_keys_are_written_as_json_dumps_writes_each():
    for keys in KEY_SETS:
        frame = event_frame(_events(keys))
        assert frame["key"].tolist() == [json.dumps(k) for k in keys]


def test_touched_keys_come_back_as_json_loads_gives_them():
    for keys in KEY_SETS:
        column = object_array(keys)
        load, plain = stream_key_load({"S": {KEY: column, "__seq": np.arange(len(keys))}})
        texts = [*load, json.dumps("only-due"), json.dumps([1, "a"])]
        got = key_values(texts, plain)
        want = [json.loads(t) for t in texts]
        assert [(type(v), v) for v in got] == [(type(v), v) for v in want]
