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
``bench/results/transports_io.json`` (the end-to-end Kafka -> cep -> Kafka figures of
issue 13 go to ``transports.json``).

Run: ``python bench/bench_transports.py [--n 200000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from cep.io.generators import generate
from cep.transports.broker import EmbeddedKafka
from cep.transports.kafka_read import partition_ends, read_partition_range
from cep.transports.kafka_write import TransactionalBatchWriter
from cep.transports.mongo_write import MongoEventWriter
from cep.transports.produce import ensure_topic, produce_frame
from migration.server import EmbeddedMongo

ROOT = Path(__file__).resolve().parent.parent
KAFKA_BATCH = 50_000
MONGO_BATCH = 10_000


def _rate(n: int, seconds: float) -> dict[str, float]:
    return {"records": n, "seconds": round(seconds, 3), "records_per_s": round(n / seconds)}


def bench_kafka(n: int) -> dict[str, object]:
    frame = generate(f"tweets:n={n}").frame
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    results: dict[str, object] = {"n": args.n, "python": platform.python_version(),
                                  "partitions": 3,
                                  "load_average_at_start": os.getloadavg()[0]}
    results.update(bench_kafka(args.n))
    results.update(bench_mongo(args.n // 4))
    print(json.dumps(results, indent=2))
    out = ROOT / "bench" / "results" / "transports_io.json"
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
