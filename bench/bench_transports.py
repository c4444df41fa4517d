"""The transports alone, without Spark: how fast tweets go into Kafka, come out by
offset range, and how fast a batch of events is written exactly once to Kafka and to
MongoDB (and how cheap the replay of a written batch is).

Against the embedded brokers on 127.0.0.1 (noida-db for Kafka, SecantusDB for MongoDB),
on N generated tweets (default 200 000) in 3 partitions:

* ``produce``: ``produce_frame`` of the tweet generator's frame, keyed by ``user``
  (JSON-lines writing included);
* ``read``: ``read_partition_range`` of every partition's whole range, one after
  another (an executor reads one partition; here one process reads all three);
* ``kafka_write``: ``write_batch`` of the tweets as batches of 50 000 (key, value)
  records, then the replay of the last batch (skipped by its marker);
* ``mongo_write``: ``MongoEventWriter.write`` of N/4 event records in batches of 10 000,
  then the replay of the last batch (every upsert matches, nothing new).

The machine's load average at the start is recorded: on the shared 2-core machine the
figures move by 2x with the load. Prints the figures and writes
``bench/results/transports_io.json``.

``--pipeline`` measures cep end to end instead and writes ``bench/results/transports.json``:
events/s of Kafka (3 partitions) -> cep on Spark -> Kafka for ``sensor_average.epl``
(a ``#length(5)`` aggregate per sensor) and for FSD (``fsd.epl`` on the generator's
tweets), each beside the same records read from a JSON-lines file into a parts
directory (same session, same engines and batch size; the session start and the Python
workers' first imports are paid by a warm-up run on a tiny file, outside the figures;
each figure is one whole ``cep.run.run`` call, planning and first batch included).
The topic is read in the input log's order (partition chunk by chunk), not the file's,
so ``events_out`` may differ a little between the two (the readings of a sensor are
spread over the partitions; the tweets are keyed by user).
Then the consumer lag of a ``--follow`` run while a producer thread appends readings at
a steady ``--rate`` records/s: every 0.5 s, records in the topic minus records in
committed batches.

Run: ``python bench/bench_transports.py [--n 200000]`` or
``python bench/bench_transports.py --pipeline [--n 200000] [--rate 2000 --seconds 30]``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from common import ROOT, readings, write_jsonl, write_results

from cep.io.jsonl_writer import write_events_jsonl
from cep.io.kafka_produce import produce, produce_frame
from cep.io.tweets.generator import generate_tweets
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.servers.kafka import EmbeddedKafka
from cep.servers.mongo import EmbeddedMongo
from cep.spark.jvm.session import spark_session
from cep.transports.kafka_read import partition_ends, read_partition_range
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter
from cep.transports.mongo_write import MongoEventWriter
from grammar.compile import compile_file

KAFKA_BATCH = 50_000
MONGO_BATCH = 10_000


def _rate(n: int, seconds: float) -> dict[str, float]:
    return {"records": n, "seconds": round(seconds, 3), "records_per_s": round(n / seconds)}


def bench_kafka(n: int) -> dict[str, object]:
    frame = generate_tweets(n).frame
    results: dict[str, object] = {}
    with EmbeddedKafka() as kafka:
        started = time.perf_counter()
        produce_frame(kafka.bootstrap, "tweets", frame, 3, "user", ("ts",))
        results["produce"] = _rate(n, time.perf_counter() - started)

        started = time.perf_counter()
        values = []
        for partition, (low, high) in partition_ends(kafka.bootstrap, "tweets").items():
            values += read_partition_range(kafka.bootstrap, "tweets", partition, low, high).values
        results["read"] = _rate(len(values), time.perf_counter() - started)
        assert len(values) == n

        records = [(None, v) for v in values]
        ensure_topic(kafka.bootstrap, "out", 3)
        with TransactionalBatchWriter(kafka.bootstrap, "out", "bench") as writer:
            started = time.perf_counter()
            for batch, first in enumerate(range(0, n, KAFKA_BATCH)):
                writer.write(batch, records[first : first + KAFKA_BATCH])
            results["kafka_write"] = _rate(n, time.perf_counter() - started)
            started = time.perf_counter()
            assert writer.write(batch, records[first : first + KAFKA_BATCH]) == 0
            results["kafka_replay_skip_s"] = round(time.perf_counter() - started, 4)
    return results


def bench_mongo(n: int) -> dict[str, object]:
    events = [{"rule": "fsd", "key": i % 5000, "seq": i // 5000, "ts": "2026-01-01T00:00:00Z",
               "score": i * 0.5, "id": i} for i in range(n)]
    results: dict[str, object] = {}
    with EmbeddedMongo() as mongo, MongoEventWriter(mongo.uri, "bench", "events") as writer:
        started = time.perf_counter()
        for first in range(0, n, MONGO_BATCH):
            writer.write(events[first : first + MONGO_BATCH])
        results["mongo_write"] = _rate(n, time.perf_counter() - started)
        last = events[(n - 1) // MONGO_BATCH * MONGO_BATCH :]
        started = time.perf_counter()
        assert writer.write(last) == 0
        results["mongo_replay"] = _rate(len(last), time.perf_counter() - started)
    return results


def _readings(path: Path, n: int, first: int = 0) -> None:
    """``n`` sensor readings (100 sensors, 10 ms apart) as JSON lines; temperatures
    around the rule's limit, so that some windows alert."""
    sensors = np.arange(first, first + n) % 100
    write_jsonl(readings(sensors, seed=first, start=first, step_ms=10, mean=28.0), path)


def _committed_events(workdir: Path) -> int:
    return sum(json.loads(p.read_text())["events_in"]
               for p in (workdir / "metrics").glob("batch-*.json"))


def _side_by_side(module, stream: str, file: Path, uri: str, out: str, batch: int,
                  engines: int) -> dict[str, object]:
    """events/s of the same records from a file and from a topic (to a topic)."""
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="cep-bench-") as tmp:
        for name, source, output in (("file", str(file), Output(f"{tmp}/parts")),
                                     ("kafka", uri, Output(out))):
            started = time.perf_counter()
            result = run(module, RunConfig({stream: source}, output=output, engines=engines,
                                           batch_size=batch, master="local[2]",
                                           progress=False))
            seconds = time.perf_counter() - started
            figures[name] = {"events": result.events,
                             "events_out": result.totals["events_out"],
                             "batches": len(result.metrics), "seconds": round(seconds, 2),
                             "events_per_s": round(result.events / seconds)}
    return figures


def _lag(module, kafka: EmbeddedKafka, rate: int, seconds: float, batch: int,
         engines: int) -> dict[str, object]:
    """A --follow run while readings arrive at ``rate``/s: the lag samples."""
    ensure_topic(kafka.bootstrap, "steady", 3)
    stop, produced = threading.Event(), [0]

    def feed() -> None:
        with tempfile.TemporaryDirectory(prefix="cep-feed-") as tmp:
            began = time.perf_counter()
            while (elapsed := time.perf_counter() - began) < seconds:
                due = int(elapsed * rate) + rate // 10 - produced[0]
                if due > 0:
                    _readings(Path(tmp) / "chunk.jsonl", due, produced[0])
                    produce(kafka.bootstrap, "steady", Path(tmp) / "chunk.jsonl")
                    produced[0] += due
                time.sleep(0.1)

    samples: list[list[float]] = []
    with tempfile.TemporaryDirectory(prefix="cep-lag-") as tmp:
        work = Path(tmp) / "run"

        def watch() -> None:
            began = time.perf_counter()
            while not stop.is_set():
                in_topic = sum(high for _low, high in
                               partition_ends(kafka.bootstrap, "steady").values())
                done = _committed_events(work) if (work / "metrics").is_dir() else 0
                samples.append([round(time.perf_counter() - began, 1), in_topic - done])
                if not feeder.is_alive() and done >= produced[0]:
                    stop.set()  # drained: the run may end
                time.sleep(0.5)

        feeder = threading.Thread(target=feed)
        watcher = threading.Thread(target=watch)
        feeder.start()
        watcher.start()
        run(module, RunConfig({"Reading": f"kafka://{kafka.bootstrap}/steady"},
                              output=Output(f"kafka://{kafka.bootstrap}/steady-out"),
                              engines=engines, batch_size=batch, master="local[2]",
                              checkpoint=str(work), follow=True, trigger_s=0.5,
                              progress=False), stop)
        stop.set()
        feeder.join()
        watcher.join()
    lags = [lag for _t, lag in samples]
    return {"rate_per_s": rate, "seconds": seconds, "records": produced[0],
            "lag_max": max(lags), "lag_mean": round(sum(lags) / len(lags)),
            "lag_samples": samples}


def bench_pipeline(n: int, rate: int, seconds: float, batch: int, engines: int
                   ) -> dict[str, object]:
    results: dict[str, object] = {}
    with EmbeddedKafka() as kafka, tempfile.TemporaryDirectory(prefix="cep-data-") as tmp:
        readings = Path(tmp) / "readings.jsonl"
        _readings(readings, n)
        produce(kafka.bootstrap, "readings", readings, 3)
        tweets = Path(tmp) / "tweets.jsonl"
        write_events_jsonl(generate_tweets(n).frame, str(tweets), ("ts",))
        produce(kafka.bootstrap, "tweets", tweets, 3, "user")
        spark_session("local[2]", engines)  # started once, outside the figures
        sensor = compile_file(ROOT / "rules" / "sensor_average.epl")
        run(sensor, RunConfig({"Reading": str(ROOT / "tests" / "data" / "readings.jsonl")},
                              output=Output(str(Path(tmp) / "warm-up")), engines=engines,
                              master="local[2]", progress=False))
        results["sensor_average"] = _side_by_side(
            sensor, "Reading", readings, f"kafka://{kafka.bootstrap}/readings",
            f"kafka://{kafka.bootstrap}/averages", batch, engines)
        fsd = compile_file(ROOT / "rules" / "fsd.epl")
        results["fsd"] = _side_by_side(
            fsd, fsd.input_streams[0], tweets, f"kafka://{kafka.bootstrap}/tweets",
            f"kafka://{kafka.bootstrap}/stories", batch, engines)
        results["lag"] = _lag(sensor, kafka, rate, seconds, batch, engines)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--pipeline", action="store_true",
                        help="Kafka -> cep -> Kafka on Spark (writes transports.json)")
    parser.add_argument("--rate", type=int, default=2000, help="--pipeline: records/s fed")
    parser.add_argument("--seconds", type=float, default=30.0, help="--pipeline: feed time")
    parser.add_argument("--batch-size", type=int, default=20_000)
    parser.add_argument("--engines", type=int, default=3)
    args = parser.parse_args()
    if args.pipeline:
        results: dict[str, object] = {
            "n": args.n, "partitions": 3, "engines": args.engines,
            "batch_size": args.batch_size, "load_average_at_start": os.getloadavg()[0],
            **bench_pipeline(args.n, args.rate, args.seconds, args.batch_size, args.engines)}
        print(json.dumps({k: v for k, v in results.items() if k != "lag"}, indent=2))
        print(json.dumps({k: v for k, v in results["lag"].items()  # type: ignore[union-attr]
                          if k != "lag_samples"}))
        write_results(results, "transports.json")
        return
    results = {"n": args.n, "partitions": 3, "load_average_at_start": os.getloadavg()[0]}
    results.update(bench_kafka(args.n))
    results.update(bench_mongo(args.n // 4))
    print(json.dumps(results, indent=2))
    write_results(results, "transports_io.json")


if __name__ == "__main__":
    main()
