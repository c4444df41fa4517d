"""``cep consume TOPIC_URI``: print a topic's records as JSON lines, as Kafka's console
consumer does, to read back what a run wrote (:func:`cep.transports.kafka_read.consume_topic`).

Each record's value is printed as it is (cep's Kafka output writes one JSON object per
record), one line per record; with ``--metadata`` each line is instead an object with the
record's ``topic``, ``partition``, ``offset``, ``timestamp`` (ms), ``key`` and ``value``
(the value parsed as JSON where it is JSON, else its text). Records without a value
(tombstones) are skipped; a raw newline inside a value is printed as a space, so a
record stays one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import Message

from cep.cli.errors import CommandError
from cep.cli.produce import one_topic
from cep.run import embedded_kafka_for
from cep.tables import count, seconds
from cep.transports.embedded_kafka import resolve
from cep.transports.kafka_read import consume_topic

_STARTS = ("earliest", "latest")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", metavar="TOPIC_URI", help="kafka://HOST:PORT/TOPIC")
    parser.add_argument("--from", dest="start", choices=_STARTS, default="earliest",
                        help="start at each partition's first record (default) or at its "
                        "end (only records that arrive later: with --follow)")
    parser.add_argument("--max", type=int, default=None, metavar="N",
                        help="stop after N records")
    parser.add_argument("--follow", action="store_true",
                        help="keep printing records as they arrive, until Ctrl-C / SIGTERM "
                        "(default: stop at the end of what the topic holds at the start)")
    parser.add_argument("--metadata", action="store_true",
                        help="print each record as {topic, partition, offset, timestamp, "
                        "key, value} instead of its value alone")
    parser.set_defaults(handler=consume_command)


def consume_command(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    uri, topic = one_topic(args.topic, "consume reads")
    if args.max is not None and args.max < 0:
        raise CommandError(f"--max must be 0 or more, got {args.max}")
    printed = 0
    out = sys.stdout.buffer
    try:
        with embedded_kafka_for([args.topic]):
            batches = consume_topic(resolve(uri.address), topic, args.start, args.follow)
            for batch in batches if args.max != 0 else ():
                lines = [line for line in map(_metadata_line if args.metadata
                                              else _value_line, batch) if line is not None]
                if args.max is not None:
                    lines = lines[: args.max - printed]
                out.write(b"".join(lines))
                out.flush()
                printed += len(lines)
                if args.max is not None and printed >= args.max:
                    break
    except KeyboardInterrupt:  # how a followed read is meant to end
        pass
    except BrokenPipeError:  # `cep consume … | head`: the reader has what it wanted
        sys.stdout = None  # type: ignore[assignment]  # no flush error at exit
        return 0
    elapsed = time.perf_counter() - started
    print(f"cep: {count(printed)} records from {uri.address}/{topic} in "
          f"{seconds(elapsed, 2)}", file=sys.stderr)
    return 0


def _value_line(message: Message) -> bytes | None:
    value = message.value()
    if value is None:
        return None
    return value.replace(b"\n", b" ") + b"\n"


def _metadata_line(message: Message) -> bytes:
    key, value = message.key(), message.value()
    return (json.dumps({
        "topic": message.topic(), "partition": message.partition(),
        "offset": message.offset(), "timestamp": message.timestamp()[1],
        "key": None if key is None else key.decode("utf-8", "replace"),
        "value": None if value is None else _json_or_text(value)},
        ensure_ascii=False) + "\n").encode("utf-8")


def _json_or_text(value: bytes) -> object:
    text = value.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
