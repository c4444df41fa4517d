"""Engine state: the data-only codec against pickle, on the same engine in one process.

Every micro-batch each engine restores its state and snapshots it again, so both
directions are on the hot path. Two realistic states are measured:

* ``fsd``: ``rules/fsd.epl`` run over ``tweets:n=N`` (default 200 000) in 50 000-event
  batches by the reference engine: the join's window rows (int keys, term rows as
  ``bytes``, float norms, int64 columns), ~20 MB.
* ``pattern``: ``every a=S(kind = 1) -> b=S(kind = 2 AND v > a.v) WITHIN 1 hour``
  over N events of 2 000 keys: per-key partial matches (nested lists, dicts and
  ``Event`` tuples), the codec's generic, element-wise part.

For each: best of 9 interleaved rounds of ``Engine.snapshot`` + ``Engine.restore`` with
the codec, and of ``pickle.dumps`` + ``pickle.loads`` (protocol 5) of the same snapshot
value, plus blob sizes. Prints the figures and writes ``bench/results/state.json``.

Run: ``python bench/bench_state.py [--n 200000]``.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable

from common import RULES, make_events, timed, write_results

from cep.engine.engine import Engine
from cep.engine.table import SEQ, take
from cep.io.inputs import load_inputs
from cep.reference import batch_bounds, batch_watermarks, input_watermark, run_batch
from grammar import ir
from grammar.compile import compile_file, compile_text

PATTERN = ("CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
           "SELECT a.v AS av, b.v AS bv FROM PATTERN [every a=S(kind = 1) -> "
           "b=S(kind = 2 AND v > a.v) WITHIN 1 hour] PARTITION BY k;")


def run(module: ir.CompiledModule, inputs: dict, batch: int) -> Engine:
    engine = Engine(module)
    bounds = batch_bounds(inputs, batch)
    clocks = batch_watermarks(input_watermark(module, inputs), bounds)
    for (lo, hi), clock in zip(bounds, clocks, strict=True):
        run_batch(module, engine, {n: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi))
                                   for n, t in inputs.items()}, clock)
    return engine


def fsd_engine(n: int) -> Engine:
    module = compile_file(RULES / "fsd.epl")
    return run(module, load_inputs(module, [f"tweets:n={n}"], None).tables, 50_000)


def pattern_engine(n: int) -> Engine:
    inputs = {"S": make_events(n, 2_000, seed=0, kinds=3, step_us=10_000)}
    return run(compile_text(PATTERN, "pattern"), inputs, 50_000)


def measure(engine: Engine, rounds: int = 9) -> dict[str, float]:
    """Best time of each step over ``rounds`` rounds that interleave codec and pickle, so
    both see the same load (the machine is shared)."""
    blob = engine.snapshot()
    value = {"rules": list(engine.rule_order),
             "parts": [op.snapshot() for _, op in engine.operators]}
    pickled = pickle.dumps(value, protocol=5)
    fresh = Engine(engine.module)
    steps: dict[str, Callable[[], object]] = {
        "codec_snapshot_s": engine.snapshot,
        "codec_restore_s": lambda: fresh.restore(blob),
        "pickle_dumps_s": lambda: pickle.dumps(value, protocol=5),
        "pickle_loads_s": lambda: pickle.loads(pickled),
    }
    out = dict.fromkeys(steps, float("inf"))
    for _ in range(rounds):
        for name, step in steps.items():
            out[name] = min(out[name], timed(step))
    out["codec_total_s"] = out["codec_snapshot_s"] + out["codec_restore_s"]
    out["pickle_total_s"] = out["pickle_dumps_s"] + out["pickle_loads_s"]
    return {**out, "codec_bytes": len(blob), "pickle_bytes": len(pickled)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    results = {"n": args.n,
               "fsd": measure(fsd_engine(args.n)), "pattern": measure(pattern_engine(args.n))}
    for name in ("fsd", "pattern"):
        r = results[name]
        print(f"{name:8s} codec {r['codec_snapshot_s'] * 1e3:7.1f} + "
              f"{r['codec_restore_s'] * 1e3:7.1f} ms = {r['codec_total_s'] * 1e3:7.1f} ms "
              f"{r['codec_bytes'] / 1e6:6.1f} MB | pickle {r['pickle_dumps_s'] * 1e3:7.1f} + "
              f"{r['pickle_loads_s'] * 1e3:7.1f} ms = {r['pickle_total_s'] * 1e3:7.1f} ms "
              f"{r['pickle_bytes'] / 1e6:6.1f} MB")
    write_results(results, "state.json")


if __name__ == "__main__":
    main()
