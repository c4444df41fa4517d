"""The Kafka floor: the least an exactly-once micro-batch job can do between two topics.

``bench_latency.py``'s ``kafka-relay`` case runs this in ``cep run``'s place. It does
what any exactly-once Kafka-to-Kafka micro-batch job must do, and nothing else: a
``read_committed`` consumer follows the input topic's one partition; every trigger
interval, the records that arrived are produced unchanged to the output topic in one
transaction, with the input offsets sent to that transaction (Kafka's own
consume-transform-produce pattern). No parsing, no rule, no Spark, one process.

Why: cep's Kafka latency target is relative to its file path on the same machine. The
relay's latency, measured by the same writer and reader on the same broker, is a floor
for any job that reads and writes Kafka exactly once with this client and broker on this
machine: cep's Kafka path cannot be faster than the relay plus cep's own work.

    python bench/kafka_relay.py BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC [--trigger 0.1]

Stops on SIGTERM or SIGINT after the transaction under way.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from cep.transports.kafka_read import EndFollower

_MAX_RECORDS = 100_000
_CHUNK = 50_000  # at most this many queued before a chunk: the queue holds 100,000


def relay(bootstrap: str, source: str, target: str, trigger_s: float,
          stop: threading.Event) -> int:
    """Relays ``source``'s partition 0 to ``target`` until ``stop``; returns the records
    relayed."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"relay-{os.getpid()}",
        "isolation.level": "read_committed", "enable.auto.commit": False,
        "enable.partition.eof": True, "fetch.wait.max.ms": 5})
    consumer.assign([TopicPartition(source, 0, OFFSET_BEGINNING)])
    follower = EndFollower(consumer)  # the embedded broker makes a waiting consumer spin
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1,
                         "transactional.id": f"relay-{os.getpid()}"})
    producer.init_transactions(30)
    relayed = 0
    try:
        began = time.monotonic()
        while not stop.is_set():
            # as Spark's processing-time trigger: a batch every trigger_s, or at once
            # after a batch that overran it
            due = began + trigger_s
            values: list[bytes] = []
            last = -1
            while True:
                left = due - time.monotonic()
                batch = follower.consume(_MAX_RECORDS, max(0.001, min(0.01, left)))
                records = batch
                errors = [m.error() for m in batch if m.error() is not None]
                if errors:  # ends of partitions; anything else must stop the relay
                    failed = [e for e in errors if e.code() != KafkaError._PARTITION_EOF]
                    if failed:
                        raise KafkaException(failed[0])
                    records = [m for m in batch if m.error() is None]
                if records:
                    values.extend(m.value() for m in records)
                    last = records[-1].offset()
                if left <= 0 or stop.is_set():
                    break
            began = time.monotonic()
            if not values:
                continue
            producer.begin_transaction()
            for first in range(0, len(values), _CHUNK):  # as cep's writer sends
                for value in values[first:first + _CHUNK]:
                    producer.produce(target, value)
                producer.poll(0)
                if len(producer) > _CHUNK:
                    producer.flush(30)
            producer.send_offsets_to_transaction(
                [TopicPartition(source, 0, last + 1)], consumer.consumer_group_metadata())
            producer.commit_transaction(30)
            relayed += len(values)
    finally:
        consumer.close()
    return relayed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--trigger", type=float, default=0.1)
    args = parser.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    relay(args.bootstrap, args.source, args.target, args.trigger, stop)


if __name__ == "__main__":
    main()
