"""Does ``--engines auto`` follow a step in the input rate (issue 51)?

A writer appends events to a JSON-lines file that ``cep run --follow --engines auto:LO-HI``
follows, at a base rate, then four times that rate, then the base rate again (each step
``--step-seconds`` long). The engines are made engine-bound without burning the machine's
two cores: ``--slow-engine E:FACTOR`` on every engine makes each engine task sleep in
proportion to its own work, so an engine's capacity is a fraction of what it would be and
the Spark frame around the engines stays what it is. Per step the bench reports:

* the policy's changes (scale-out and scale-in requests applied) and the engine count the
  step ends at;
* whether the job kept up at the end of the step: the input records behind at the step's
  last batches against one batch's events;
* the batches' median wall time and the engines' busy share (the policy's ``w``).

Then the run's output is compared with the reference: the local runner
(``--runner local``, the in-process reference evaluator, which has no engines to scale)
over the same file, every output row, as sorted JSON (each input event gives exactly one
output row carrying its ``id``, so a row lost, doubled or computed from the wrong window
shows). The issue's target: the count settles at one that keeps up, at most two changes
per step, events equal.

    python bench/bench_autoscale_step.py [--rate 4000] [--step-seconds 60] [--slow 80]
        [--bounds 1-4] [--out autoscale_step.json]

Writes ``bench/results/autoscale_step.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from bench_latency import RULE, _default_signals, event_lines, file_sender, metrics_of
from common import load_average, stop_gracefully, write_results

from splitter.autoscale import observation

START_TIMEOUT_S = 180.0
TICK_S = 0.05


class StepWriter(threading.Thread):
    """Appends events at each ``(rate, seconds)`` step in turn and notes when each step
    began (seconds since the epoch) and how many events were written before it."""

    def __init__(self, steps: list[tuple[int, float]], send) -> None:
        super().__init__(daemon=True)
        self.steps, self.send = steps, send
        self.written = 0
        self.began: list[tuple[float, int]] = []

    def run(self) -> None:
        for rate, seconds in self.steps:
            start, first = time.time(), self.written
            self.began.append((start, first))
            total = first + int(rate * seconds)
            while self.written < total:
                due = min(total, first + int((time.time() - start) * rate) + 1)
                if due > self.written:
                    self.send(event_lines(self.written, due - self.written))
                    self.written = due
                time.sleep(TICK_S)


def behind(batch: dict) -> float | None:
    """The input lag the policy reads (``splitter.autoscale.observation``): records
    listed and not read, plus those that arrived after the listing."""
    return observation(batch, None).behind


def kept_up(lags: list[float | None], rate: int) -> bool:
    """Whether the job kept up at a step's end: at its last batches the input lag
    (listed and not read, plus arrived since) was at most two seconds of the step's
    input. A job that keeps up still has what arrived while a batch ran behind it at
    each commit (about a batch's wall time of input); one that falls behind has a lag
    that grows past any such bound."""
    return bool(lags) and all(lag is not None and lag <= 2 * rate for lag in lags)


def step_summary(batches: list[dict], start: float, end: float, rate: int) -> dict:
    """What the job did while one step's events were arriving (batches that committed
    between the step's start and its end)."""
    inside = [b for b in batches if start <= b.get("wall_time", 0) < end]
    changes = [b["autoscale"] for b in inside
               if (b.get("autoscale") or {}).get("action") in ("out", "in")]
    engines = [len(b.get("rows_per_engine", [])) for b in inside]
    walls = np.diff([b["wall_time"] for b in inside]) if len(inside) > 1 else np.array([])
    tail = inside[-3:]
    lag_end = [behind(b) for b in tail]
    events_end = [b.get("events_in", 0) for b in tail]
    w = [b["autoscale"]["load"] for b in inside
         if (b.get("autoscale") or {}).get("load") is not None]
    return {
        "rate": rate, "batches": len(inside),
        "decisions": [{k: c.get(k) for k in ("action", "target", "load", "pi", "reason")}
                      for c in changes],
        "changes": len(changes),
        "engines_start": engines[0] if engines else None,
        "engines_end": engines[-1] if engines else None,
        "engines_seen": sorted(set(engines)),
        "behind_at_end": lag_end,
        "events_per_batch_at_end": events_end,
        "kept_up": kept_up(lag_end, rate),
        "batch_wall_median_s": round(float(np.median(walls)), 3) if len(walls) else None,
        "w_median": round(float(np.median(w)), 3) if w else None,
    }


def changes_of(batches: list[dict], origin: float) -> list[dict]:
    """Every change of the engine count: when the policy decided it and when the batches
    ran at the new count (seconds since the first step began)."""
    out: list[dict] = []
    count = None
    for b in batches:
        engines = len(b.get("rows_per_engine", []))
        auto = b.get("autoscale") or {}
        if auto.get("action") in ("out", "in"):
            out.append({"action": auto["action"], "target": auto.get("target"),
                        "decided_s": round(b["wall_time"] - origin, 1),
                        "decided_batch": b["batch"], "reason": auto.get("reason")})
        if count is not None and engines and engines != count:
            pending = [c for c in out if "applied_s" not in c]
            if pending:
                pending[0].update(applied_s=round(b["wall_time"] - origin, 1),
                                  applied_batch=b["batch"], engines=[count, engines])
        count = engines or count
    return out


def normalized(path: Path) -> list[str]:
    """Output rows as canonical JSON, sorted: the comparison is of the multiset. ``seq``
    is left out: it numbers an input event by its place in what the runner read (Spark
    packs the file and the offset into it, the local runner counts lines), not by what
    the event is; the ``id`` in every row names the event."""
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return sorted(json.dumps({k: v for k, v in r.items() if k != "seq"}, sort_keys=True)
                  for r in rows)


def lines_in(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def reference_rows(events: Path, workdir: Path) -> list[str]:
    out = workdir / "reference.jsonl"
    subprocess.run([sys.executable, "-m", "cep.cli", "run", str(RULE), "--input",
                    str(events), "--runner", "local", "--output", str(out), "--quiet"],
                   check=True)
    return normalized(out)


def run(args: argparse.Namespace, workdir: Path) -> dict:
    lo, hi = (int(x) for x in args.bounds.split("-"))
    source, output = workdir / "events.jsonl", workdir / "out.jsonl"
    metrics = workdir / "metrics.jsonl"
    source.touch()
    send = file_sender(source)
    slow = [a for e in range(hi) for a in ("--slow-engine", f"{e}:{args.slow}")]
    command = [sys.executable, "-m", "cep.cli", "run", str(RULE), "--input", str(source),
               "--follow", "--output", str(output), "--checkpoint", str(workdir / "run"),
               "--metrics", str(metrics), "--engines", f"auto:{lo}-{hi}",
               "--strategy", args.strategy, "--quiet", *slow]
    print(" ".join(command[3:]), flush=True)
    # the last step is twice as long: a scale-in waits for the lag to drain, three
    # batches under v and the cool-down after the scale-out
    steps = [(args.rate, args.step_seconds), (4 * args.rate, args.step_seconds),
             (args.rate, 2 * args.step_seconds)]
    writer = StepWriter(steps, send)
    log = workdir / "cep.log"
    started = time.time()
    with open(log, "wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=_default_signals)
    try:
        send(event_lines(0, 1))  # a first event; its output tells when the job runs
        writer.written = 1
        while not output.exists() or not output.stat().st_size:
            if proc.poll() is not None or time.time() - started > START_TIMEOUT_S:
                raise RuntimeError("no first output: " + log.read_text(errors="replace")
                                   [-1500:])
            time.sleep(0.1)
        writer.start()
        while writer.is_alive():
            writer.join(10)
            done = metrics_of(metrics)
            last = done[-1] if done else {}
            print(f"  {time.time() - started:5.0f} s: {writer.written:,} written, "
                  f"batch {last.get('batch')}, engines "
                  f"{len(last.get('rows_per_engine', []))}, behind {behind(last)}, "
                  f"load {load_average()[0]}", flush=True)
        ended = time.time()
        deadline = ended + args.drain_seconds
        # let the job read what is left: every event gives one output row
        while time.time() < deadline and lines_in(output) < writer.written:
            time.sleep(1)
    finally:
        stop_gracefully(proc, 120)
    batches = metrics_of(metrics)
    origin = writer.began[0][0]
    bounds = [t for t, _ in writer.began] + [ended]
    summary = [step_summary(batches, bounds[i], bounds[i + 1], rate)
               for i, (rate, _) in enumerate(steps)]
    got, want = normalized(output), reference_rows(source, workdir)
    return {
        "rule": str(RULE.name), "strategy": args.strategy, "bounds": [lo, hi],
        "slow_engine_factor": args.slow, "step_seconds": args.step_seconds,
        "rates": [r for r, _ in steps], "events": writer.written,
        "step_starts_s": [round(t - origin, 1) for t in bounds],
        "changes": changes_of(batches, origin),
        "steps": summary, "batches": len(batches),
        "engines_per_batch": [len(b.get("rows_per_engine", [])) for b in batches],
        "output_rows": len(got), "reference_rows": len(want),
        "events_equal_reference": got == want,
        "returncode": proc.returncode, "load_average": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=4000, help="base rate, events/s")
    parser.add_argument("--step-seconds", type=float, default=60.0)
    parser.add_argument("--slow", type=float, default=80.0,
                        help="--slow-engine factor on every engine")
    parser.add_argument("--bounds", default="1-4")
    parser.add_argument("--strategy", default="dlb-l")
    parser.add_argument("--drain-seconds", type=float, default=60.0)
    parser.add_argument("--out", default="autoscale_step.json")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and keep it")
    args = parser.parse_args()
    if args.keep:
        Path(args.keep).mkdir(parents=True)
        result = run(args, Path(args.keep))
    else:
        with tempfile.TemporaryDirectory(prefix="cep-bench-autoscale-") as tmp:
            result = run(args, Path(tmp))
    for change in result["changes"]:
        print(f"{change['action']} to {change['target']}: decided at "
              f"{change['decided_s']} s, applied at {change.get('applied_s')} s")
    print(f"steps began at {result['step_starts_s']} s")
    for i, step in enumerate(result["steps"]):
        print(f"step {i} at {step['rate']}/s: {step['changes']} change(s) "
              f"{[(d['action'], d['target']) for d in step['decisions']]}, engines "
              f"{step['engines_start']}→{step['engines_end']}, kept up {step['kept_up']}, "
              f"w {step['w_median']}, batch {step['batch_wall_median_s']} s")
    print(f"events equal the reference: {result['events_equal_reference']} "
          f"({result['output_rows']:,} rows against {result['reference_rows']:,})")
    write_results(result, args.out)


if __name__ == "__main__":
    main()
