"""First Story Detection at the DLB paper's scale, on Spark: throughput, balance, makespan.

Runs ``cep verify`` (the same code as ``cep bench``) on the built-in ``tweets`` workload for
each strategy and prints, per strategy: tweets/s end to end (the whole ``cep.run.run``
call: session, every batch; executors generate their own ranges of the tweets, so
nothing passes through the driver), first stories and equality with KG, avg RSTD, keys
moved, the projected makespan (Σ over batches of the busiest engine's seconds,
in wall seconds and in CPU seconds: on a 2-core machine the engines share the cores
with the JVM, which inflates wall busy times at random), and where the time went (task
seconds per stage, wall seconds per phase). With ``--mode zipf-periodic`` the makespan
is also given for the batches that lie inside the Zipf 1.5 phases (a batch belongs to
the phase in force for most of its tweets; a generator's micro-batch is exactly
``--batch-size`` rows, so this bench regenerates each batch's timestamps to tell).
A small unmeasured KG run comes first, so every strategy meets a started session with
warm Python workers.

Targets (issue 5): ≥ 25,000 tweets/s under KG and DLB; DLB ≥ 0.95× KG on ``default``;
DLB's makespan in the 1.5 phase ≥ 1.3× better than KG's.

Run: ``python bench/bench_fsd.py --n 2950000 --mode default --strategies kg,dlb-h``.
Writes ``bench/results/fsd-<mode>-<n>-batch<batch size>[-engines<N>].json`` (engines
named when not 5), so runs with other batch sizes keep their own files.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import asdict

from common import RESULTS, RULES, write_results

from cep.bench import format_bench
from cep.io.tweets.zipf_periodic import batch_exponents
from cep.run import run
from cep.run_config import Output, RunConfig
from cep.verify import StrategyResult, verify
from grammar import ir
from grammar.compile import compile_file


def summarise(results: list[StrategyResult], exponents: list[float]) -> dict[str, dict]:
    """Per strategy: rate (and vs KG), equality with KG, and the projected makespan, in
    wall and in CPU seconds, over the whole run and over the Zipf 1.5 batches, with each
    one's gain over KG (KG's makespan / the strategy's)."""
    def steep(values: list[float]) -> float:
        return round(sum(v for v, e in zip(values, exponents, strict=False) if e == 1.5), 3)

    summary = {r.strategy: {
        "tweets_per_s": r.events_per_s,
        "equal_to_kg": r.equal_to_kg,
        "makespan_s": r.makespan_s,
        "makespan_cpu_s": r.makespan_cpu_s,
        "makespan_zipf_1_5_s": steep(r.batch_makespan_s),
        "makespan_cpu_zipf_1_5_s": steep(r.batch_makespan_cpu_s),
    } for r in results}
    kg = summary.get("kg")
    if kg is None:
        return summary
    for row in summary.values():
        row["rate_vs_kg"] = round(row["tweets_per_s"] / kg["tweets_per_s"], 3)
        for name in ("makespan_s", "makespan_cpu_s", "makespan_zipf_1_5_s",
                     "makespan_cpu_zipf_1_5_s"):
            row[f"gain_{name[:-2]}"] = round(kg[name] / row[name], 3) if row[name] else None
    return summary


def warm_up(module: ir.CompiledModule, n: int, master: str, engines: int) -> float:
    """Run KG on ``n`` tweets, unmeasured: starts the session and the Python workers."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-fsd-warm-") as out:
        run(module, RunConfig({"Tweet": f"tweets:n={n},seed=1"}, output=Output(out),
                              engines=engines, master=master, progress=False))
    seconds = time.perf_counter() - started
    print(f"warm-up: {n:,} tweets in {seconds:.1f}s (session start included)", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_950_000)
    parser.add_argument("--mode", default="default", choices=["default", "zipf-periodic"])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--strategies", default="kg,dlb-h,dlb-l")
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--threshold", type=float, default=15.0)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--engines", type=int, default=5,
                        help="CEP engines (the paper: 5); balance can only buy throughput "
                             "when the engines' tasks share the cores evenly, such as 4 "
                             "engines on 2 cores")
    parser.add_argument("--out", default=None)
    parser.add_argument("--warm-up", type=int, default=20_000, metavar="N",
                        help="tweets of an unmeasured KG run first, so every strategy "
                             "meets a started Spark session with warm Python workers "
                             "(0: none, and the first strategy pays the start)")
    args = parser.parse_args()

    module = compile_file(RULES / "fsd.epl")
    spec = f"tweets:n={args.n},mode={args.mode},seed={args.seed}"
    strategies = [s for s in args.strategies.split(",") if s]
    warm_up_s = (warm_up(module, args.warm_up, args.master, args.engines) if args.warm_up
                 else 0.0)
    results = verify(module, RunConfig({"Tweet": spec}, engines=args.engines,
                                       batch_size=args.batch_size, master=args.master,
                                       threshold=args.threshold), strategies)
    # the Zipf phases exist only in zipf-periodic mode
    exponents = (batch_exponents(spec, args.batch_size) if args.mode == "zipf-periodic"
                 else [])
    print(format_bench(results, args.mode, exponents))
    summary = summarise(results, exponents)
    for name, row in summary.items():
        print(f"{name:>6}: " + ", ".join(f"{k} {v}" for k, v in row.items()))

    engines = "" if args.engines == 5 else f"-engines{args.engines}"
    name = f"fsd-{args.mode}-{args.n}-batch{args.batch_size}{engines}.json"
    write_results({
        "tweets": args.n, "mode": args.mode, "seed": args.seed,
        "batch_size": args.batch_size, "threshold": args.threshold, "master": args.master,
        "engines": args.engines, "warm_up_tweets": args.warm_up,
        "warm_up_s": round(warm_up_s, 2), "batch_exponents": exponents,
        "summary": summary, "strategies": [asdict(r) for r in results],
    }, args.out or RESULTS / name)


if __name__ == "__main__":
    main()
