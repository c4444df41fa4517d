"""``foreachBatch``: after each micro-batch, metrics, the Balancer, delivery, progress.

What reaches the driver is one small stats row per engine (the engines have written the
batch's events themselves). From them this builds the batch's metrics (with the run's
settings, so ``cep report`` can draw what the run used), runs the hooks (the Balancer
decides the key map two batches on), delivers the batch where the user asked (a file or
standard output gets the engines' parts merged in reference order; a directory already
has them), appends the batch's dead letters to the dead-letter file, and prints a
progress line. Everything a replayed batch writes replaces what its first attempt wrote
(``metrics/batch-<b>.json``, the append ledgers), so a crash never doubles anything.

The batch DataFrame is collected exactly once: touching it twice would run the stateful
engines twice. When an engine task fails (MongoDB gone, say), pyspark's ``toPandas``
warns with the worker's whole traceback before raising; the warning is silenced here
because the raised error already carries the one line the user needs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cep.io.deadletter_summary import DeadLetterSummary
from cep.spark.output.delivery import AppendLedger, merge_parts
from cep.spark.output.event_parts import EventParts, order_path
from cep.spark.output.latest import merge_latest
from cep.spark.output.udf_seen import SeenFailures
from cep.transports.outputs import Publisher
from splitter.policies.stats import rstd

BatchHook = Callable[[int, list[dict], dict], None]
# a callback that gets each batch's events (JSON lines text in reference order)
EventCallback = Callable[[int, bytes], None]


@dataclass
class Progress:
    """One line per batch on stderr: batch, events done, rate, outputs, engine loads."""

    expected_events: int | None = None  # a bounded input's (estimated) size
    enabled: bool = True
    done: int = 0  # on a restart: the events of the batches committed before it
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self._done_before = self.done  # not processed by this process: not in its rate

    def update(self, metrics: dict) -> None:
        self.done += metrics["events_in"]
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.started
        rate = (self.done - self._done_before) / elapsed if elapsed else 0.0
        line = progress_line(metrics, self.done, self.expected_events, rate)
        if sys.stderr.isatty():  # rewritten in place: pad over the longer line before
            print(line.ljust(100), end="\r", file=sys.stderr, flush=True)
        else:  # a file or a pipe keeps every line: no padding
            print(line, file=sys.stderr, flush=True)


def progress_line(metrics: dict, done: int, expected: int | None, rate: float) -> str:
    """A batch's progress line. ``done``: the events read so far, of about ``expected``
    (an estimate: under 100% until the input is read); ``rate``: events per second.

    The batch in which a bounded input ends reads no event: all event time passes in it,
    and what it outputs is what that fired (``#time_batch`` buckets, ``OUTPUT ... EVERY``
    intervals, timers, patterns' deadlines). Its line says so, and not the RSTD and
    engine loads of a batch of no events."""
    out = f"{metrics['events_out']:,} out"
    if metrics.get("input_ended") and not metrics["events_in"]:
        return (f"batch {metrics['batch']}: end of the input, all event time passed: "
                f"{out}; {done:,} events (100%), {rate:,.0f} ev/s")
    if metrics.get("input_ended"):
        share = " (100%)"
    else:
        share = f" (~{min(99, 100 * done // max(1, expected))}%)" if expected else ""
    loads = " ".join(f"{x:,}" for x in metrics["rows_per_engine"])
    return (f"batch {metrics['batch']}: {done:,} events{share}, {rate:,.0f} ev/s, {out}, "
            f"RSTD {metrics['rstd']:.1f}%, engines [{loads}]")


@dataclass
class Delivery:
    """Where a batch's events and dead letters go once the engines have written them.

    ``events_file``: one JSON-lines file (appended per batch, exactly once);
    ``publisher``: a Kafka topic or MongoDB collection (``cep.transports.outputs``,
    exactly once per batch id); ``stdout``: printed per batch; ``callback``: handed to
    Python code; none of these: the parts directory is the output. ``dead_file``: the
    dead-letter file. ``lag``: an INSERT INTO chain's later stages, whose last finishes
    the events of batch b's records in batch b + lag (``chain_stages.py``), so batch B delivers
    the parts of batch B - lag."""

    parts: EventParts
    rule_order: dict[str, int]
    workdir: Path
    events_file: Path | None = None
    stdout: bool = False
    callback: EventCallback | None = None
    publisher: Publisher | None = None
    dead_file: Path | None = None
    metrics_file: Path | None = None
    transient_parts: bool = False  # parts live in the workdir only to be delivered
    lag: int = 0

    def __post_init__(self) -> None:
        ledgers = self.workdir / "ledgers"
        self._events = (AppendLedger(self.events_file, ledgers / "events.json")
                        if self.events_file else None)
        self._dead = (AppendLedger(self.dead_file, ledgers / "dead.json")
                      if self.dead_file else None)
        self._metrics = (AppendLedger(self.metrics_file, ledgers / "metrics.json")
                         if self.metrics_file else None)
        self._udf_seen = SeenFailures(ledgers / "udf-seen")

    def events(self, batch: int) -> None:
        if batch < self.lag or not (self._events or self.stdout or self.callback
                                    or self.publisher):
            return
        paths = self.parts.batch_paths(batch - self.lag)
        merged = merge_parts(paths, self.rule_order, with_keys=self.publisher is not None)
        text = merged.text
        if self._events is not None:
            self._events.append(batch, [text])
        if self.stdout and text:
            sys.stdout.buffer.write(text)
            sys.stdout.flush()
        if self.callback is not None:
            self.callback(batch, text)
        if self.publisher is not None:
            self.publisher.publish(batch, text, merged.keys)
        if self.transient_parts:
            for path in paths:
                path.unlink(missing_ok=True)
                order_path(path).unlink(missing_ok=True)

    def dead_letters(self, batch: int) -> dict:
        """Append the batch's dead letters to the dead-letter file; returns their
        counts by kind and latest reasons for the batch's metrics (one file in memory
        at a time, as before)."""
        folder = self.workdir / "dead" / f"batch-{batch:07d}"
        summary = DeadLetterSummary()
        files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        chunks = (summary.observe(self._udf_seen.filter(batch, f.read_bytes()))
                  for f in files)
        if self._dead is not None:
            self._dead.append(batch, chunks)
        else:
            for _ in chunks:
                pass
        shutil.rmtree(folder, ignore_errors=True)
        return summary.metrics()

    def metrics(self, batch: int, metrics: dict) -> None:
        if self._metrics is not None:
            self._metrics.append(batch, [(json.dumps(metrics) + "\n").encode("utf-8")])


class BatchSink:
    """The ``foreachBatch`` function of a cep query."""

    def __init__(self, workdir: Path, n_engines: int, settings: dict, delivery: Delivery,
                 progress: Progress, hooks: list[BatchHook] | None = None) -> None:
        self.metrics_dir = workdir / "metrics"
        self.metrics_dir.mkdir(parents=True, exist_ok=True)
        self.n_engines = n_engines
        self.settings = settings
        self.delivery = delivery
        self.progress = progress
        self.hooks = hooks or []
        self.totals: dict[str, int] = {}  # events, outputs, dead letters of this process

    def __call__(self, batch_df, batch_id: int) -> None:
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="toPandas attempted Arrow optimization")
            stats = [json.loads(s) for s in batch_df.toPandas()["stats"].tolist()]
        collected = time.perf_counter()
        metrics = self._metrics(batch_id, stats, started)
        for hook in self.hooks:
            hook(batch_id, stats, metrics)
        self.delivery.events(batch_id)
        metrics.update(self.delivery.dead_letters(batch_id))
        # records on which a user function raised: written by the tasks that ran it
        metrics["udf_failures"] = metrics.get("dead_letter_kinds", {}).get("udf_error", 0)
        metrics["write_s"] = round(time.perf_counter() - collected, 4)
        _write_atomically(self.metrics_dir / f"batch-{batch_id:07d}.json",
                          json.dumps(metrics) + "\n")
        self.delivery.metrics(batch_id, metrics)
        for name in ("events_in", "events_out", "dead_lettered", "blank_lines", "late_events",
                     "udf_failures"):
            self.totals[name] = self.totals.get(name, 0) + metrics[name]
        self.progress.update(metrics)

    def _metrics(self, batch_id: int, stats: list[dict], started: float) -> dict:
        # the engines that ran the batch: those of its key map, which a scale change
        # makes more or fewer than the run started with
        n = max((info["engine"] + 1 for info in stats), default=self.n_engines)
        rows = np.zeros(n, dtype=np.int64)
        busy = np.zeros(n)
        cpu = np.zeros(n)
        moved = {"imported_keys": 0, "exported_keys": 0, "exported_bytes": 0}
        counts = {"dead": 0, "blank": 0, "truth": 0}
        # where the engines came from (resident.py) and the log entries they read
        restored = {"resident": 0, "caught_up": 0, "rebuilt": 0, "new": 0, "log_entries": 0}
        held = {"keys_held": 0, "state_bytes": 0, "late_events": 0,  # summed over engines
                "timer_keys": 0}
        watermark = None  # stage 0's engines all reach the same one
        saved = {"base": 0, "delta": 0}  # the blobs the engines wrote
        stages: dict[str, float] = {}  # seconds per stage, summed over engines
        outputs: dict[str, list[int]] = {}
        chained: dict[str, int] = {}  # events of later stages, per stage
        heaviest = 0  # the most rows one key had: no placement splits a key
        for info in stats:
            engine = info["engine"]
            if not info.get("stage", 0):
                heaviest = max(heaviest, max(info.get("key_load", {}).values(), default=0))
            if info.get("stage", 0):
                stage = str(info["stage"])
                chained[stage] = chained.get(stage, 0) + info["rows"]
            else:
                rows[engine] += info["rows"]
            busy[engine] += info["busy_s"]
            cpu[engine] += info.get("cpu_s", 0.0)
            for stage, seconds in info.get("stages", {}).items():
                stages[stage] = stages.get(stage, 0.0) + seconds
            for name in moved:
                moved[name] += info.get(name, 0)
            for name in counts:
                counts[name] += info.get(name, 0)
            for name, n in info.get("restored", {}).items():
                restored[name] += n
            for name in held:
                held[name] += info.get(name, 0)
            if not info.get("stage", 0) and "watermark" in info:
                watermark = info["watermark"]
            if "saved" in info:
                saved[info["saved"]] += 1
            for rule, (n, hits) in info.get("outputs", {}).items():
                total = outputs.setdefault(rule, [0, 0])
                total[0] += n
                total[1] += hits
        return {
            **moved,
            "batch": batch_id,
            "input_ended": any(bool(info.get("input_ended")) for info in stats),
            "settings": self.settings,
            "events_in": int(rows.sum()),
            **({"chain_events_in": chained} if chained else {}),
            "events_out": sum(n for n, _ in outputs.values()),
            "outputs_per_rule": {rule: n for rule, (n, _) in outputs.items()},
            "first_stories": {"truth": counts["truth"],
                              "hits": {rule: h for rule, (_, h) in outputs.items()}},
            "dead_lettered": counts["dead"],
            "blank_lines": counts["blank"],
            "rows_per_engine": rows.tolist(),
            "heaviest_key_rows": int(heaviest),
            "busy_s_per_engine": [round(b, 4) for b in busy.tolist()],
            "cpu_s_per_engine": [round(c, 4) for c in cpu.tolist()],
            "stage_s": {k: round(v, 4) for k, v in stages.items()},
            "keys_restored": restored,
            **held,
            **({"watermark": watermark} if watermark is not None else {}),
            "state_saved": saved,
            "rstd": round(rstd(rows.astype(float)), 3),
            "latest_events": merge_latest(stats),
            "sink_s": round(time.perf_counter() - started, 4),
            "wall_time": time.time(),
        }


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
