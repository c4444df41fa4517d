"""Kafka in: topics of 3 partitions on a real (embedded) broker on 127.0.0.1, read by the
Spark runtime and by the reference runner through the same input log, give the same
events; malformed records are dead-lettered with their topic, partition and offset."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pymongo import MongoClient
from support.faults import (
    CEP_TIMEOUT,
    INPUT,
    RULE,
    batch_total,
    cep_run,
    committed,
    finish,
    kill_group,
    metrics,
    reading,
    start,
    wait_until,
)
from support.samples import DISTINCT_EXAMPLES
from support.spark_runs import reference, run_and_read
from support.topics import consume_all

from cep.engine.output import output_records
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import InputLog
from cep.io.inputs import load_inputs, load_segments
from cep.io.kafka_produce import produce, produce_generated
from cep.reference import log_watermark, reference_run
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.servers.kafka import EmbeddedKafka
from cep.servers.mongo import EmbeddedMongo
from grammar.compile import compile_file

ROOT = Path(__file__).parent.parent.parent

PARTITIONS = 3


@pytest.fixture(scope="module")
def kafka() -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka() as broker:
        yield broker


def _topic(kafka: EmbeddedKafka, name: str, data: str) -> str:
    """A topic of 3 partitions holding ``tests/data/<data>``, line i in partition i % 3."""
    produce(kafka.bootstrap, name, ROOT / "tests" / "data" / data, partitions=PARTITIONS)
    return f"kafka://{kafka.bootstrap}/{name}"


@pytest.mark.parametrize("rule", sorted(DISTINCT_EXAMPLES))
def test_kafka_to_kafka_equals_reference_over_the_same_segments(spark, kafka, rule):
    module = compile_file(ROOT / "rules" / rule)
    name = rule.removesuffix(".epl")
    uri = _topic(kafka, f"in-{name}", DISTINCT_EXAMPLES[rule])
    expected = reference(module, uri)
    lines = len((ROOT / "tests" / "data" / DISTINCT_EXAMPLES[rule]).read_text().splitlines())
    result = run(module, RunConfig(
        uri, output=Output(f"kafka://{kafka.bootstrap}/out-{name}"), engines=2, batch_size=17,
        master="local[2]", progress=False))
    assert _published(kafka, f"out-{name}") == expected
    assert sum(m["events_in"] for m in result.metrics) == result.events == lines
    assert len(result.metrics) >= lines // 17


def test_segments_interleave_partitions_and_latest_starts_at_the_end(kafka, tmp_path):
    uri = _topic(kafka, "in-log", "readings.jsonl")
    log = InputLog(tmp_path / "a", {"Reading": uri}, follow=True)
    log.discover(first=True)
    segments = [log.segments[o] for o in sorted(log.segments)]
    assert [s.path.rsplit("#", 1)[1] for s in segments] == ["0", "1", "2"] * 2
    # each partition's join mark (the watermark waits for it from there), then the chunks
    assert [(s.start, s.end, s.kind) for s in segments] == (
        [(0, 0, "kafka")] * 3 + [(0, 20, "kafka")] * 3)
    assert log.discover() == 0  # nothing new
    latest = InputLog(tmp_path / "b", {"Reading": uri}, follow=True, starting_offsets="latest")
    latest.discover(first=True)
    assert {(s.start, s.end) for s in latest.segments.values()} == {(20, 20)}
    produce(kafka.bootstrap, "in-log", ROOT / "tests" / "data" / "readings.jsonl")
    reopened = InputLog(tmp_path / "b", {"Reading": uri}, follow=True,
                        starting_offsets="latest")  # a restart: the start point was logged
    assert reopened.discover() == 3
    assert sorted((s.start, s.end) for s in reopened.segments.values()
                  if s.end > s.start) == [(20, 40)] * 3


def test_malformed_records_are_dead_lettered_with_topic_partition_offset(
        spark, kafka, tmp_path):
    module = compile_file(ROOT / "rules" / "sensor_average.epl")
    good = (ROOT / "tests" / "data" / "readings.jsonl").read_bytes().splitlines()[:6]
    bad = [b"not json", b'{"sensor": "s1", "ts": "yesterday", "temp": 1.0}',
           b'{"sensor": "s1", "ts": "2026-01-01T00:00:00Z",\n "temp": "hot"}']
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    produce(kafka.bootstrap, "in-bad", ROOT / "tests" / "data" / "readings.jsonl",
            partitions=2)  # 30 + 30 good records first
    for value in [*bad, *good]:
        producer.produce("in-bad", value, partition=1)
    producer.flush(10)
    uri = f"kafka://{kafka.bootstrap}/in-bad"
    dead_file = tmp_path / "dead.jsonl"
    loaded = load_inputs(module, [uri], str(dead_file))
    assert (loaded.accepted, loaded.rejected) == (66, 3)
    letters = [json.loads(line) for line in dead_file.read_text().splitlines()]
    assert [(d["source"], d["offset"], d["kind"]) for d in letters] == [
        ("in-bad/1", 30, "not_json"), ("in-bad/1", 31, "bad_timestamp"),
        ("in-bad/1", 32, "wrong_type")]
    assert letters[2]["record"].startswith('{"sensor": "s1"') and "\n" not in letters[2]["record"]
    run, records = run_and_read(module, uri, engines=2, batch_size=25, dead_letter=str(
        tmp_path / "spark-dead.jsonl"))
    assert run.totals["dead_lettered"] == 3 and run.events == 66
    spark_letters = [json.loads(line) for line in
                     (tmp_path / "spark-dead.jsonl").read_text().splitlines()]
    assert spark_letters == letters
    assert records == reference(module, uri)


def _published(kafka: EmbeddedKafka, topic: str) -> list[dict]:
    """The output topic's events as a read_committed consumer sees them, in order."""
    return [json.loads(value) for _p, _o, _k, value in consume_all(kafka.bootstrap, topic)]


def test_kafka_to_kafka_and_mongodb_equal_the_reference(spark, kafka, tmp_path):
    module = compile_file(ROOT / "rules" / "fsd.epl")
    uri = _topic(kafka, "in-fsd-out", DISTINCT_EXAMPLES["fsd.epl"])
    expected = reference(module, uri)
    sources = {module.input_streams[0]: uri}
    out = f"kafka://{kafka.bootstrap}/out-fsd-rerun"
    options = {"engines": 2, "batch_size": 20, "master": "local[2]", "progress": False}
    first = run(module, RunConfig(sources, output=Output(out),
                                  checkpoint=str(tmp_path / "k"), **options))
    assert len(first.metrics) >= 3
    assert _published(kafka, "out-fsd-rerun") == expected
    keys = [key for _p, _o, key, _v in consume_all(kafka.bootstrap, "out-fsd-rerun")]
    assert keys == [json.dumps(e["key"]).encode() for e in expected]
    # the same command again: nothing new in the topic, nothing written twice
    run(module, RunConfig(sources, output=Output(out), checkpoint=str(tmp_path / "k"),
                          **options))
    assert _published(kafka, "out-fsd-rerun") == expected
    with EmbeddedMongo() as mongo:
        target = f"{mongo.uri.rstrip('/')}/cep.fsd"
        run(module, RunConfig(sources, output=Output(target), **options))
        with MongoClient(mongo.uri) as client:
            docs = list(client.cep.fsd.find({}, {"_id": 0}).sort([("seq", 1), ("rule", 1)]))
    assert docs == expected


def _log_reference(module, run: Path, ended: bool = True) -> list[dict]:
    """The reference runner over the segments a run logged (its exact input), with the
    log's watermark (a clock per partition); ``ended``: the input ended there (a run
    stopped by SIGTERM has not reached the end of its input)."""
    log = InputLog(run / "input", {}, follow=True)
    with DeadLetter(None) as dead:
        loaded = load_segments(module, [log.segments[o] for o in sorted(log.segments)], dead)
    clock = log_watermark(module, loaded.clock, loaded.end_seq, final=ended)
    return output_records(reference_run(module, loaded.tables, watermark=clock).output)


@pytest.mark.parametrize("sink", ["kafka", pytest.param("mongodb", marks=pytest.mark.slow)])
def test_sigkill_then_restart_writes_every_event_once(kafka, tmp_path, sink):
    """FSD with dlb-h moving keys (faults.RUN_OPTIONS), from a 3-partition topic, killed
    inside batch 2 and run again: the output holds exactly the reference's events."""
    module = compile_file(RULE)
    uri = _topic(kafka, f"skewed-{sink}", str(INPUT.relative_to(ROOT / "tests" / "data")))
    run = tmp_path / "run"
    with contextlib.ExitStack() as stack:
        if sink == "kafka":
            target = f"kafka://{kafka.bootstrap}/stories-{sink}"
        else:
            mongo = stack.enter_context(EmbeddedMongo())
            target = f"{mongo.uri.rstrip('/')}/cep.stories"
        command = cep_run(run, "--output", target, source=uri)
        proc = start(command, tmp_path / "killed")
        wait_until(lambda: reading(run, 2), proc, "batch 2's input tasks at work")
        kill_group(proc)
        assert not committed(run, 2), "the kill came too late"
        resumed = finish(command, tmp_path / "resumed")
        assert resumed.returncode == 0, resumed.stderr
        expected = _log_reference(module, run)
        # the run's input log is the topic, whole: the reference reading the topic itself
        # agrees, so the expectation is not the run's own view of its input
        assert expected == reference(module, uri)
        moved = sum(m["exported_keys"] for m in metrics(Path(f"{run}.metrics")))
        assert moved > 0, "keys must have moved"
        if sink == "kafka":
            assert _published(kafka, f"stories-{sink}") == expected
        else:
            with MongoClient(mongo.uri) as client:
                docs = list(client.cep.stories.find({}, {"_id": 0}).sort("seq", 1))
            assert docs == expected
    assert len(expected) > 10


@pytest.mark.slow  # two cep runs and a broker restart: 87-103 s on the shared machine
def test_broker_stopped_mid_run_one_line_then_the_same_command_resumes(tmp_path):
    data = tmp_path / "kafka"
    broker = EmbeddedKafka(data_dir=data).start()
    port = broker.port
    try:
        produce(broker.bootstrap, "readings", ROOT / "tests" / "data" / "readings.jsonl",
                partitions=3)
        auth = "kafka://cep:s3cret@127.0.0.1"
        options = "?security.protocol=PLAINTEXT&socket.timeout.ms=3000"
        uri = f"{auth}:{port}/readings{options}"
        run = tmp_path / "run"
        command = [sys.executable, "-m", "cep.cli", "run", str(ROOT / "rules" /
                   "sensor_average.epl"), "--input", uri, "--output",
                   f"{auth}:{port}/averages{options}", "--batch-size", "25", "--engines",
                   "2", "--master", "local[2]", "--quiet", "--checkpoint", str(run),
                   "--trigger-interval", "0.5", "--metrics", f"{run}.metrics"]
        proc = start([*command, "--follow"], tmp_path / "follow")
        wait_until(lambda: committed(run, 1), proc, "batch 1")
        broker.stop()  # SIGTERM: the broker saves its data
        proc.wait(timeout=300)
        assert proc.returncode == 1
        error = (tmp_path / "follow.err").read_text().strip().splitlines()[-1]
        assert error.startswith("cep: batch ") and "Kafka unreachable at " in error
        assert f"kafka://cep:***@127.0.0.1:{port}" in error and "s3cret" not in error
        broker = EmbeddedKafka(data_dir=data, port=port or 0).start()
        resumed = finish(command, tmp_path / "resumed")
        assert resumed.returncode == 0, resumed.stderr
        expected = _log_reference(compile_file(ROOT / "rules" / "sensor_average.epl"), run)
        assert _published(broker, "averages") == expected
        assert sum(m["events_in"] for m in metrics(Path(f"{run}.metrics"))) == 60
    finally:
        broker.stop()


def test_csv_values_are_typed_by_the_schema(kafka, tmp_path):
    """``?format=csv``: values are CSV lines whose columns are the schema's fields."""
    module = compile_file(ROOT / "rules" / "sensor_average.epl")
    rows = [json.loads(line) for line in
            (ROOT / "tests" / "data" / "readings.jsonl").read_text().splitlines()[:10]]
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    produce(kafka.bootstrap, "in-csv", ROOT / "tests" / "data" / "readings.jsonl",
            partitions=1)  # creates the topic; these 60 JSON lines are bad CSV rows
    for r in rows:
        producer.produce("in-csv", f"{r['sensor']},{r['ts']},{r['temp']},"
                         f"{str(r['ok']).lower()}".encode())
    producer.flush(10)
    loaded = load_inputs(module, [f"kafka://{kafka.bootstrap}/in-csv?format=csv"],
                         str(tmp_path / "dead.jsonl"))
    assert (loaded.accepted, loaded.rejected) == (10, 60)
    table = loaded.tables["Reading"]
    assert table["sensor"].tolist() == [r["sensor"] for r in rows]
    assert table["temp"].tolist() == [r["temp"] for r in rows]
    letters = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert [d["offset"] for d in letters] == list(range(60))


def test_follow_picks_up_new_records_and_latest_skips_the_old(kafka, tmp_path):
    """``--follow --starting-offsets latest``: records already in the topic are not read,
    records produced while the run goes on are, once each; SIGTERM ends it with 0."""
    data = ROOT / "tests" / "data" / "readings.jsonl"
    uri = _topic(kafka, "in-follow", "readings.jsonl")  # 60 records before the start
    run = tmp_path / "run"
    command = [sys.executable, "-m", "cep.cli", "run", str(ROOT / "rules" /
               "sensor_average.epl"), "--input", uri, "--output",
               f"kafka://{kafka.bootstrap}/out-follow", "--batch-size", "25", "--engines",
               "2", "--master", "local[2]", "--quiet", "--checkpoint", str(run),
               "--trigger-interval", "0.5", "--metrics", f"{run}.metrics", "--follow",
               "--starting-offsets", "latest"]
    proc = start(command, tmp_path / "follow")
    wait_until(lambda: (run / "input" / "segments.jsonl").exists(), proc, "the input log")
    produce(kafka.bootstrap, "in-follow", data)
    wait_until(lambda: batch_total(run, "events_in") >= 60, proc, "the new records")
    produce(kafka.bootstrap, "in-follow", data)
    wait_until(lambda: batch_total(run, "events_in") >= 120, proc, "the next records")
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=CEP_TIMEOUT)  # the batch in flight finishes first
    assert proc.returncode == 0, (tmp_path / "follow.err").read_text()
    assert batch_total(run, "events_in") == 120
    module = compile_file(ROOT / "rules" / "sensor_average.epl")
    expected = _log_reference(module, run, ended=False)
    assert expected and _published(kafka, "out-follow") == expected



@pytest.mark.parametrize("batch_size", [None, 1500])
def test_tweets_keyed_by_user_give_the_in_order_events_and_none_late(spark, kafka,
                                                                    batch_size):
    """The guide's example on Spark (at the defaults, and in batches that cut the
    partitions' chunks): tweets produced to 3 partitions keyed by user give the same
    events as the same tweets read in order, and no late event. Oracle: the reference
    evaluator over the generator's tweets in order; ``seq`` (the place in each run's own
    input log) aside. Spark's events equal the local runner's over the topic, seq too."""
    module = compile_file(ROOT / "rules" / "fsd.epl")
    topic = f"in-tweets-{batch_size}"
    produce_generated(kafka.bootstrap, topic, "tweets:n=6000", PARTITIONS, "user")
    uri = f"kafka://{kafka.bootstrap}/{topic}"
    options = {"batch_size": batch_size} if batch_size else {}
    result, events = run_and_read(module, uri, **options)  # local[2]: all 2 cores
    loaded = load_inputs(module, ["tweets:n=6000"], None)
    in_order = output_records(reference_run(
        module, loaded.tables, watermark=log_watermark(module, loaded.clock,
                                                       loaded.end_seq)).output)
    assert result.totals["late_events"] == 0

    def strip(rows: list[dict]) -> list[str]:
        return sorted(repr(sorted((k, v) for k, v in r.items() if k != "seq")) for r in rows)
    assert strip(events) == strip(in_order)
    assert events == reference(module, uri)
