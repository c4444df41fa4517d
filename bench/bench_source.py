"""Why cep reads its inputs with a Python Data Source and not Spark's own file source.

Both read the same JSON-lines file into Python on the executors, which is where cep's
engines need the rows (as Arrow/numpy columns):

* ``spark-json``: Spark's built-in JSON source (the JVM parses, Jackson), the schema
  given, then ``mapInArrow`` hands the rows to Python, which only counts them;
* ``cep-source``: cep's Data Source over the input log (``cep.spark.inputs.source``): the
  executor's Python reads byte ranges and parses them with pyarrow's JSON reader and
  cep's validating converters (``read_range``), routes the rows to engines and hands
  Spark one payload per engine, which a ``groupBy`` then counts.

Both run as one streaming query with ``availableNow`` over the whole file (so the
built-in source takes the file whole, as it must: it cannot split a file across
micro-batches or see appended lines, the two things cep's source exists for), on the
same session, alternately, best of ``--rounds``. Prints events/s and writes
``bench/results/source.json``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from common import RULES, readings, write_jsonl, write_results

from cep.spark.inputs.config import SourceConfig
from cep.spark.inputs.source import SOURCE_NAME, input_source
from cep.spark.jvm.session import spark_session
from grammar.compile import compile_file
from splitter.engine_labels import engine_labels
from splitter.routing import key_grouping

RULE = RULES / "sensor_average.epl"
SCHEMA = "sensor string, ts string, temp double, ok boolean"


def spark_json(spark, path: Path, workdir: Path) -> int:
    counted = []

    def count(frames):
        import pyarrow as pa

        for batch in frames:
            yield pa.RecordBatch.from_pydict({"n": [batch.num_rows]})

    frame = spark.readStream.schema(SCHEMA).json(str(path.parent)).mapInArrow(count, "n long")
    query = (frame.writeStream.foreachBatch(
        lambda df, _: counted.append(df.groupBy().sum("n").collect()[0][0] or 0))
        .option("checkpointLocation", str(workdir / "json-ck")).trigger(availableNow=True)
        .start())
    query.awaitTermination()
    return sum(counted)


def cep_source(spark, path: Path, workdir: Path, batch_size: int) -> int:
    module = compile_file(RULE)
    labels = engine_labels(5)
    config = SourceConfig({"Reading": str(path)}, str(workdir / "cep"), False, batch_size,
                          spark.sparkContext.defaultParallelism, 1 << 20)
    spark.dataSource.register(input_source(config, module, labels, key_grouping(5)))
    counted = []

    def count(frames):
        import pickle

        import pandas as pd

        for frame in frames:
            rows = 0
            for payload in frame["payload"].tolist():
                _, mine, _, _, _ = pickle.loads(payload)
                rows += sum(len(t["__seq"]) for t in mine.values())
            yield pd.DataFrame({"n": [rows]})

    frame = spark.readStream.format(SOURCE_NAME).load().mapInPandas(count, "n long")
    query = (frame.writeStream.foreachBatch(
        lambda df, _: counted.append(df.groupBy().sum("n").collect()[0][0] or 0))
        .option("checkpointLocation", str(workdir / "cep-ck")).trigger(availableNow=True)
        .start())
    query.awaitTermination()
    return sum(counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    data = Path(tempfile.gettempdir()) / f"cep-bench-source-{args.n}" / "readings.jsonl"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        sensors = np.random.default_rng(3).integers(0, 4096, args.n)
        write_jsonl(readings(sensors, seed=3, step_ms=10), data)
    spark = spark_session(args.master, 5)
    times: dict[str, list[float]] = {"spark-json": [], "cep-source": []}
    for _ in range(args.rounds):
        for name in times:
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                n = (spark_json(spark, data, Path(tmp)) if name == "spark-json"
                     else cep_source(spark, data, Path(tmp), args.n))
                times[name].append(time.perf_counter() - started)
                assert n == args.n, (name, n)
    result = {name: {"best_s": round(min(t), 3), "events_per_s": round(args.n / min(t)),
                     "runs_s": [round(x, 3) for x in t]} for name, t in times.items()}
    result["ratio_cep_over_spark_json"] = round(
        result["cep-source"]["events_per_s"] / result["spark-json"]["events_per_s"], 3)
    result["setup"] = {"n": args.n, "bytes": data.stat().st_size, "master": args.master,
                       "loadavg": os.getloadavg()}
    for name in times:
        print(f"{name:>11}: {result[name]['events_per_s']:>10,} events/s "
              f"(best of {args.rounds}: {result[name]['best_s']} s)")
    print(f"cep source / spark json: {result['ratio_cep_over_spark_json']}x")
    write_results(result, "source.json")


if __name__ == "__main__":
    main()
