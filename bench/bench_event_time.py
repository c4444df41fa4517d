"""Event time on the reference evaluator (docs/semantics-event-time.md), one core:

1. **Churn**: users come and go, each active for about three minutes of a long stream
   (300k users over the run by default), under a per-user ``#time(5 min)`` rule. Per
   batch: the keys the engine holds, its state's bytes and the batch's seconds. All
   three should be flat once the run is past its longest window: the keys held are the
   users of the last few minutes, not every user seen (and none once the input has
   ended: all time passes, and every window empties).
2. **Timers**: events/s of an absence pattern per key (``timer:interval``, a timer per
   key) against the same rule waiting for a second event instead (no timer).

Events are built in memory (typed columns, as the readers produce them), so the figures
are the evaluator's own. Writes bench/results/event_time.json.

    python bench/bench_event_time.py [--events 1000000] [--users 300000] [--hours 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from common import make_events, write_results

from cep.engine.table import SEQ, SUB
from cep.reference import reference_run
from grammar.compile import compile_text

CHURN_RULE = """CREATE SCHEMA Visit (user long, ts timestamp, v double) TIMESTAMP ts;
@Name('recent') SELECT user, count(*) AS n FROM Visit#groupwin(user)#time(5 min)
HAVING count(*) > 1000;"""

SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
TIMER_RULES = {
    "absence (timer per key)": SCHEMA + """@Name('silent') SELECT a.k AS k
        FROM PATTERN [every a=S -> (timer:interval(10 sec) and not b=S)] PARTITION BY k;""",
    "follow-up (no timer)": SCHEMA + """@Name('next') SELECT a.k AS k
        FROM PATTERN [every a=S -> b=S] PARTITION BY k;""",
}


def churn_events(n: int, users: int, step_us: int, seed: int = 7) -> dict[str, np.ndarray]:
    """``n`` visits ``step_us`` apart; the stream is cut into slots of three minutes,
    each with its own users (``users`` over the whole run), each visit by one of them."""
    rng = np.random.default_rng(seed)
    ts = np.arange(n, dtype=np.int64) * step_us
    slot = ts // 180_000_000
    slots = int(slot[-1]) + 1
    per_slot = max(1, users // slots)
    return {SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
            "user": slot * per_slot + rng.integers(0, per_slot, n),
            "ts": ts, "v": np.round(rng.random(n), 6)}


def churn(n: int, users: int, hours: float, batch_size: int) -> dict:
    """Keys held, state bytes and seconds per batch over ``hours`` of churn stream."""
    module = compile_text(CHURN_RULE, "churn")
    step_us = int(hours * 3600e6) // n
    events = churn_events(n, users, step_us)
    started = time.perf_counter()
    run = reference_run(module, {"Visit": events}, batch_size=batch_size, figures=True)
    seconds = time.perf_counter() - started
    batches = [{k: b[k] for k in ("batch", "events_in", "keys_held", "state_bytes",
                                  "seconds")} for b in run.batches]
    seen = len(np.unique(events["user"]))
    for b in [*batches[:-1:max(1, len(batches) // 10)], batches[-1]]:
        print(f"  batch {b['batch']:3}: keys held {b['keys_held']:7,} of {seen:,} seen, "
              f"state {b['state_bytes'] / 1e6:6.2f} MB, {b['seconds']:.3f} s")
    return {"events": n, "users_seen": seen, "batch_size": batch_size,
            "stream_minutes": round(n * step_us / 60e6, 1), "seconds": round(seconds, 2),
            "events_per_s": round(n / seconds), "batches": batches,
            "keys_held_max": max(b["keys_held"] for b in batches),
            "keys_held_median": int(np.median([b["keys_held"] for b in batches])),
            "keys_held_at_end": batches[-1]["keys_held"]}


def timers(n: int, keys: int, batch_size: int) -> dict:
    """Events/s of each of TIMER_RULES over the same events."""
    events = make_events(n, keys, step_us=1_000)
    out = {}
    for name, text in TIMER_RULES.items():
        module = compile_text(text, name)
        started = time.perf_counter()
        run = reference_run(module, {"S": events}, batch_size=batch_size)
        seconds = time.perf_counter() - started
        out[name] = {"seconds": round(seconds, 2), "events_per_s": round(n / seconds),
                     "rows_out": len(run.output["seq"])}
        print(f"  {name:26} {n / seconds:10,.0f} events/s, {out[name]['rows_out']:,} rows")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=300_000)
    parser.add_argument("--hours", type=float, default=10.0, help="of event time")
    parser.add_argument("--timer-events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=100_000)
    args = parser.parse_args()
    print(f"churn: {args.events:,} events, {args.users:,} users over {args.hours} h, "
          "#time(5 min)")
    results = {"churn": churn(args.events, args.users, args.hours, args.batch_size)}
    print(f"timers: {args.timer_events:,} events over {args.keys:,} keys")
    results["timers"] = timers(args.timer_events, args.keys, args.batch_size)
    write_results(results, "event_time.json")


if __name__ == "__main__":
    main()
