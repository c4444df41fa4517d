"""Detection latency: the time from an event's append to the delivery of its complex event.

A writer appends events at a fixed rate, in 10 ms ticks, to a JSON-lines file that
``cep run bench/rules/latency.epl --follow`` follows (or produces them to a Kafka topic it
reads); the rule (a per-key ``#length(2)``) reports every event, with its ``id``. A reader
polls the output (the file's new lines every 5 ms, or the output topic with
``isolation.level=read_committed``) and notes when each id appears. Per case:

* latency p50, p95, p99 and max over the events appended after the warm-up (the first
  output's arrival), in seconds;
* ``first_output_s``: the first output's delay after ``cep run`` was started;
* the micro-batches' count and their median wall time (the run's metrics).

Cases: the sink and source (``file``: file in, file out; ``kafka``: topic in, topic out,
on an embedded broker started here for the case; ``file+kafka-load``: the file case with
a Kafka case's writer and reader busy on a broker beside it, the control for what the
Kafka case's neighbours cost cep on shared cores; ``kafka-relay``: the Kafka case with
``bench/kafka_relay.py`` in ``cep run``'s place, which only relays the records from topic
to topic exactly once, a transaction per trigger: the floor of the Kafka path on this
machine and broker), the trigger interval (cep's default,
and 1 s), and the rates (1k, 10k, 50k events/s). The summary names, per sink and
trigger, the highest rate at which p99 stayed under 1 s. Everything runs at cep's defaults otherwise
(``local[*]``, 5 engines, the default ``--batch-size``). The machine's load average is
recorded with each case: latencies move with it.

    python bench/bench_latency.py [--rates 1000,10000,50000] [--seconds 20]
        [--sinks file,kafka,file+kafka-load] [--triggers default,1] [--out PATH]

Writes bench/results/latency.json (``--out`` for another file).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from common import ROOT, CpuMeter, load_average, new_lines, stop_gracefully, write_results

from cep.machine_cpu import MachineCpu
from cep.run_config import DEFAULT_TRIGGER_S
from cep.transports.kafka_read import EndFollower
from cep.transports.kafka_send import ensure_topic

RULE = ROOT / "bench" / "rules" / "latency.epl"
BESIDE = "file+kafka-load"  # the file path with a Kafka case's neighbours beside it
RELAY = "kafka-relay"  # bench/kafka_relay.py in cep's place: the Kafka path's floor
KEYS = 1_000
TICK_S = 0.01
POLL_S = 0.005
ID = re.compile(rb'"id":(\d+)')
START_TIMEOUT_S = 120.0


# --------------------------------------------------------------------------- writers

def event_lines(first: int, count: int) -> bytes:
    """``count`` events numbered from ``first``, as JSON lines."""
    ids = np.arange(first, first + count)
    return b"".join(b'{"id":%d,"k":%d,"v":%d.5}\n' % (i, i % KEYS, i % 97)
                    for i in ids.tolist())


class Writer(threading.Thread):
    """Appends events at ``rate`` per second for ``seconds``, in ticks of 10 ms, and keeps
    each event's append time (``appended[id]``, seconds since the epoch)."""

    def __init__(self, rate: int, seconds: float, send) -> None:
        super().__init__(daemon=True)
        self.rate, self.seconds, self.send = rate, seconds, send
        self.total = int(rate * seconds)
        self.appended = np.full(self.total, np.nan)
        self.written = 0
        self.began = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        start = time.time()
        self.began.set()
        while self.written < self.total and not self.stop.is_set():
            due = min(self.total, int((time.time() - start) * self.rate) + 1)
            if due > self.written:
                self.send(event_lines(self.written, due - self.written))
                self.appended[self.written:due] = time.time()
                self.written = due
            time.sleep(TICK_S)


def file_sender(path: Path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def send(lines: bytes) -> None:
        view = memoryview(lines)
        while view:
            view = view[os.write(fd, view):]
    return send


def kafka_sender(bootstrap: str, topic: str):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})

    def send(lines: bytes) -> None:
        for line in lines.splitlines():
            producer.produce(topic, line)
        producer.flush()  # the events are in the topic's log: their append time
    return send


# --------------------------------------------------------------------------- readers

class Reader(threading.Thread):
    """Notes when each id first appears in the output (``seen[id]``)."""

    def __init__(self, size: int) -> None:
        super().__init__(daemon=True)
        self.seen = np.full(size, np.nan)
        self.count = 0
        self.done = threading.Event()

    def note(self, chunk: bytes, now: float) -> None:
        ids = np.array(ID.findall(chunk), dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < len(self.seen))]
        fresh = ids[np.isnan(self.seen[ids])]
        self.seen[fresh] = now
        self.count += len(fresh)


class FileReader(Reader):
    def __init__(self, size: int, path: Path) -> None:
        super().__init__(size)
        self.path = path

    def run(self) -> None:
        for text, now in new_lines(self.path, self.done, POLL_S):
            self.note(text, now)


class KafkaReader(Reader):
    def __init__(self, size: int, bootstrap: str, topic: str) -> None:
        super().__init__(size)
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"bench-latency-{os.getpid()}",
            "auto.offset.reset": "earliest", "isolation.level": "read_committed",
            "enable.auto.commit": False, "fetch.wait.max.ms": 5,
            "enable.partition.eof": True})
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])  # one partition
        # leaves the partition at its end: the embedded broker makes a waiting consumer spin
        self.follower = EndFollower(self.consumer)

    def run(self) -> None:
        try:
            while not self.done.is_set():
                messages = self.follower.consume(10_000, POLL_S)
                now = time.time()
                chunk = b"\n".join(m.value() for m in messages
                                   if m.error() is None and m.value())
                if chunk:
                    self.note(chunk, now)
        finally:
            self.consumer.close()


# --------------------------------------------------------------------------- a case

def percentiles(latency: np.ndarray) -> dict:
    if not len(latency):
        return {}
    p50, p95, p99 = np.percentile(latency, [50, 95, 99])
    return {"p50_s": round(float(p50), 3), "p95_s": round(float(p95), 3),
            "p99_s": round(float(p99), 3), "max_s": round(float(latency.max()), 3)}


def metrics_of(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_case(sink: str, rate: int, seconds: float, trigger: float | None,
             workdir: Path, bootstrap: str | None, broker_pid: int | None = None) -> dict:
    """One ``cep run --follow`` fed at ``rate`` for ``seconds``; latencies of its events,
    and the CPU seconds that ``cep run``'s process tree, the broker (``broker_pid``) and
    this process's writer and reader spent from the start of ``cep run`` to its end."""
    name = f"{sink}-{rate}-{trigger or 'default'}"
    case_dir = workdir / name
    case_dir.mkdir()
    metrics = case_dir / "metrics.jsonl"
    if sink == "file":
        source, output = case_dir / "events.jsonl", case_dir / "out.jsonl"
        source.touch()
        send = file_sender(source)
        cep_input, cep_output = str(source), str(output)
    else:
        topic = f"latency-in-{os.getpid()}-{name}"
        out_topic = f"latency-out-{os.getpid()}-{name}"
        send = kafka_sender(bootstrap, topic)
        send(b"")  # nothing, but the producer connects before the clock starts
        for made in (topic, out_topic):
            ensure_topic(bootstrap, made, 1)
        cep_input = f"kafka://{bootstrap}/{topic}"
        cep_output = f"kafka://{bootstrap}/{out_topic}"
    if sink == RELAY:
        command = [sys.executable, str(ROOT / "bench" / "kafka_relay.py"), bootstrap,
                   topic, out_topic, "--trigger", str(trigger or DEFAULT_TRIGGER_S)]
    else:
        command = [sys.executable, "-m", "cep.cli", "run", str(RULE), "--input", cep_input,
                   "--follow", "--output", cep_output, "--checkpoint",
                   str(case_dir / "run"), "--metrics", str(metrics), "--quiet"]
        if trigger is not None:
            command += ["--trigger-interval", str(trigger)]
    writer = Writer(rate, seconds, send)
    reader = (FileReader(writer.total, Path(cep_output)) if sink == "file"
              else KafkaReader(writer.total, bootstrap, cep_output.rsplit("/", 1)[1]))
    log = case_dir / "cep.log"
    print(f"[{name}] {' '.join(command[3:])}", flush=True)
    started, own_cpu = time.time(), time.process_time()
    with open(log, "wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=_default_signals)
    meter = CpuMeter({"cep": proc.pid, **({"broker": broker_pid} if broker_pid else {})})
    meter.sample()
    meter.start()
    reader.start()
    try:
        send(event_lines(0, 1))  # id 0 twice: this one tells when the run delivers
        while np.isnan(reader.seen[0]):
            if proc.poll() is not None or time.time() - started > START_TIMEOUT_S:
                raise RuntimeError(f"{name}: no first output: "
                                   + log.read_text(errors="replace")[-1500:])
            time.sleep(POLL_S)
        first_output = float(reader.seen[0] - started)
        reader.seen[0] = np.nan
        with MachineCpu() as machine:
            writing = time.time()
            writer.start()
            writer.join()
            written = time.time()
            deadline = time.time() + 30
            while reader.count < writer.total and time.time() < deadline:
                time.sleep(0.05)
            drained = time.time()
    finally:
        stop_gracefully(proc, 60)
        cpu = meter.stop()
        reader.done.set()
        reader.join()
    cpu["bench_clients"] = round(time.process_time() - own_cpu, 2)  # writer, reader, meter
    latency = reader.seen - writer.appended
    delivered = latency[~np.isnan(latency)]
    batches = metrics_of(metrics)
    ends = [b["wall_time"] for b in batches if "wall_time" in b]
    gaps = np.diff(ends) if len(ends) > 1 else np.array([])
    spark = {part: round(float(np.median([b["spark_ms"][part] for b in batches
                                           if part in b.get("spark_ms", {})])))
             for part in {p for b in batches for p in b.get("spark_ms", {})}}
    stages = batch_stages(batches)
    result = {"sink": sink, "rate": rate, "seconds": seconds,
              "trigger_s": trigger if trigger is not None else DEFAULT_TRIGGER_S,
              "events": writer.total, "delivered": len(delivered),
              "first_output_s": round(first_output, 2), **percentiles(delivered),
              "batches": len(batches),
              "batch_gap_median_s": round(float(np.median(gaps)), 3) if len(gaps) else None,
              "spark_median_ms": spark, "batch_stage_median_s": stages, "cpu_s": cpu,
              # the whole machine's busy cores while the input was written, and after it
              # until the last event came out: 2 of 2 says the machine, not cep, set the pace
              "machine_cores_busy": {
                  "writing": cores_busy(machine, writing, written),
                  "draining": cores_busy(machine, written, drained)},
              "returncode": proc.returncode, "load_average": load_average()}
    print(f"[{name}] " + ", ".join(f"{k} {v}" for k, v in result.items()
                                   if k not in ("sink", "rate", "load_average")), flush=True)
    return result


def cores_busy(machine: MachineCpu, start: float, end: float) -> float | None:
    """The machine's busy cores from ``start`` to ``end`` (None: too short to tell)."""
    busy = machine.between(start, end) if end - start > 0.5 else None
    return None if busy is None else round(busy / (end - start), 2)


def batch_stages(batches: list[dict]) -> dict[str, float]:
    """Medians over the batches that had input of where a batch's time went, from the
    run's metrics: the engines' and input tasks' stages (``stage_s``: read, derive,
    route, the engines' own; seconds summed over the engines), the driver's sink
    (``sink_s``: the batch's job, run when the sink collects the engines' stats), its
    delivery (``write_s``: the output written, to the file or the Kafka transaction),
    and ``between_s``: the interval to the batch before less those two (Spark's
    trigger around the job: the source's planning, the offsets and commit logs)."""
    busy = [b for b in batches if b.get("events_in")]
    names = sorted({n for b in busy for n in b.get("stage_s", {})})
    out = {f"stage.{n}": float(np.median([b.get("stage_s", {}).get(n, 0.0) for b in busy]))
           for n in names}
    for name in ("sink_s", "write_s"):
        values = [b[name] for b in busy if name in b]
        if values:
            out[name] = float(np.median(values))
    # the rest of a batch's interval, outside cep's sink: Spark's trigger (planning:
    # the source's latestOffset and partitions, the offsets and commit logs)
    between = [b["wall_time"] - a["wall_time"] - b["sink_s"] - b["write_s"]
               for a, b in itertools.pairwise(batches)
               if b.get("events_in") and "sink_s" in b and "write_s" in b]
    if between:
        out["between_s"] = float(np.median(between))
    if busy:
        out["events_in"] = float(np.median([b["events_in"] for b in busy]))
    return {k: round(v, 4) for k, v in out.items()}


@contextlib.contextmanager
def kafka_beside(bootstrap: str, rate: int, seconds: float) -> Iterator[None]:
    """While the block runs: a writer producing ``rate`` events/s to a topic of its own
    and a reader following it, as the Kafka cases' writer and reader do. A file case run
    in the block (the ``file+kafka-load`` sink) shares the machine with what a Kafka
    case's broker and clients cost, without cep touching Kafka: the control that tells
    cep's own Kafka costs from its neighbours' on the same cores."""
    topic = f"latency-beside-{os.getpid()}-{rate}"
    ensure_topic(bootstrap, topic, 1)
    send = kafka_sender(bootstrap, topic)
    send(b"")
    writer = Writer(rate, seconds, send)
    reader = KafkaReader(writer.total, bootstrap, topic)
    reader.start()
    writer.start()
    try:
        yield
    finally:
        writer.stop.set()
        writer.join()
        reader.done.set()
        reader.join()


def _default_signals() -> None:
    """The child handles SIGINT and SIGTERM as a user's terminal would have it, however
    this bench was started (a background job inherits SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def best_rates(cases: list[dict]) -> dict:
    """Per sink and trigger, the highest rate whose p99 stayed under 1 s (None: none)."""
    out: dict[str, int | None] = {}
    for case in cases:
        name = f"{case['sink']}-trigger-{case['trigger_s']}"
        out.setdefault(name, None)
        ok = case.get("p99_s") is not None and case["p99_s"] < 1.0 and (
            case["delivered"] == case["events"])
        if ok and (out[name] is None or case["rate"] > out[name]):
            out[name] = case["rate"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,10000,50000")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sinks", default="file,kafka")
    parser.add_argument("--triggers", default="default,1")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every case this many times, round after round")
    parser.add_argument("--out", default="latency.json")
    parser.add_argument("--keep", default=None,
                        help="keep each case's run directory (metrics, log) under this one")
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    triggers = [None if t == "default" else float(t) for t in args.triggers.split(",")]
    sinks = args.sinks.split(",")
    cases = []
    with contextlib.ExitStack() as kept:
        tmp = (args.keep if args.keep else
               kept.enter_context(tempfile.TemporaryDirectory(prefix="cep-bench-latency-")))
        for round_, sink, trigger, rate in itertools.product(
                range(1, args.rounds + 1), sinks, triggers, rates):
            with contextlib.ExitStack() as stack:
                bootstrap, broker_pid = None, None
                if sink != "file":  # a fresh broker: its idle CPU grows with
                    # the records it holds (docs/limits.md), so cases must not
                    # inherit the earlier cases' records
                    from cep.servers.kafka import EmbeddedKafka
                    broker = stack.enter_context(EmbeddedKafka())
                    bootstrap, broker_pid = broker.bootstrap, broker.pid
                if sink == BESIDE:
                    stack.enter_context(kafka_beside(bootstrap, rate,
                                                     args.seconds + 30))
                # a directory per sink and round: a case's own is named
                workdir = Path(tmp) / f"{sink}-r{round_}"  # without BESIDE
                workdir.mkdir(exist_ok=True)
                case = run_case("file" if sink == BESIDE else sink, rate,
                                args.seconds, trigger, workdir, bootstrap,
                                broker_pid)
                cases.append({**case, "sink": sink, "round": round_})
    result = {"rule": str(RULE.relative_to(ROOT)), "keys": KEYS, "cases": cases,
              "best_rate_p99_under_1s": best_rates(cases)}
    print(json.dumps(result["best_rate_p99_under_1s"]))
    write_results(result, args.out)


if __name__ == "__main__":
    main()
