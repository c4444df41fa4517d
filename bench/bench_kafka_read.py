"""Where a Kafka input's read time goes, and what one fetch per partition per task buys.

The Spark input tasks of a micro-batch read its Kafka chunks (10,000 offsets each,
``cep.io.kafka_input``) one after another; a fetch costs what the broker returns, and the
embedded broker returns the whole rest of the partition to every fetch. Two parts:

* ``read``: in this process, 100,000 latency-bench events (``bench_latency.py``'s lines,
  about 40 bytes) of a one-partition topic read as ten 10,000-offset pieces, either each
  piece with its own fetch (``per-piece``: how a task read before) or the pieces'
  partition with one fetch (``one-fetch``: :class:`cep.io.kafka_input.KafkaFetch`),
  at the end of the partition (a run that keeps up) and 200,000 records before it (a
  batch that fell behind). Per variant: wall, client CPU (this process: Python and
  librdkafka's threads) and broker CPU, in µs per record, medians of interleaved rounds.
* ``run`` (with ``--trees``): whole ``cep run bench/rules/latency.epl`` processes (Spark
  at its defaults but ``--batch-size``) over a topic that holds the whole backlog at the
  start, one per source tree (for example a ``git archive`` of the commit before the
  change, and this tree), and over the same events in a file with the last tree,
  interleaved rounds: wall seconds, the input tasks' read seconds (the metrics'
  ``stage_s.read``, summed over batches), the CPU seconds of the run's driver (Spark's
  JVM and Python workers are not children the bench waits for: not counted), and ratios.

    python bench/bench_kafka_read.py [--records 300000] [--rounds 3]
        [--trees BEFORE_DIR,AFTER_DIR] [--batch-size 100000] [--out PATH]

Writes bench/results/kafka_read.json (``--out`` for another file). The machine is shared:
the load average is recorded with each measure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_latency import event_lines
from common import ROOT, load_average, write_results
from confluent_kafka import Producer

from cep.io.deadletter import DeadLetter
from cep.io.kafka_input import KafkaFetch, read_kafka_range
from cep.servers.kafka import EmbeddedKafka
from cep.transports.kafka_send import ensure_topic
from grammar.compile import compile_file

RULE = ROOT / "bench" / "rules" / "latency.epl"
PIECE = 10_000
READ = 100_000
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def fill(bootstrap: str, topic: str, records: int) -> None:
    """A one-partition topic of ``records`` latency-bench events."""
    ensure_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    lines = event_lines(0, records).splitlines()
    for first in range(0, records, 50_000):
        producer.produce_batch(topic, [{"value": v} for v in lines[first:first + 50_000]])
        producer.flush()


def read_part(broker: EmbeddedKafka, topic: str, records: int, rounds: int) -> list[dict]:
    stream = compile_file(RULE).streams["Event"]
    path = f"kafka://{broker.bootstrap}/{topic}#0"

    def pieces(lo: int, fetched: KafkaFetch | None) -> int:
        rows = 0
        with DeadLetter(None) as dead:
            for first in range(lo, lo + READ, PIECE):
                rows += len(read_kafka_range(path, first, first + PIECE, stream, dead,
                                             fetched=fetched))
        assert rows == READ, rows
        return rows

    variants: dict[str, Callable[[int], int]] = {
        "per-piece": lambda lo: pieces(lo, None),
        "one-fetch": lambda lo: pieces(lo, KafkaFetch([(path, lo, lo + READ)])),
    }
    places = {"at the end": records - READ, "200,000 behind": records - READ - 200_000}
    pieces(records - READ, None)  # warm: the reader's first parse, the connection
    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(rounds):
        for place, lo in places.items():
            for name, read in variants.items():
                broker_before, client_before = cpu_s(broker.pid), time.process_time()
                began = time.perf_counter()
                read(lo)
                wall = time.perf_counter() - began
                samples.setdefault((place, name), []).append(
                    (wall, time.process_time() - client_before,
                     cpu_s(broker.pid) - broker_before))
    out = []
    for (place, name), values in samples.items():
        wall, client, server = (statistics.median(v[i] for v in values) for i in range(3))
        out.append({"place": place, "variant": name, "records": READ,
                    "wall_us_per_record": round(wall / READ * 1e6, 1),
                    "client_cpu_us_per_record": round(client / READ * 1e6, 1),
                    "broker_cpu_us_per_record": round(server / READ * 1e6, 1),
                    "load_average": load_average()})
    return out


def run_part(broker: EmbeddedKafka, topic: str, trees: list[Path], rounds: int,
             batch_size: int, records: int, work: Path) -> list[dict]:
    """Whole runs over the topic, one per tree, and over the same events in a file with
    the last tree (the file path beside the Kafka path), interleaved rounds."""
    events = work / "events.jsonl"
    events.write_bytes(event_lines(0, records))
    cases = [(str(t), f"kafka://{broker.bootstrap}/{topic}", t) for t in trees]
    cases.append((f"{trees[-1]} (file)", str(events), trees[-1]))
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name, *_ in cases}
    loads: list[list[float]] = []
    for _ in range(rounds):
        for name, source, tree in cases:
            with tempfile.TemporaryDirectory(prefix="bench-kafka-read-") as run:
                metrics = Path(run) / "metrics.jsonl"
                command = [sys.executable, "-m", "cep.cli", "run", str(RULE), "--input",
                           source, "--batch-size", str(batch_size), "--output",
                           f"{run}/out.jsonl", "--quiet", "--metrics", str(metrics)]
                began, cpu_before = time.perf_counter(), _children_cpu()
                done = subprocess.run(command, cwd=tree, capture_output=True, text=True)
                wall, cpu = time.perf_counter() - began, _children_cpu() - cpu_before
                if done.returncode:
                    raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
                rows = [json.loads(line) for line in metrics.read_text().splitlines()]
                assert sum(r["events_in"] for r in rows) == records
                read = sum(r.get("stage_s", {}).get("read", 0.0) for r in rows)
                samples[name].append((wall, read, cpu))
                loads.append(load_average())
    out = []
    for name, values in samples.items():
        wall, read, cpu = (statistics.median(v[i] for v in values) for i in range(3))
        out.append({"case": name, "wall_s": [round(v[0], 2) for v in values],
                    "read_task_s": [round(v[1], 2) for v in values],
                    "cpu_s": [round(v[2], 2) for v in values],
                    "median_wall_s": round(wall, 2), "median_read_task_s": round(read, 2),
                    "median_cpu_s": round(cpu, 2),
                    "read_task_us_per_record": round(read / records * 1e6, 1)})
    first, last = out[0], out[-1]
    out.append({"ratios (first tree / last tree over Kafka; Kafka / file, last tree)": {
        "wall": round(first["median_wall_s"] / out[-2]["median_wall_s"], 2),
        "read_task": round(first["median_read_task_s"]
                           / max(out[-2]["median_read_task_s"], 1e-9), 2),
        "kafka_over_file_wall": round(out[-2]["median_wall_s"] / last["median_wall_s"], 2),
        "kafka_over_file_cpu": round(out[-2]["median_cpu_s"] / last["median_cpu_s"], 2)},
        "load_averages": loads})
    return out


def _children_cpu() -> float:
    """CPU seconds of this process's finished children and the descendants they waited
    for: the run's driver, not Spark's JVM or its Python workers (measured: ~2.6 s for a
    30 s run), so only the driver's share."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trees", default="", help="BEFORE_DIR,AFTER_DIR: whole cep runs")
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "kafka_read.json"))
    args = parser.parse_args()
    results: dict = {"records": args.records, "rounds": args.rounds}
    with EmbeddedKafka() as broker:
        topic = f"bench-kafka-read-{os.getpid()}"
        fill(broker.bootstrap, topic, args.records)
        results["read"] = read_part(broker, topic, args.records, args.rounds)
        for row in results["read"]:
            print(json.dumps(row))
        if args.trees:
            trees = [Path(t).resolve() for t in args.trees.split(",")]
            with tempfile.TemporaryDirectory(prefix="bench-kafka-read-") as work:
                results["run"] = run_part(broker, topic, trees, args.rounds,
                                          args.batch_size, args.records, Path(work))
            for row in results["run"]:
                print(json.dumps(row))
    print(write_results(results, args.out))


if __name__ == "__main__":
    main()
