"""Every published balancer on the DLB paper's workload, in the trace simulator (no Spark).

    python bench/bench_balancers.py [--events 2950000] [--window 10000] [--seed 0]

Prints tables and writes ``bench/results/balancers.json``:

* quality and cost of kg, dlb-h, dlb-l, lptf, pkg, elb, clb and milp on the periodic-Zipf
  trace (4096 keys, Zipf 0.2 for 5 "minutes" then 1.5 for 10, 5 engines, θ = 15%, FSD state
  of H = 500 events per key), next to the key-preserving RSTD lower bound;
* the MILP's solver time at 4096 keys (one window of 10,000 events) and at 1M keys (10M
  events, key groups), with HiGHS's own time from the ``splitter.policies.milp`` debug log;
* heterogeneous engines: engine 2 needs 3x the busy time per event; busy makespan and the slow
  engine's load with equal shares and with measured capacity shares.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

import numpy as np
from common import write_results

from migration.hashing import kg_engine
from splitter.policies.base import LoadSnapshot
from splitter.policies.milp import milp
from splitter.policies.simulate import (
    PAPER_RATE,
    periodic_zipf_trace,
    run_trace,
    simulate,
    zipf_probabilities,
)
from splitter.policies.stats import imbalance, rstd_lower_bound

STRATEGY_NAMES = ("kg", "dlb-h", "dlb-l", "lptf", "pkg", "elb", "clb", "milp")
MOVING = ("dlb-h", "dlb-l", "lptf", "elb", "clb", "milp")
N_KEYS, N_ENGINES, THETA, H = 4096, 5, 15.0, 500
SLOW_ENGINE, SLOWDOWN = 2, 3.0


class MilpLog(logging.Handler):
    """Collects the ``splitter.policies.milp`` records: solve times (debug) and fallbacks
    (warnings)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.solved: list[float] = []
        self.fallbacks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.fallbacks.append(record.getMessage())
        else:
            self.solved.append(float(record.args[-1]))

    def reset(self) -> None:
        self.solved, self.fallbacks = [], []


def milp_summary(log: MilpLog) -> dict[str, float]:
    solved = log.solved or [0.0]
    return {"milp_solved": len(log.solved), "milp_fallbacks": len(log.fallbacks),
            "milp_solve_s_median": statistics.median(solved), "milp_solve_s_max": max(solved)}


def trace_rows(trace: np.ndarray, window: int, seed: int, log: MilpLog) -> dict[str, dict]:
    """Simulate every strategy (:func:`~splitter.policies.simulate.run_trace`), adding the keys
    moved, the worst window's bound and, for milp, its solver log."""
    rows: dict[str, dict] = {}
    log.reset()  # only milp logs to it
    for name, result, row in run_trace(trace, STRATEGY_NAMES, n_engines=N_ENGINES,
                                       window=window, threshold=THETA, H=H, seed=seed):
        row["keys_moved"] = float(result.keys_moved.sum())
        row["max_rstd_lower_bound"] = float(result.rstd_lower_bound.max())
        if name == "milp":
            row.update(milp_summary(log))
        rows[name] = row
        print(f"  {name}: {row['sim_seconds']:.1f} s", flush=True)
    return rows


def time_milp(n_keys: int, n_events: int, exponent: float, repeats: int, seed: int,
              log: MilpLog) -> dict[str, float]:
    """One MILP decision from the KG map on Zipf counts, ``repeats`` samples (θ = 0, so every
    sample is solved even where KG is already within 15%)."""
    rng = np.random.default_rng(seed)
    key_map = kg_engine(np.arange(n_keys), N_ENGINES)
    p = zipf_probabilities(n_keys, exponent)
    totals, solver, moved, before, after, bound = [], [], [], [], [], []
    log.reset()
    for _ in range(repeats):
        load = rng.multinomial(n_events, p).astype(np.float64)
        solved = len(log.solved)
        tic = time.perf_counter()
        out = milp(LoadSnapshot(load, key_map, N_ENGINES, threshold=0.0))  # always solve
        totals.append(time.perf_counter() - tic)
        solver.extend(log.solved[solved:])
        moved.append(int(np.count_nonzero(out != key_map)))
        before.append(imbalance(load, key_map, N_ENGINES))
        after.append(imbalance(load, out, N_ENGINES))
        bound.append(rstd_lower_bound(load, N_ENGINES))
    return {
        "keys": n_keys, "events": n_events, "zipf": exponent, "repeats": repeats,
        "decision_s_median": statistics.median(totals), "decision_s_max": max(totals),
        "solver_s_median": statistics.median(solver) if solver else float("nan"),
        "solver_s_max": max(solver) if solver else float("nan"),
        "fallbacks": len(log.fallbacks), "keys_moved_median": statistics.median(moved),
        "rstd_before": statistics.median(before), "rstd_after": statistics.median(after),
        "rstd_lower_bound": statistics.median(bound),
    }


def heterogeneous(trace: np.ndarray, window: int) -> dict[str, dict[str, float]]:
    """Engine SLOW_ENGINE needs SLOWDOWN x the busy time per event: equal vs measured shares."""
    cost = np.ones(N_ENGINES)
    cost[SLOW_ENGINE] = SLOWDOWN
    rows: dict[str, dict[str, float]] = {}
    for name in MOVING:
        row: dict[str, float] = {}
        for mode in ("equal", "measured"):
            result = simulate(trace, name, N_ENGINES, window, THETA, H=H, engine_cost=cost,
                              capacity=mode)
            loads = result.engine_loads[len(result.engine_loads) // 2:].sum(axis=0)
            row[f"{mode}_busy_makespan"] = result.summary["busy_makespan"]
            row[f"{mode}_slow_load_vs_others"] = float(
                loads[SLOW_ENGINE] / np.delete(loads, SLOW_ENGINE).mean())
            row[f"{mode}_keys_moved"] = float(result.keys_moved.sum())
        row["makespan_gain_pct"] = 100.0 * (1 - row["measured_busy_makespan"]
                                            / row["equal_busy_makespan"])
        rows[name] = row
        print(f"  {name}: done", flush=True)
    return rows


def _fmt(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def print_trace_table(window: int, rows: dict[str, dict]) -> None:
    print(f"\n== periodic Zipf, 4096 keys, {N_ENGINES} engines, window = {window:,} events ==")
    head = ("strategy", "avgRSTD", "maxRSTD", "z0.2", "z1.5", "rebal", "keys moved",
            "%keys/rebal", "state moved", "makespan", "ms/dec", "ms p99", "ms max")
    print(" ".join(f"{h:>11}" for h in head))
    for name, r in rows.items():
        cells = (
            name, _fmt(r["avg_rstd"]), _fmt(r["max_rstd"]), _fmt(r["avg_rstd_zipf0.2"]),
            _fmt(r["avg_rstd_zipf1.5"]), str(r["rebalances"]), _fmt(r["keys_moved"], 0),
            _fmt(r["avg_pct_keys_moved_per_rebalance"], 2), _fmt(r["events_moved"], 0),
            _fmt(r["makespan"], 0), _fmt(r["decision_ms_mean"], 2),
            _fmt(r["decision_ms_p99"], 1), _fmt(r["decision_ms_max"], 1),
        )
        print(" ".join(f"{c:>11}" for c in cells))
    kg = rows["kg"]
    print(" ".join(f"{c:>11}" for c in (
        "bound", _fmt(kg["avg_rstd_lower_bound"]), _fmt(kg["max_rstd_lower_bound"]), "", "",
        "", "", "", "", _fmt(kg["makespan_lower_bound"], 0))))
    m = rows["milp"]
    print(f"milp: {m['milp_solved']} models solved (HiGHS median {m['milp_solve_s_median']:.2f} s,"
          f" max {m['milp_solve_s_max']:.2f} s), {m['milp_fallbacks']} fallbacks to dlb-h")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_950_000)
    parser.add_argument("--window", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hetero-events", type=int, default=1_000_000,
                        help="events of the trace for the heterogeneous-engine runs")
    parser.add_argument("--big-keys", type=int, default=1_000_000)
    args = parser.parse_args()

    log = MilpLog()
    milp_logger = logging.getLogger("splitter.policies.milp")
    milp_logger.addHandler(log)
    milp_logger.setLevel(logging.DEBUG)
    milp_logger.propagate = False

    trace = periodic_zipf_trace(args.events, N_KEYS, seed=args.seed)
    results: dict[str, object] = {
        "setup": {"events": args.events, "keys": N_KEYS, "engines": N_ENGINES, "theta": THETA,
                  "H": H, "window": args.window, "seed": args.seed,
                  "rate_events_per_minute": PAPER_RATE},
    }
    print("simulating the paper workload ...")
    rows = trace_rows(trace, args.window, args.seed, log)
    results["trace"] = rows
    results["lower_bound"] = {"avg_rstd": rows["kg"]["avg_rstd_lower_bound"],
                              "max_rstd": rows["kg"]["max_rstd_lower_bound"],
                              "makespan": rows["kg"]["makespan_lower_bound"]}
    print_trace_table(args.window, rows)

    print("\ntiming the MILP ...")
    timings = {
        "4096_keys_zipf1.5": time_milp(N_KEYS, 10_000, 1.5, 5, 1, log),
        "4096_keys_zipf1.0": time_milp(N_KEYS, 10_000, 1.0, 5, 2, log),
        f"{args.big_keys}_keys_zipf0.8": time_milp(args.big_keys, 10_000_000, 0.8, 3, 3, log),
        f"{args.big_keys}_keys_zipf1.0": time_milp(args.big_keys, 10_000_000, 1.0, 3, 4, log),
    }
    results["milp_solver_time"] = timings
    print(f"\n== milp decision time, {N_ENGINES} engines, from the KG map ==")
    for label, t in timings.items():
        print(f"{label:>24}: decision median {t['decision_s_median']:.2f} s (max "
              f"{t['decision_s_max']:.2f}), HiGHS median {t['solver_s_median']:.2f} s, "
              f"fallbacks {t['fallbacks']}/{t['repeats']}, keys moved "
              f"{t['keys_moved_median']:,.0f}, RSTD {t['rstd_before']:.1f} → "
              f"{t['rstd_after']:.1f} (bound {t['rstd_lower_bound']:.1f})")

    print(f"\nheterogeneous engines (engine {SLOW_ENGINE} {SLOWDOWN:g}x slower), first "
          f"{args.hetero_events:,} events ...")
    hetero = heterogeneous(trace[: args.hetero_events], args.window)
    results["heterogeneous"] = {"slow_engine": SLOW_ENGINE, "slowdown": SLOWDOWN,
                                "events": args.hetero_events, "strategies": hetero}
    print(f"\n== busy makespan, engine {SLOW_ENGINE} {SLOWDOWN:g}x slower "
          "(slow engine's load / others' mean, second half of the run) ==")
    print(f"{'strategy':>8} {'equal':>12} {'measured':>12} {'gain %':>7} "
          f"{'slow/others eq':>15} {'slow/others ms':>15}")
    for name, r in hetero.items():
        print(f"{name:>8} {_fmt(r['equal_busy_makespan'], 0):>12} "
              f"{_fmt(r['measured_busy_makespan'], 0):>12} {_fmt(r['makespan_gain_pct']):>7} "
              f"{r['equal_slow_load_vs_others']:>15.3f} {r['measured_slow_load_vs_others']:>15.3f}")

    write_results(results, "balancers.json")


if __name__ == "__main__":
    main()
