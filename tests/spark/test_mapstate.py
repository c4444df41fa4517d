"""MapCalls against a real Spark state server: many requests per round trip give what
PySpark's own one-call-per-round-trip methods give, with values large enough to fill the
socket buffers (a chunking mistake would hang here, not pass)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

import pandas as pd
import pytest
from pyspark import cloudpickle
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from cep.spark.mapstate import MapCalls

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Spark's workers cannot import it

N_KEYS = 2_000
BIG = 300_000  # bytes of each of the first 50 values: far more than a socket buffer


def _value(i: int) -> bytes:
    return (b"%06d" % i) * (BIG // 6 if i < 50 else 10)


def _processor(pipelined: bool) -> StatefulProcessor:
    class Checks(StatefulProcessor):
        """Step 1 writes every key; step 2 reads them back (and some never written),
        then removes the odd ones; step 3 reads again."""

        def init(self, handle) -> None:
            self.calls = MapCalls(handle.getMapState("m", "key string", "value binary"))
            if not pipelined:
                self.calls.pipelined = False  # PySpark's own calls, for comparison

        def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
            step = int(max(frame["step"].max() for frame in rows))
            keys = [(f"k{i}",) for i in range(N_KEYS)]
            if step == 1:
                self.calls.update_values((k, (_value(i),)) for i, k in enumerate(keys))
                ok = True
            else:
                got = self.calls.get_values([*keys, ("never",), ("written",)])
                want = [(None if step == 3 and i % 2 else _value(i)) for i in range(N_KEYS)]
                ok = [g[0] if g else None for g in got] == [*want, None, None]
                if step == 2:
                    self.calls.remove_keys([k for i, k in enumerate(keys) if i % 2])
            yield pd.DataFrame({"step": [step], "ok": [bool(ok)],
                                "pipelined": [self.calls.pipelined]})

        def close(self) -> None:
            pass

    return Checks()


@pytest.mark.parametrize("pipelined", [True, False])
def test_many_calls_per_round_trip_match_one_by_one(spark, tmp_path, pipelined):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for step in (1, 2, 3):
        path = inputs / f"{step}.json"
        path.write_text(json.dumps({"g": 0, "step": step}) + "\n")
        os.utime(path, (1_000_000 + step, 1_000_000 + step))  # the file source's order
    name = f"mapstate_{int(pipelined)}"
    query = (spark.readStream.schema("g int, step int").option("maxFilesPerTrigger", 1)
             .json(str(inputs)).groupBy("g")
             .transformWithStateInPandas(_processor(pipelined),
                                         "step int, ok boolean, pipelined boolean",
                                         "Append", "None")
             .writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect())
    assert rows == [(1, True, pipelined), (2, True, pipelined), (3, True, pipelined)]
