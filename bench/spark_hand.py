"""bench_spark.py's inputs and its queries (b) and (c): the rule hand-written in PySpark
and Spark's floors, over typed Parquet files, one per micro-batch.

What these queries are and why is in bench_spark.py's docstring; here are the Spark
functions they run, the ``foreachBatch`` sinks that count their rows and time their
batches, the inputs of every query (cep's JSON lines, the others' Parquet files), and
the check that (b)'s rows are the reference evaluator's.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import write_jsonl

from cep.engine.table import Table
from cep.reference import batch_bounds
from splitter.engine_labels import engine_labels

WINDOW = 10
THRESHOLD = 0.9
MASTER = "local[2]"
ENGINES = 5
TYPED_SCHEMA = "k long, ts timestamp, v double"
HAND_OUTPUT = "k long, ts timestamp, n long, mean double, top double"
# the natural state is ``buf array<double>``, but PySpark 4.3's worker lower-cases the
# state schema JSON it is sent (EvalConf.state_value_schema → Conf.get(lower_str=True)),
# so "elementType" becomes "elementtype" and every task fails with KeyError: the buffer
# is kept as the float64 bytes instead
HAND_STATE = "buf binary"


def write_input(table: Table, path: Path) -> float:
    """cep's input: the events as one JSON-lines file; the seconds it took."""
    started = time.perf_counter()
    write_jsonl(pd.DataFrame({"k": table["k"], "ts": pd.to_datetime(table["ts"], unit="us",
                                                                      utc=True),
                              "v": table["v"]}), path)
    return time.perf_counter() - started


def stage_typed(table: Table, batch_size: int, directory: Path) -> int:
    """One typed Parquet file per micro-batch, modification times increasing."""
    directory.mkdir(parents=True, exist_ok=True)
    bounds = batch_bounds({"S": table}, batch_size)
    base = time.time() - len(bounds) - 10
    for b, (lo, hi) in enumerate(bounds):
        frame = pd.DataFrame({
            "k": table["k"][lo:hi],
            "ts": pd.to_datetime(table["ts"][lo:hi], unit="us", utc=True),
            "v": table["v"][lo:hi],
        })
        path = directory / f"batch-{b:07d}.parquet"
        tmp = path.with_name("." + path.name)
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
        os.utime(path, (base + b, base + b))
    return len(bounds)


def window_rule(key, frames, state):
    """(b): per key, the last 10 ``v`` live in state; emit each event whose window's
    average exceeds 0.9, with the window's count, average and maximum."""
    from numpy.lib.stride_tricks import sliding_window_view

    frame = pd.concat(list(frames), ignore_index=True)
    if not frame["ts"].is_monotonic_increasing:  # runs from several map partitions
        frame = frame.sort_values("ts", kind="stable", ignore_index=True)
    v = frame["v"].to_numpy(dtype=np.float64)
    prev = np.frombuffer(state.get[0], dtype=np.float64) if state.exists else np.empty(0)
    history = np.concatenate([prev, v])
    state.update((history[-WINDOW:].tobytes(),))
    padded = np.concatenate([np.full(WINDOW - 1, np.nan), history])
    windows = sliding_window_view(padded, WINDOW)[len(prev):]
    n = WINDOW - np.isnan(windows).sum(axis=1)
    mean = np.nansum(windows, axis=1) / n
    hit = mean > THRESHOLD
    if hit.any():
        top = np.nanmax(windows[hit], axis=1)
        yield pd.DataFrame({"k": np.full(int(hit.sum()), key[0], dtype=np.int64),
                            "ts": frame["ts"].to_numpy()[hit], "n": n[hit].astype(np.int64),
                            "mean": mean[hit], "top": top})


def stateful_noop(key, frames, state):
    """(c): read every row, keep a row count in state, emit nothing."""
    rows = sum(len(frame) for frame in frames)
    seen = state.get[0] if state.exists else 0
    state.update((seen + rows,))
    yield from ()


def tws_noop(blob_bytes: int):
    """(c) with cep's operator: ``transformWithStateInPandas``, one ValueState per group
    (read, then rewritten with ``blob_bytes`` random bytes), rows read, nothing emitted."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Noop(StatefulProcessor):
        def init(self, handle) -> None:
            self.state = handle.getValueState("blob", "blob binary")
            self.blob = np.random.default_rng(1).bytes(blob_bytes)

        def handleInputRows(self, key, rows, timerValues):
            for _ in rows:
                pass
            if self.state.exists():
                self.state.get()
            self.state.update((self.blob,))
            yield from ()

        def close(self) -> None:
            pass

    return Noop()


class BatchCollector:
    """``foreachBatch`` for b/c: collect once, count, remember when each batch ended."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.frames: list[pd.DataFrame] = []
        self.rows_out = 0
        self.batches: list[dict] = []

    def __call__(self, batch_df, batch_id: int) -> None:
        started = time.perf_counter()
        frame = batch_df.toPandas()
        self.rows_out += len(frame)
        if self.keep:
            self.frames.append(frame)
        self.batches.append({"batch": batch_id, "rows_out": len(frame),
                             "sink_s": time.perf_counter() - started,
                             "wall_time": time.time()})


class CountSink(BatchCollector):
    """``foreachBatch`` for floor-jvm: count on the JVM, nothing comes to Python."""

    def __call__(self, batch_df, batch_id: int) -> None:
        started = time.perf_counter()
        rows = batch_df.count()
        self.rows_out += rows
        self.batches.append({"batch": batch_id, "rows_out": rows,
                             "sink_s": time.perf_counter() - started,
                             "wall_time": time.time()})


def run_plain(spark, kind: str, stage: Path, workdir: Path, blob_bytes: int = 0
              ) -> tuple[dict, BatchCollector]:
    """(b) or one of the floors over the typed Parquet batches."""
    from pyspark import cloudpickle
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    # bench/ is not on the Python workers' path: the functions of this module go to them
    # by value, as they did while they lived in the script (__main__)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    started = time.perf_counter()
    wall_start = time.time()
    source = (spark.readStream.schema(TYPED_SCHEMA).option("maxFilesPerTrigger", 1)
              .parquet(str(stage)))
    sink: BatchCollector
    labels = F.array(*[F.lit(label) for label in engine_labels(ENGINES)])
    engine = F.element_at(labels, F.pmod(F.hash("k"), F.lit(ENGINES)) + 1)
    if kind == "hand":
        result = source.groupBy("k").applyInPandasWithState(
            window_rule, HAND_OUTPUT, HAND_STATE, "Append", GroupStateTimeout.NoTimeout)
        sink = BatchCollector(keep=True)
    elif kind == "floor":
        result = source.withColumn("engine", engine).groupBy("engine").applyInPandasWithState(
            stateful_noop, "k long", "rows long", "Append", GroupStateTimeout.NoTimeout)
        sink = BatchCollector(keep=False)
    elif kind in ("floor-tws", "floor-tws-blob"):
        size = blob_bytes if kind == "floor-tws-blob" else 8
        result = source.withColumn("engine", engine).groupBy("engine") \
            .transformWithStateInPandas(tws_noop(size), "k long", "Append", "None")
        sink = BatchCollector(keep=False)
    elif kind == "floor-key":
        result = source.groupBy("k").applyInPandasWithState(
            stateful_noop, "k long", "rows long", "Append", GroupStateTimeout.NoTimeout)
        sink = BatchCollector(keep=False)
    elif kind == "floor-jvm":
        result = source.repartition(ENGINES, "k")
        sink = CountSink(keep=False)
    else:
        raise ValueError(kind)
    query = (result.writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(workdir / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - started
    return timing(seconds, wall_start, sink.batches, sink.rows_out), sink


def timing(seconds: float, wall_start: float, batches: list[dict], rows_out: int) -> dict:
    ends = [b["wall_time"] for b in batches]
    first = ends[0] - wall_start if ends else 0.0
    return {"seconds": seconds, "first_batch_s": first,
            "steady_span_s": ends[-1] - ends[0] if len(ends) > 1 else 0.0,
            "batch_ends_s": [round(t - wall_start, 3) for t in ends],
            "sink_s": [round(b["sink_s"], 4) for b in batches],
            "batches": len(batches), "rows_out": rows_out}


def reference_rows(ref: Table) -> pd.DataFrame:
    values = [json.loads(v) for v in ref["values"].tolist()]
    return pd.DataFrame({"k": [v["k"] for v in values], "ts": ref["ts"].astype(np.int64),
                         "n": [v["n"] for v in values], "mean": [v["mean"] for v in values],
                         "top": [v["top"] for v in values]})


def hand_matches(frames: list[pd.DataFrame], expected: pd.DataFrame) -> bool:
    """(b)'s rows equal the reference's: same (k, ts, n), mean and top within 1e-9."""
    got = pd.concat(frames, ignore_index=True) if frames else expected.iloc[:0]
    if len(got) != len(expected):
        return False
    got = got.assign(ts=pd.to_datetime(got["ts"], utc=True).astype("datetime64[us, UTC]")
                     .astype("int64"))
    a = got.sort_values(["ts", "k"], ignore_index=True)
    b = expected.sort_values(["ts", "k"], ignore_index=True)
    same_keys = (a[["k", "ts", "n"]].to_numpy(np.int64) == b[["k", "ts", "n"]]
                 .to_numpy(np.int64)).all()
    close = np.allclose(a[["mean", "top"]].to_numpy(float), b[["mean", "top"]]
                        .to_numpy(float), rtol=0, atol=1e-9)
    return bool(same_keys and close)
