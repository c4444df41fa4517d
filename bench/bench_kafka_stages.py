"""What a Kafka micro-batch costs beside a file batch, stage by stage, on the embedded broker.

``bench_latency.py`` finds a Kafka batch (topic in, topic out) slower than a file batch
of the same events under the same broker load; this bench takes the Kafka path apart.
On one embedded broker, a one-partition input topic holding ``--backlog`` latency-bench
events (``bench_latency.py``'s lines) and an output topic, each stage of one batch of
``--batch`` records (about a batch of the latency bench at 50k events/s) and of an
empty one, timed ``--rounds`` times in turns, medians in milliseconds:

* ``plan``: the planner's look at the topic (:func:`partition_ends`), each trigger;
* ``fetch``: an input task's read of the batch's offsets at the partition's end
  (:func:`read_partition_range`, a consumer per call); ``fetch.client``: the read of
  one record, nearly all of it making the consumer and reaching the broker;
* ``convert``: the fetched values into the engine's typed frame
  (:func:`read_kafka_range` on what :class:`KafkaFetch` holds), beside ``convert.file``:
  the file reader on the same lines in a file, the file path's own cost;
* ``publish``: the driver's transaction of the batch's output lines
  (:class:`KafkaPublisher`), split into ``publish.keys`` (the records' keys from the
  key texts the engines wrote beside the lines), ``publish.marker`` (the committed-batch
  marker read), ``publish.send`` (records queued and flushed) and ``publish.commit``
  (the offsets sent to the transaction, and its commit), beside ``publish.file``: the
  same text appended to a file.

``plan`` runs twice: ``fresh`` (an admin client made per call, as the code did before)
and ``kept`` (the client kept across calls by :mod:`cep.transports.kafka_clients`); the
driver's writer is kept across batches either way (``publish.init[fresh]``: what a new
one's start costs). The machine is shared: the load average is recorded.

    python bench/bench_kafka_stages.py [--backlog 200000] [--batch 25000] [--rounds 7]
        [--out PATH]

Writes bench/results/kafka_stages.json (``--out`` for another file).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from bench_kafka_read import fill
from bench_latency import event_lines
from common import ROOT, load_average, write_results

from cep.io.deadletter import DeadLetter
from cep.io.kafka_input import KafkaFetch, read_kafka_range
from cep.io.readers.ranges import read_range
from cep.servers.kafka import EmbeddedKafka
from cep.transports import kafka_clients
from cep.transports.address import as_address
from cep.transports.kafka_read import partition_ends, read_partition_range
from cep.transports.kafka_send import ensure_topic
from cep.transports.kafka_write import TransactionalBatchWriter
from cep.transports.outputs import record_keys
from grammar.compile import compile_file

RULE = ROOT / "bench" / "rules" / "latency.epl"


def output_text(first: int, count: int) -> bytes:
    """``count`` output lines as cep writes them for the latency rule."""
    return b"".join(b'{"rule":"echo","key":%d,"seq":%d,"id":%d,"k":%d,"v":%d.5}\n'
                    % (i % 1000, i, i, i % 1000, i % 97) for i in range(first, first + count))


def key_texts(text: bytes) -> pa.Array:
    """Each line's key as JSON text, as the engines leave it in their parts' order
    files (read from the lines themselves, so it fits whatever :func:`output_text`
    made)."""
    return pa.array([json.dumps(json.loads(line)["key"]) for line in text.splitlines()],
                    pa.string())


class Stages:
    """Milliseconds per stage name, one list per name over the rounds."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    def timed(self, name: str, fn: Callable[[], object]) -> object:
        began = time.perf_counter()
        out = fn()
        self.add(name, time.perf_counter() - began)
        return out

    def add(self, name: str, seconds: float) -> None:
        self.samples.setdefault(name, []).append(seconds * 1000)

    def medians(self) -> dict[str, float]:
        return {k: round(statistics.median(v), 2) for k, v in sorted(self.samples.items())}


def fetch_stages(stages: Stages, tag: str, bootstrap: str, topic: str, end: int,
                 batch: int) -> None:
    """The read of the last ``batch`` offsets, and the client part of it: the read of
    the last one offset (a whole round trip for one record)."""
    stages.timed(f"fetch.client[{tag}]",
                 lambda: read_partition_range(bootstrap, topic, 0, end - 1, end))
    got = stages.timed(f"fetch[{tag}]",
                       lambda: read_partition_range(bootstrap, topic, 0, end - batch, end))
    assert len(got) == batch, len(got)  # type: ignore[arg-type]


def convert_stages(stages: Stages, bootstrap: str, topic: str, end: int, batch: int,
                   work: Path) -> None:
    stream = compile_file(RULE).streams["Event"]
    path = f"kafka://{bootstrap}/{topic}#0"
    fetched = KafkaFetch([(path, end - batch, end)])
    fetched.between(path, end - batch, end)  # fetched here: only the conversion is timed
    with DeadLetter(None) as dead:
        frame = stages.timed("convert", lambda: read_kafka_range(
            path, end - batch, end, stream, dead, fetched=fetched))
    assert len(frame) == batch, len(frame)  # type: ignore[arg-type]
    lines = work / "lines.jsonl"
    lines.write_bytes(event_lines(end - batch, batch))
    with DeadLetter(None) as dead:
        frame = stages.timed("convert.file", lambda: read_range(
            str(lines), "json", 0, lines.stat().st_size, stream, dead))
    assert len(frame) == batch, len(frame)  # type: ignore[arg-type]


def publish_stages(stages: Stages, tag: str, writer: TransactionalBatchWriter, batch_id: int,
                   text: bytes, work: Path) -> None:
    """One batch's transaction, step by step as ``KafkaPublisher.publish`` takes them."""
    keys = key_texts(text)  # what the engines' order files hold beside the lines
    began = time.perf_counter()
    lines = text.splitlines()
    records = stages.timed("publish.keys", lambda: list(zip(record_keys(keys), lines,
                                                                strict=True)))
    stages.timed(f"publish.marker[{tag}]", writer.last_committed_batch)
    assert stages.timed(f"publish.begin[{tag}]", lambda: writer.begin(batch_id))
    stages.timed(f"publish.send[{tag}]", lambda: writer.send(records))  # type: ignore[arg-type]
    stages.timed(f"publish.commit[{tag}]", writer.commit)
    stages.add(f"publish[{tag}]", time.perf_counter() - began)
    out = work / "out.jsonl"
    with open(out, "ab") as sink:
        stages.timed("publish.file", lambda: (sink.write(text), sink.flush(),
                                              os.fsync(sink.fileno())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=25_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "kafka_stages.json"))
    args = parser.parse_args()
    stages = Stages()
    loads = []
    with EmbeddedKafka() as broker, tempfile.TemporaryDirectory(prefix="bench-kst-") as tmp:
        work = Path(tmp)
        bootstrap = broker.bootstrap
        topic, out_topic = f"stages-in-{os.getpid()}", f"stages-out-{os.getpid()}"
        fill(bootstrap, topic, args.backlog)
        ensure_topic(bootstrap, out_topic, 1)
        end = partition_ends(bootstrap, topic)[0][1]
        text = output_text(0, args.batch)
        writers = {tag: TransactionalBatchWriter(as_address(bootstrap), out_topic,
                                                 f"bench-{tag}-{os.getpid()}")
                   for tag in ("kept",)}
        partition_ends(bootstrap, topic)  # warm: imports, the first connection, and
        read_partition_range(bootstrap, topic, 0, end - 1, end)  # the kept clients
        for round_ in range(args.rounds):
            with kafka_clients.kept(False):  # a client per call, as before
                stages.timed("plan[fresh]", lambda: partition_ends(bootstrap, topic))
            # the pool (on by default) keeps its clients from round to round
            stages.timed("plan[kept]", lambda: partition_ends(bootstrap, topic))
            fetch_stages(stages, "fresh", bootstrap, topic, end, args.batch)
            convert_stages(stages, bootstrap, topic, end, args.batch, work)
            # the driver's writer lives across batches (it always did); a fresh one
            # per batch pays init_transactions besides
            fresh = TransactionalBatchWriter(as_address(bootstrap), out_topic,
                                             f"bench-fresh-{os.getpid()}-{round_}")
            stages.timed("publish.init[fresh]", fresh.last_committed_batch)
            fresh.close()
            publish_stages(stages, "kept", writers["kept"], round_, text, work)
            loads.append(load_average())
        for writer in writers.values():
            writer.close()
        kafka_clients.close_all()
    medians = stages.medians()
    for name, ms in medians.items():
        print(f"{name:28s} {ms:9.2f} ms")
    write_results({"backlog": args.backlog, "batch": args.batch, "rounds": args.rounds,
                   "median_ms": medians, "load_averages": loads}, args.out)


if __name__ == "__main__":
    main()
