"""What every bench shares: where results go and what they say about the machine, timing,
and the data sets more than one bench builds. Import it as ``common`` (the benches run
as scripts, so ``bench/`` is first on their path).

One bench per question (``python bench/<name>.py --help`` for each one's options):

====================  ===================================================================
bench                 question (result file under bench/results/)
====================  ===================================================================
bench_cli.py          How long does the command line take when it runs nothing
                      (``cep --help``, ``cep check``)? (cli.json)
bench_text.py         How fast are FSD's text functions (LSH keys, tokens, similarity) on
                      one core? (text.json)
bench_udf.py          How much faster is a vectorised user function than a scalar one, and
                      what does one that raises on a few records cost? (udf.json)
bench_tweets.py       How fast is the ``tweets`` generator, how much memory does it take,
                      and how skewed are its keys in each order? (tweets.json)
bench_readers.py      How fast do the file readers turn each format into typed events,
                      without Spark? (readers.json)
bench_reference.py    How fast is the reference evaluator, per kind of rule? (reference.json)
bench_state.py        How fast is the engine state codec against pickle? (state.json)
bench_splitter.py     How well do the paper's strategies balance the paper's Zipf trace,
                      how close to the bound, and how long does a decision take, up to 1M
                      keys? Simulated, no Spark. (splitter.json)
bench_balancers.py    How do all the balancers (also ELB, CLB, the MILP) compare on that
                      trace, how long does the MILP take, and what do measured capacities
                      buy with a slow engine? Simulated. (balancers.json)
bench_source.py       Why cep's own input source and not Spark's JSON source? (source.json)
bench_spark.py        cep on Spark against the same rule written by hand in PySpark and
                      against Spark's floor, one rule, 1M events. (spark.json)
bench_speed.py        What does a micro-batch cost (Spark's fixed part, against the state
                      the engines hold), and how does cep compare with Flink on real
                      flights? Its ``fsd`` part runs bench_fsd.py and keeps its summary
                      beside the other parts. (speed.json)
bench_fsd.py          FSD at the paper's scale on one machine's Spark: where do the
                      engines' task seconds go (restore, process, save, handoff), per
                      strategy? (fsd-<order>-<n>-batch<size>[-engines<N>].json)
cep bench --nodes 5   Does balancing buy throughput where each engine has a node of its own,
                      as in the DLB paper? Table 1 beside the paper's; ``cep report`` draws
                      Figures 3 and 4 from the files. (paper-<order>-<nodes>nodes.json,
                      one per order of the tweets and cluster, written with ``--json``)
bench_speedup.py      How does throughput grow as FSD scales out from 1 to 5 emulated nodes,
                      per strategy, beside the ideal line and the bound Spark's serial
                      frame allows (Guo & Zhou's Fig. 6)? ``cep report`` draws it.
                      (speedup.json, with each point's ``cep bench`` file in speedup/)
bench_scale_midrun.py Does a running FSD job on 2 emulated nodes gain throughput when 2
                      nodes join and ``cep scale`` gives it 4 engines, what does each
                      change cost, where did Spark run its tasks against KG's started
                      at 4 (the event log), and are its events KG's? (scale_midrun.json)
bench_executor_heap.py Does an executor's JVM heap stay bounded over a long FSD run on
                      the emulated cluster, and how much do its Python workers hold?
                      (executor_heap.json; per side, executor_heap-<side>.json)
bench_balance_cost.py What does the balancing machinery (routing by maps, the engines'
                      map bookkeeping, the Balancer, the MongoDB server) cost a batch
                      beyond KG, part by part, and what can balancing buy at most on
                      the emulated nodes? In process, no Spark. (balance-cost.json)
bench_stream.py       Does the driver's memory stay flat as the input grows, and how long
                      from a file landing to its events under ``--follow``? (stream.json)
bench_transports.py   How fast are the Kafka and MongoDB transports alone, and Kafka → cep
                      → Kafka? (transports_io.json, transports.json)
bench_ui.py           What does the live view cost a run? (ui.json)
bench_event_time.py   Do idle keys' state go as time passes (keys held over a churn of
                      users), and what does a timer per key cost? Reference evaluator.
                      (event_time.json)
bench_latency.py      How soon after an event's append is its complex event delivered, to a
                      file and to Kafka, at fixed rates? (latency.json)
bench_kafka_read.py   Where does a Kafka input's read time go (wall, client and broker CPU
                      per record), and what does one fetch per partition per task buy,
                      in process and in whole runs beside the file path? (kafka_read.json)
bench_state_path.py   The engines' state path on Spark before and after a change, side by
                      side with Flink: the flights job at the defaults, or FSD at paper
                      scale (``--fsd``). (state-path-flights.json, state-path-fsd.json)
====================  ===================================================================

``flights.py``, ``flink_compare.py`` and ``flink_job.py`` are the Flink comparison's data
and its other side, used by bench_speed.py.
``fortune_tweets.py`` writes real text for FSD (Debian's fortune cookies replayed in Zipf
order) as a tweets file for ``cep bench --input``.
``spark_hand.py`` and ``spark_progress.py`` are bench_spark.py's hand-written queries and
Spark's own figures of them. ``performance_page.py`` writes docs/performance.md from the
result files, with the sections of ``page/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cep.provenance import load_average, machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
RULES = ROOT / "rules"


# --------------------------------------------------------------------------- results

def new_lines(path: Path, done: threading.Event, poll_s: float
              ) -> Iterator[tuple[bytes, float]]:
    """Follow a file another process appends to: every ``poll_s`` until ``done`` is set,
    the whole lines added since the last look and when they were read."""
    offset, rest = 0, b""
    while not done.wait(poll_s):
        if not path.exists():
            continue
        with open(path, "rb") as fh:
            fh.seek(offset)
            chunk = fh.read()
        now = time.time()
        offset += len(chunk)
        text = rest + chunk
        cut = text.rfind(b"\n") + 1
        text, rest = text[:cut], text[cut:]
        if text:
            yield text, now


def write_results(results: dict[str, Any], out: str | Path, merge: bool = False) -> Path:
    """Write ``results`` with :func:`machine` and the load average at the end, as
    indented JSON; ``out`` a file name under ``bench/results/`` or a path. ``merge``:
    keep what the file holds that ``results`` does not replace (benches whose parts run
    on their own)."""
    path = Path(out) if Path(out).parent != Path() else RESULTS / out
    before = json.loads(path.read_text()) if merge and path.exists() else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {**before, **results, **machine(), "load_average_at_end": load_average()}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return path


# --------------------------------------------------------------------------- timing

def warm(path: str | Path) -> None:
    """Read a file once so that the side timed next finds it in the page cache (idle
    cache is reclaimed on this machine, and a cold read of the 636 MB flights file
    costs about 14 s)."""
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def timed(fn: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def best_of(fn: Callable[[], object], rounds: int = 3) -> float:
    """The fastest of ``rounds`` calls, in wall seconds: on a shared machine the others
    measure the neighbours too."""
    return min(timed(fn) for _ in range(rounds))


def median_of(fn: Callable[[], object], rounds: int = 3) -> float:
    """The median of ``rounds`` calls, in wall seconds, where a typical call is the
    question rather than the best one."""
    return statistics.median(timed(fn) for _ in range(rounds))


# --------------------------------------------------------------------------- data sets

def make_events(n: int, keys: int, seed: int = 7, kinds: int = 8,
                step_us: int = 1000) -> dict[str, np.ndarray]:
    """``n`` typed events as the input readers produce them (the table columns of
    ``cep.engine.table``): ``k`` uniform in ``[0, keys)``, ``ts`` ``step_us`` apart,
    ``v`` uniform in [0, 1) to 6 decimals (so its JSON text reads back exactly) and,
    with ``kinds``, ``kind`` uniform in ``[0, kinds)`` (for patterns)."""
    from cep.engine.table import SEQ, SUB

    rng = np.random.default_rng(seed)
    events = {SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
              "k": rng.integers(0, keys, n).astype(np.int64),
              "ts": np.arange(n, dtype=np.int64) * step_us,
              "v": np.round(rng.random(n), 6)}
    if kinds:
        events["kind"] = rng.integers(0, kinds, n).astype(np.int64)
    return events


EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00Z, where the readings' clock starts


def readings(sensors: np.ndarray, seed: int = 7, start: int = 0, step_ms: int = 1,
             mean: float = 25.0) -> pd.DataFrame:
    """Sensor readings for ``rules/sensor_average.epl``, one per id in ``sensors``
    (``s<id>``), numbered from ``start``, ``step_ms`` apart; temperatures around
    ``mean`` with every 97th sensor 6 degrees warmer (a few sensors' averages cross the
    rule's 30), ``ok`` 98% of the time."""
    rng = np.random.default_rng(seed)
    n = len(sensors)
    ms = EPOCH_MS + (start + np.arange(n, dtype=np.int64)) * step_ms
    return pd.DataFrame({
        "sensor": np.char.add("s", np.asarray(sensors).astype(str)),
        "ts": pd.to_datetime(ms, unit="ms", utc=True),
        "temp": np.round(rng.normal(mean, 4.0, n) + (np.asarray(sensors) % 97 == 0) * 6.0, 2),
        "ok": rng.random(n) < 0.98,
    })


def json_lines(frame: pd.DataFrame) -> bytes:
    """A frame's rows as JSON lines, timestamps ISO-8601 in ms (pandas' C writer: no
    per-row Python)."""
    return frame.to_json(orient="records", lines=True, date_format="iso",
                         date_unit="ms").encode()


def write_jsonl(frames: pd.DataFrame | list[pd.DataFrame], path: Path) -> Path:
    """Frames as one JSON-lines file, written under a hidden name and renamed into
    place, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as out:
        for frame in frames if isinstance(frames, list) else [frames]:
            out.write(json_lines(frame))
    os.replace(tmp, path)
    return path


def proc_stat(path: str | Path) -> tuple[str, int, float]:
    """(name, parent pid, CPU seconds user + system) of a process or thread, from its
    /proc ``stat`` file."""
    text = Path(path).read_text()
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_table() -> dict[int, tuple[str, int, float]]:
    """:func:`proc_stat` of every process running now, by pid (those that end while
    it is read are left out)."""
    table: dict[int, tuple[str, int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                table[int(entry)] = proc_stat(f"/proc/{entry}/stat")
            except (OSError, ValueError):
                continue
    return table


def root_of(pid: int, table: dict[int, tuple[str, int, float]], roots: Container[int]
            ) -> int | None:
    """The nearest of ``roots`` that ``pid`` is or descends from in ``table``, or None."""
    while pid in table and pid not in roots:
        pid = table[pid][1]
    return pid if pid in roots else None


class CpuMeter(threading.Thread):
    """CPU seconds of processes while they run: ``roots`` and all their descendants (a
    ``cep run`` with its JVM and Python workers), each under its label, from the first
    sample on (call :meth:`sample` once before starting the work). Samples /proc every
    ``every_s`` and keeps each process's last reading, so a process that ends before the
    meter stops counts up to its last sample."""

    def __init__(self, roots: dict[str, int], every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.roots, self.every_s = roots, every_s
        self.seen: dict[int, tuple[str, float]] = {}
        self.done = threading.Event()
        self.first: dict[int, float] = {}  # CPU at first sight (0 for a process born later)
        self.sampled = False

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            self.sample()

    def sample(self) -> None:
        table = process_table()
        labels = {pid: label for label, pid in self.roots.items()}
        for pid, (_name, _parent, cpu) in table.items():
            root = root_of(pid, table, labels)
            if root is not None:
                self.first.setdefault(pid, cpu if not self.sampled else 0.0)
                self.seen[pid] = (labels[root], cpu)
        self.sampled = True

    def stop(self) -> dict[str, float]:
        """CPU seconds per label since each process was first seen."""
        self.sample()
        self.done.set()
        self.join()
        totals = {label: 0.0 for label in self.roots}
        for pid, (label, cpu) in self.seen.items():
            totals[label] += cpu - self.first[pid]
        return {label: round(cpu, 2) for label, cpu in totals.items()}


def stop_gracefully(proc: subprocess.Popen, wait_s: float) -> None:
    """SIGTERM a ``cep run`` (it finishes its batch and commits, as Ctrl-C does), then
    SIGKILL it if it has not ended within ``wait_s``."""
    proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(wait_s)
    if proc.poll() is None:
        proc.kill()
