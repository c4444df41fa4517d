"""``cep produce TOPIC_URI --input SRC``: the input side of a Kafka demo (see
:mod:`cep.io.kafka_produce`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cep.cli.errors import CommandError
from cep.io.inputlog import generator_kind
from cep.io.kafka_produce import produce, produce_generated
from cep.run import embedded_kafka_for
from cep.tables import count, seconds
from cep.transports.address import KafkaUri, parse_kafka_uri
from cep.transports.embedded_kafka import resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", metavar="TOPIC_URI", help="kafka://HOST:PORT/TOPIC")
    parser.add_argument("--input", required=True, metavar="SRC",
                        help="a JSON-lines file, or the generator: tweets[:n=…,mode=…]")
    parser.add_argument("--partitions", type=int, default=None, metavar="N",
                        help="partitions of a topic created now (default 1; an existing "
                        "topic must have this many)")
    parser.add_argument("--key", metavar="FIELD", help="key records by this field (every "
                        "record of a key in one partition); default: line i to partition "
                        "i mod N")
    parser.set_defaults(handler=produce_command)


def one_topic(text: str, doing: str) -> tuple[KafkaUri, str]:
    """The URI of a command that works on one topic (``cep produce``, ``cep consume``),
    and that topic; a one-line CommandError otherwise."""
    try:
        uri = parse_kafka_uri(text)
    except ValueError as err:
        raise CommandError(str(err)) from None
    if len(uri.topics) != 1:
        raise CommandError(f"cep {doing} one topic, got {','.join(uri.topics)}")
    return uri, uri.topics[0]


def produce_command(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    uri, topic = one_topic(args.topic, "produce loads")
    with embedded_kafka_for([args.topic]):
        address = resolve(uri.address)
        if generator_kind(args.input) is not None:
            sent = produce_generated(address, topic, args.input, args.partitions, args.key)
        elif Path(args.input).is_file():
            sent = produce(address, topic, args.input, args.partitions, args.key)
        else:
            raise CommandError(f"input not found: {args.input} (a JSON-lines file or "
                               "tweets:…)")
    elapsed = time.perf_counter() - started
    print(f"cep: {count(sent)} records to {uri.address}/{topic} in {seconds(elapsed, 2)}",
          file=sys.stderr)
    return 0
