"""``cep verify`` and ``cep bench``: the same strategies run the same way on Spark (KG
first, as the reference), and only the table of the results differs.

``--nodes N`` runs them on an emulated cluster of N one-slot nodes on this machine, each
capped at the machine's cores / N (``cep.spark.cluster.emulated``): the DLB paper's
setting of an engine per node, with the engines as many as the nodes unless
``--engines`` says otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from cep.cli.balancing_options import (
    add_balancing_options,
    add_strategies_option,
    slowdown,
    strategy_list,
)
from cep.cli.errors import EXIT_RUN_ERROR, CommandError
from cep.cli.options import add_set_option, add_state_options, overrides
from cep.machine_cpu import MachineCpu
from cep.provenance import load_average
from cep.run import run as run_rules
from cep.run_config import DEFAULT_BATCH_SIZE, DEFAULT_ENGINES, DEFAULT_MASTER, RunConfig, RunResult
from cep.verify import (
    StrategyResult,
    failures,
    format_table,
    run_order,
    to_json,
    verify,
)
from grammar.compile import compile_file


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser)
    parser.set_defaults(table=lambda results, _config: format_table(results))


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser)
    parser.set_defaults(table=bench_table)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=compare)
    parser.add_argument("file", help="the .epl rule file")
    parser.add_argument("--input", action="append", required=True, metavar="SRC")
    add_strategies_option(parser, "kg,dlb-h,dlb-l,lptf,pkg")
    parser.add_argument("--engines", type=int, default=None, metavar="N",
                        help=f"CEP engines (default {DEFAULT_ENGINES}, or --nodes)")
    parser.add_argument("--master", default=DEFAULT_MASTER)
    parser.add_argument("--nodes", type=int, default=None, metavar="N",
                        help="run on an emulated cluster of N one-slot nodes on this machine, "
                             "each in a cgroup capped at the machine's cores / N (needs root "
                             "and the cgroup v1 cpu controller)")
    parser.add_argument("--node-cpus", type=float, default=None, metavar="CORES",
                        help="each emulated node's CPU quota (default: cores / --nodes)")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N")
    add_set_option(parser)
    parser.add_argument("--json", metavar="PATH",
                        help="also write the figures as JSON, with the setup, date, machine "
                        "and load averages (cep report draws the paper's figures from it)")
    parser.add_argument("--warm-up", type=int, default=None, metavar="BATCHES",
                        help="first run KG unmeasured over this many batches of the input "
                             "(a tweets generator cut short; other inputs whole), so that "
                             "no strategy pays the session's warm-up (default with "
                             "--nodes: the whole input, else 0)")
    parser.add_argument("--rounds", type=int, default=1, metavar="R",
                        help="run the strategies R times, in turn, so that other work on "
                             "the machine weighs on all alike (default 1)")
    add_balancing_options(parser, several_loads=True)
    add_state_options(parser)


def compare(args: argparse.Namespace) -> int:
    module = compile_file(args.file, overrides(args.set), state_ttl_us=args.state_ttl)
    strategies = strategy_list(args.strategies)
    if args.rounds < 1:
        raise CommandError(f"--rounds must be at least 1, got {args.rounds}")
    engines = args.engines or args.nodes or DEFAULT_ENGINES
    config = RunConfig(tuple(args.input), engines=engines, batch_size=args.batch_size,
                       master=args.master, threshold=args.threshold,
                       stat_window=args.stat_window, mongo_uri=args.mongo_uri,
                       progress=False, capacity=args.capacity, load=args.load[0],
                       moves=args.moves,
                       slowdown=slowdown(args.slow_engine))
    load_at_start = load_average()
    with _placed(config, args) as (placed, cpus_per_node, meter):
        results = verify(module, placed, strategies, args.load, args.rounds,
                         _warm_up(args, placed), progress=_progress, runner=meter)
    results = meter.attach(results, run_order(strategies, args.load, args.rounds))
    print(args.table(results, placed))
    if args.json:
        setup = {**run_setup(args, placed, cpus_per_node, results),
                 "load_average_at_start": load_at_start}
        Path(args.json).write_text(to_json(results, setup) + "\n")
    broken = failures(results)
    if broken:
        print(f"cep: {', '.join(broken)} changed the events: key-preserving strategies "
              "must match key grouping exactly", file=sys.stderr)
        return EXIT_RUN_ERROR
    return 0


def _progress(line: str) -> None:
    print(f"cep: {line}", file=sys.stderr, flush=True)


def run_setup(args: argparse.Namespace, config: RunConfig, cpus_per_node: float | None,
              results: list[StrategyResult]) -> dict[str, object]:
    """What the results were measured on, for the JSON file: the rules and inputs, the
    order of the tweets (whose Table 1 and column of the figures they belong to) with
    each batch's Zipf exponent, the engines and, on an emulated cluster, its nodes; and
    Table 1's figures, beside the paper's."""
    from cep.bench import table1, tweets_order

    order, exponents = tweets_order(config.inputs, config.batch_size)
    return {"rules": args.file, "inputs": list(config.inputs), "order": order,
            "exponents": exponents, "engines": config.engines, "nodes": args.nodes,
            "cpus_per_node": cpus_per_node, "batch_size": config.batch_size,
            "threshold": config.threshold, "load": args.load, "rounds": args.rounds,
            "warm_up": list(_warm_up(args, config)),
            "master": args.master if args.nodes is None else "emulated",
            "table1": table1(results, order, exponents)}


def _warm_up(args: argparse.Namespace, config: RunConfig) -> tuple[str, ...]:
    """The inputs of the unmeasured KG run before the strategies (none: no such run)."""
    from cep.bench import warm_up_inputs

    if args.warm_up is None:
        # the whole input: after 3 batches the first KG still read at half the speed
        # of the second (6.4 against 3.0 task seconds, paper-zipf-periodic-5nodes.json)
        return tuple(config.inputs) if args.nodes else ()
    if args.warm_up <= 0:
        return ()
    return warm_up_inputs(config.inputs, args.warm_up * (config.batch_size or DEFAULT_BATCH_SIZE))


class NodeMeter:
    """Runs each strategy (:func:`cep.run.run`) and reads, around it, each emulated
    node's CPU seconds and the seconds its quota held it back from the node's cgroup,
    and the whole machine's busy CPU seconds over the run's measured window.

    Why: what the nodes did against the run's wall clock splits a run into the part
    that more nodes share and the driver's serial part (Spark's frame), which bounds the
    speedup more nodes can give (``bench/bench_speedup.py``); what the window cost the
    machine bounds it by the cores. Off the emulated cluster there are no groups and the
    figures stay empty."""

    def __init__(self, groups: list | None = None) -> None:
        self.groups = groups or []
        self.runs: list[tuple[list[float], list[float], float | None]] = []

    def _read(self) -> tuple[list[float], list[float]]:
        return ([group.usage_s() or 0.0 for group in self.groups],
                [group.throttling().get("throttled_time", 0) / 1e9 for group in self.groups])

    def __call__(self, module, config: RunConfig, stop: threading.Event) -> RunResult:
        cpu, throttled = self._read()
        machine = MachineCpu() if self.groups else None  # off the cluster: nothing kept
        with machine or contextlib.nullcontext():
            result = run_rules(module, config, stop)
        cpu_after, throttled_after = self._read()
        commits = [m["wall_time"] for m in result.metrics]
        window = (machine.between(commits[0], commits[-1])
                  if machine is not None and len(commits) > 1 else None)
        self.runs.append(([round(b - a, 3) for a, b in zip(cpu, cpu_after, strict=True)],
                          [round(b - a, 3) for a, b in
                           zip(throttled, throttled_after, strict=True)], window))
        return result

    def attach(self, results: list[StrategyResult], order: list[tuple[int, str, str]]
               ) -> list[StrategyResult]:
        """``results`` with each run's node figures. The measured runs are the last
        ``len(order)`` (a warm-up run comes first), of which ``verify`` keeps those of
        the strategies asked for (it runs KG first whether asked for or not)."""
        if not self.groups:
            return results
        wanted = {r.strategy for r in results}
        kept = [figures for (_, name, _), figures in zip(order, self.runs[-len(order):],
                                                          strict=True) if name in wanted]
        return [dataclasses.replace(r, node_cpu_s=cpu, node_throttled_s=throttled,
                                    machine_window_cpu_s=window)
                for r, (cpu, throttled, window) in zip(results, kept, strict=True)]


@contextlib.contextmanager
def _placed(config: RunConfig, args: argparse.Namespace
            ) -> Iterator[tuple[RunConfig, float | None, NodeMeter]]:
    """``config`` as it is, or on an emulated cluster of ``--nodes`` for the block, with
    each node's cores (None: no emulated cluster) and the runner that meters its nodes."""
    if args.nodes is None:
        if args.node_cpus is not None:
            raise CommandError("--node-cpus sizes the nodes of --nodes N: give both")
        yield config, None, NodeMeter()
        return
    if args.nodes < 1:
        raise CommandError(f"--nodes must be at least 1, got {args.nodes}")
    from cep.spark.cluster.emulated import on_nodes  # Spark's side: only for this
    from cep.spark.prepare import run_training_query

    with on_nodes(config, args.nodes, args.node_cpus) as (placed, cluster):
        run_training_query(placed)  # the executors start their JVMs and Python workers
        yield placed, cluster.cpus_per_node, NodeMeter(cluster.cluster.node_groups)


def bench_table(results: list[StrategyResult], config: RunConfig) -> str:
    """``cep bench``'s tables, the paper's figures taken for the input's order."""
    from cep.bench import format_bench, tweets_order

    mode, exponents = tweets_order(config.inputs, config.batch_size)
    return format_bench(results, mode, exponents)
