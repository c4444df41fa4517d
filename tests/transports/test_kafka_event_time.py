"""Kafka in event time: tweets produced to 3 partitions keyed by user (the guide's
example) and read back by the local runner give the events of the same tweets read in
order, with no late event, against a real embedded broker on 127.0.0.1.

Oracle: the reference evaluator over the generator's tweets in order (one clock, one
segment). Only ``seq`` differs (an event's place in its own input log), so the events
are compared without it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.io.kafka_produce import produce_generated
from cep.reference import log_watermark, reference_run
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.servers.kafka import EmbeddedKafka
from grammar import ir
from grammar.compile import compile_file

ROOT = Path(__file__).parent.parent.parent
TWEETS = "tweets:n=6000"
Name = Callable[[str], str]


def in_order(module: ir.CompiledModule) -> list[dict]:
    """The oracle: the reference evaluator over the tweets in order."""
    loaded = load_inputs(module, [TWEETS], None)
    clock = log_watermark(module, loaded.clock, loaded.end_seq)
    return output_records(reference_run(module, loaded.tables, watermark=clock).output)


def without_seq(events: list[dict]) -> list[str]:
    return sorted(repr(sorted((k, v) for k, v in e.items() if k != "seq")) for e in events)


def test_partitions_keyed_by_user_give_the_in_order_events_and_none_late(
        kafka: EmbeddedKafka, fresh_name: Name) -> None:
    module = compile_file(ROOT / "rules" / "fsd.epl")
    topic = fresh_name("tweets")
    assert produce_generated(kafka.bootstrap, topic, TWEETS, 3, "user") == 6000
    result = run(module, RunConfig((f"kafka://{kafka.bootstrap}/{topic}",), runner="local",
                                   output=Output(collect=True), progress=False))
    expected = in_order(module)
    assert result.totals["late_events"] == 0
    assert result.records is not None and len(result.records) == len(expected)
    assert without_seq(result.records) == without_seq(expected)
