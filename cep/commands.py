"""The commands of the ``cep`` command line (``cep.cli`` is its entry): the parser and
what each command does. Exit statuses are described in :mod:`cep.cli`."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from cep.balancing.strategies import KEY_PRESERVING, STRATEGIES
from cep.bench import format_bench
from cep.cli import add_runner_options
from cep.engine.output import output_records
from cep.handoff.store import StoreError
from cep.io.inputlog import generator_kind
from cep.io.inputs import InputError, load_inputs, parse_input_specs
from cep.io.kafka_input import STARTING_OFFSETS
from cep.io.sinks import FORMATS, write_metrics, write_records
from cep.io.sources import MAX_RECORD_BYTES
from cep.lang import ir
from cep.lang.compile import compile_file
from cep.lang.errors import RuleError
from cep.lang.parser import parse_duration
from cep.quality import precision_recall, quality_from_metrics
from cep.reference import run_reference
from cep.servers.kafka import EmbeddedKafkaError
from cep.servers.kafka_shared import embedded_broker, resolve
from cep.servers.mongo import EmbeddedMongoError
from cep.spark.runtime import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MONGO_TIMEOUT,
    DEFAULT_TRIGGER_S,
    Output,
    SparkRunError,
    run_on_spark,
)
from cep.spark.splitter.balancer import CAPACITY_MODES, FIRST_DECIDED_BATCH
from cep.transports.address import KafkaTransportError, parse_kafka_uri
from cep.transports.outputs import is_uri_output
from cep.transports.produce import produce, produce_generated
from cep.verify import failures, format_table, to_json, verify

STRATEGY_NAMES = [*STRATEGIES, "pkg"]

EXIT_RULE_ERROR = 2
EXIT_RUN_ERROR = 1


def run_command(argv: list[str]) -> int:
    """Parse ``argv`` and run the command it names; the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except RuleError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_RULE_ERROR
    except (InputError, SparkRunError, StoreError, EmbeddedMongoError, KafkaTransportError,
            EmbeddedKafkaError) as err:
        print(f"cep: {err}", file=sys.stderr)
        return EXIT_RUN_ERROR
    except KeyboardInterrupt:
        print("cep: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cep", description="Complex event processing with EPL-like rules."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="check a rule file and describe its rules")
    check.add_argument("file", help="the .epl rule file")
    check.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="override a variable (repeatable)")
    _state_options(check)
    check.set_defaults(handler=_check)

    run = sub.add_parser("run", help="run a rule file over an input")
    run.add_argument("file", help="the .epl rule file")
    _state_options(run)
    run.add_argument("--max-record-bytes", type=int, default=MAX_RECORD_BYTES, metavar="N",
                     help="dead-letter input records larger than this (default 1 MiB)")
    run.add_argument("--input", action="append", required=True, metavar="SRC",
                     help="a JSON-lines/CSV/Parquet path, directory or glob, or Kafka topics "
                     "kafka://HOST:PORT/TOPIC[,TOPIC] (kafka://embedded/TOPIC: cep's own "
                     "broker); with several input streams write STREAM=SRC (repeatable)")
    add_runner_options(run)
    run.add_argument("--engines", type=int, default=5, metavar="N",
                     help="CEP engines (Spark stateful groups), default 5")
    run.add_argument("--batch-size", type=int, default=None, metavar="N",
                     help=f"events per micro-batch (spark default {DEFAULT_BATCH_SIZE:,}; "
                     "local default: all at once)")
    run.add_argument("--output", metavar="PATH", help="where events go, per micro-batch: "
                     "FILE.jsonl (appended), a directory (a part file per batch and engine; "
                     "always for parquet), kafka://HOST:PORT/TOPIC or "
                     "mongodb://HOST/DB.COLLECTION (exactly once), default standard output")
    run.add_argument("--starting-offsets", choices=STARTING_OFFSETS, default="earliest",
                     help="where a Kafka input's partitions are first read from: their "
                     "earliest record (default) or only records that arrive after the start")
    run.add_argument("--follow", action="store_true",
                     help="keep running: pick up new files and appended lines until "
                     "SIGINT/SIGTERM, which finishes the batch in flight (spark runner)")
    run.add_argument("--trigger-interval", type=float, default=DEFAULT_TRIGGER_S,
                     metavar="SECONDS", help="with --follow: how often to look for new "
                     f"input (default {DEFAULT_TRIGGER_S:g})")
    run.add_argument("--format", choices=FORMATS, default="jsonl",
                     help="jsonl (default), parquet or console")
    run.add_argument("--checkpoint", metavar="DIR",
                     help="keep the input log, Spark checkpoint and delivery ledgers here, "
                     "so an interrupted run resumes where its committed batches end")
    run.add_argument("--metrics", metavar="PATH", help="per-batch metrics as JSON lines")
    run.add_argument("--dead-letter", metavar="PATH",
                     help="where malformed input records go (default: OUTPUT.dead.jsonl, "
                     "or cep-dead-letter.jsonl)")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="override a variable (repeatable)")
    _balancing_options(run)
    run.add_argument("--strategy", default="kg", choices=STRATEGY_NAMES,
                     help="how keys are spread over engines (default kg: key grouping)")
    run.add_argument("--mongo-timeout", type=float, default=DEFAULT_MONGO_TIMEOUT,
                     metavar="SECONDS", help="longest wait for MongoDB to be found, connect "
                     f"or answer (default {DEFAULT_MONGO_TIMEOUT:g}; options in the URI win)")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.set_defaults(handler=_run)

    produce = sub.add_parser("produce", help="load JSON lines or generated tweets into a "
                             "Kafka topic (kafka://embedded/TOPIC: cep's own broker)")
    produce.add_argument("topic", metavar="TOPIC_URI", help="kafka://HOST:PORT/TOPIC")
    produce.add_argument("--input", required=True, metavar="SRC",
                         help="a JSON-lines file, or the generator: tweets[:n=…,mode=…]")
    produce.add_argument("--partitions", type=int, default=None, metavar="N",
                         help="partitions of a topic created now (default 1; an existing "
                         "topic must have this many)")
    produce.add_argument("--key", metavar="FIELD", help="key records by this field (every "
                         "record of a key in one partition); default: line i to partition "
                         "i mod N")
    produce.set_defaults(handler=_produce)

    _strategy_comparison(sub, "verify", "run strategies on Spark and compare their events "
                         "with key grouping's", format_table)

    simulate = sub.add_parser("simulate", help="replay a key trace through strategies "
                              "without Spark (the paper's periodic-Zipf setting by default)")
    _strategies_option(simulate, ",".join(STRATEGY_NAMES))
    _capacity_option(simulate)
    simulate.add_argument("--engine-cost", metavar="C0,C1,...",
                          help="simulated busy time per event of each engine, e.g. 1,1,3,1,1 "
                               "for one engine 3x slower (default all 1)")
    simulate.add_argument("--events", type=int, default=2_950_000)
    simulate.add_argument("--keys", type=int, default=4096)
    simulate.add_argument("--engines", type=int, default=5)
    simulate.add_argument("--window", type=int, default=10_000, metavar="EVENTS",
                          help="events per statistics window (default 10,000)")
    simulate.add_argument("--threshold", type=float, default=15.0, metavar="PCT")
    simulate.add_argument("--seed", type=int, default=7)
    simulate.add_argument("--trace", metavar="PATH",
                          help="a .npy array of key ids per event instead of periodic Zipf")
    simulate.add_argument("--json", metavar="PATH", help="also write the summaries as JSON")
    simulate.set_defaults(handler=_simulate)

    _strategy_comparison(sub, "bench", "strategies side by side on Spark, next to the DLB "
                         "paper's Table 1", format_bench)

    prepare = sub.add_parser("prepare", help="make the JVM class archive that lets Spark "
                             "start seconds sooner (the install command runs it)")
    prepare.set_defaults(handler=_prepare)

    report = sub.add_parser("report", help="draw PNG plots from runs' --metrics files")
    report.add_argument("metrics", nargs="+", help="metrics JSON-lines files (one per run)")
    report.add_argument("-o", "--output", required=True, metavar="DIR")
    report.add_argument("--threshold", type=float, default=None, metavar="PCT",
                        help="the θ line on the RSTD plot (default: the θ each run used, "
                        "from its metrics)")
    report.set_defaults(handler=_report)
    return parser


def _strategy_comparison(sub: argparse._SubParsersAction, name: str, help_text: str,
                         table: Callable) -> None:
    """``verify`` or ``bench``: the same strategies run the same way, and only the table
    of the results differs."""
    parser = sub.add_parser(name, help=help_text)
    parser.set_defaults(handler=_verify, table=table)
    parser.add_argument("file", help="the .epl rule file")
    parser.add_argument("--input", action="append", required=True, metavar="SRC")
    _strategies_option(parser, "kg,dlb-h,dlb-l,lptf,pkg")
    parser.add_argument("--engines", type=int, default=5, metavar="N")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    _balancing_options(parser)
    _state_options(parser)


def _strategies_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--strategies", default=default,
                        help=f"comma-separated, from {','.join(STRATEGY_NAMES)} "
                             f"(default {default})")


def _capacity_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--capacity", choices=CAPACITY_MODES, default="equal",
                        help="balance to equal shares, or to shares from each engine's "
                             "measured busy seconds per event (default equal)")


def _strategy_list(text: str) -> list[str]:
    """The names in a --strategies value, each one known (else an input error)."""
    strategies = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(strategies) - set(STRATEGY_NAMES))
    if unknown:
        raise InputError(f"unknown strategy {unknown[0]}; choose from "
                         f"{', '.join(STRATEGY_NAMES)}")
    return strategies


def _state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-ttl", type=_duration, default=None, metavar="DURATION",
                        help="bound #keepall windows and patterns without WITHIN to this "
                             "much event time per key, e.g. '10 min'")


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _balancing_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threshold", type=float, default=15.0, metavar="PCT",
                        help="rebalance when the engines' load RSTD exceeds this (default 15)")
    parser.add_argument("--stat-window", type=int, default=1, metavar="BATCHES",
                        help="batches of per-key load the Balancer looks at (default 1)")
    _capacity_option(parser)
    parser.add_argument("--slow-engine", action="append", default=[], metavar="E:FACTOR",
                        help="make engine E's processing FACTOR times slower (to try "
                             "--capacity measured on equal hardware)")
    parser.add_argument("--mongo-uri", metavar="URI", default=os.environ.get("CEP_MONGO_URI"),
                        help="MongoDB for key-state handoff (default: $CEP_MONGO_URI, which "
                        "keeps a password out of the process list, else an embedded server)")


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise RuleError(f"--set expects NAME=VALUE, got '{pair}'")
        out[name.strip()] = value
    return out


def _check(args: argparse.Namespace) -> int:
    module = compile_file(args.file, _overrides(args.set), state_ttl_us=args.state_ttl)
    print(describe(module))
    return 0


def describe(module: ir.CompiledModule) -> str:
    """A human summary of a compiled module: streams, key, rules."""
    lines = [f"{module.source_name}: ok"]
    lines.append(f"key: {module.key or '(none: one global group)'}")
    lines.append("streams:")
    for stream in module.streams.values():
        kind = "derived" if stream.derived else "input"
        fields = ", ".join(f"{n} {t}" for n, t in stream.fields)
        ts = f" TIMESTAMP {stream.timestamp}" if stream.timestamp else ""
        lines.append(f"  {stream.name} ({kind}): {fields}{ts}")
    if module.variables:
        lines.append("variables:")
        for var in module.variables.values():
            lines.append(f"  {var.type} {var.name} = {var.value!r}")
    lines.append("rules:")
    for rule in module.derived:
        target = f" -> INSERT INTO {rule.target}" if rule.target else " -> output"
        lines.append(f"  {rule.name}: stateless on {rule.stream}{target}")
    for rule in module.stateful:
        lines.append(f"  {rule.name}: {_rule_kind(rule)}, key {rule.key or '-'}")
    for number, stage in enumerate(module.stages, start=1):
        for rule in stage.stateful:
            lines.append(f"  {rule.name}: {_rule_kind(rule)}, key {rule.key or '-'} "
                         f"(stage {number}: reads complex events)")
    if module.stages:
        lines.append(f"spark: {_chain_on_spark(module)}")
    return "\n".join(lines)


def _chain_on_spark(module: ir.CompiledModule) -> str:
    """Whether the Spark runner takes this INSERT INTO chain, in one line."""
    from cep.spark.chain_stages import ChainError, check_chain

    try:
        check_chain(module)
    except ChainError as err:
        return f"refused: {err}"
    return (f"{len(module.stages) + 1} stages, each later stage one micro-batch behind the "
            "one before it (its keys by key grouping)")


def _rule_kind(rule: ir.StatefulRule) -> str:
    if isinstance(rule, ir.WindowRule):
        return f"window #{rule.window.kind}({rule.window.size}) on {rule.stream}"
    if isinstance(rule, ir.JoinRule):
        return (f"#lastevent join of {rule.trigger_stream} with "
                f"#{rule.window.kind}({rule.window.size}) on {rule.window_stream}")
    within = f" within {rule.within_us / 1e6:g}s" if rule.within_us else ""
    return f"pattern over {', '.join(rule.streams)}{within}"


def _prepare(args: argparse.Namespace) -> int:
    """``cep prepare``: the checkpoint file system of ``cep.spark.local_fs``, then the
    class archive of ``cep.spark.jvm_archive`` (made with the jar on the class path)."""
    from cep.spark.jvm_archive import ArchiveError
    from cep.spark.local_fs import LocalFsError, build_jar
    from cep.spark.prepare import make_archive

    started = time.perf_counter()
    try:
        print(f"cep: checkpoint file system {build_jar()}")
    except LocalFsError as err:  # runs still work, with Hadoop's own file system
        print(f"cep: {err}", file=sys.stderr)
    try:
        path = make_archive()
    except ArchiveError as err:
        print(f"cep: {err}", file=sys.stderr)
        return EXIT_RUN_ERROR
    print(f"cep: JVM class archive {path} ({path.stat().st_size / 2**20:.0f} MiB) in "
          f"{time.perf_counter() - started:.1f}s")
    return 0


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    module = compile_file(args.file, _overrides(args.set), state_ttl_us=args.state_ttl)
    dead_path = args.dead_letter or (
        f"{args.output}.dead.jsonl" if args.output and not is_uri_output(args.output)
        else "cep-dead-letter.jsonl")
    if args.runner == "local":
        if args.follow:
            raise InputError("--follow needs --runner spark (the reference runner reads "
                             "a bounded input)")
        if is_uri_output(args.output):
            raise InputError("--output kafka:// and mongodb:// need --runner spark")
        with _embedded_kafka(args.input):
            loaded = load_inputs(module, args.input, dead_path,
                                 max_record_bytes=args.max_record_bytes)
        records = output_records(run_reference(module, loaded.tables, args.batch_size))
        write_records(records, args.output, args.format)
        quality = (precision_recall(records, loaded.truth_ids)
                   if loaded.truth_ids is not None else None)
        metrics = [{"batch": 0, "events_in": loaded.accepted, "events_out": len(records)}]
        if args.metrics:
            write_metrics([*metrics, {"quality": quality}] if quality else metrics,
                          args.metrics)
        totals = {"events_in": loaded.accepted, "events_out": len(records),
                  "dead_lettered": loaded.rejected, "blank_lines": loaded.skipped}
        per_rule = dict(Counter(r["rule"] for r in records))
        balance = None
    else:
        fmt = "jsonl" if args.format == "console" else args.format
        run = run_on_spark(
            module, parse_input_specs(module, args.input),
            output=Output(None if args.format == "console" else args.output, fmt),
            engines=args.engines, batch_size=args.batch_size or DEFAULT_BATCH_SIZE,
            master=args.master, checkpoint=args.checkpoint, follow=args.follow,
            trigger_s=args.trigger_interval, dead_letter=dead_path,
            metrics_file=args.metrics, max_record_bytes=args.max_record_bytes,
            verbose=args.verbose, progress=not args.quiet, strategy=args.strategy,
            threshold=args.threshold, stat_window=args.stat_window, mongo_uri=args.mongo_uri,
            mongo_timeout=args.mongo_timeout, capacity=args.capacity,
            slowdown=_slowdown(args.slow_engine), starting_offsets=args.starting_offsets)
        totals = run.totals
        per_rule = dict(sum((Counter(m.get("outputs_per_rule", {})) for m in run.metrics),
                            Counter()))
        quality = quality_from_metrics(run.metrics, _id_rules(module))
        balance = balance_text(args.strategy, run.metrics)
    elapsed = time.perf_counter() - started
    summary = {
        "events": totals.get("events_in", 0),
        "dead_lettered": totals.get("dead_lettered", 0),
        "skipped_blank": totals.get("blank_lines", 0),
        "outputs": totals.get("events_out", 0),
        "outputs_per_rule": per_rule,
        "seconds": round(elapsed, 3),
    }
    print(_summary_text(summary, dead_path if summary["dead_lettered"] else None),
          file=sys.stderr)
    if balance:
        print(balance, file=sys.stderr)
    for rule, q in (quality or {}).items():
        print(f"  {rule} vs ground truth: precision {q['precision']:.3f}, recall "
              f"{q['recall']:.3f} ({q['detected']:,} detected, {q['truth']:,} true)",
              file=sys.stderr)
    return 0


def _embedded_kafka(specs: list[str]) -> contextlib.AbstractContextManager:
    """The embedded broker for the command when an input names ``kafka://embedded``."""
    if any("kafka://embedded/" in spec for spec in specs):
        return embedded_broker()
    return contextlib.nullcontext()


def _produce(args: argparse.Namespace) -> int:
    """``cep produce``: the input side of a Kafka demo (see cep.transports.produce)."""
    started = time.perf_counter()
    try:
        uri = parse_kafka_uri(args.topic)
    except ValueError as err:
        raise InputError(str(err)) from None
    if len(uri.topics) != 1:
        raise InputError(f"cep produce loads one topic, got {','.join(uri.topics)}")
    topic = uri.topics[0]
    with _embedded_kafka([args.topic]):
        address = resolve(uri.address)
        if generator_kind(args.input) is not None:
            sent = produce_generated(address, topic, args.input, args.partitions, args.key)
        elif Path(args.input).is_file():
            sent = produce(address, topic, args.input, args.partitions, args.key)
        else:
            raise InputError(f"input not found: {args.input} (a JSON-lines file or tweets:…)")
    elapsed = time.perf_counter() - started
    print(f"cep: {sent:,} records to {uri.address}/{topic} in {elapsed:.2f}s", file=sys.stderr)
    return 0


def _id_rules(module: ir.CompiledModule) -> list[str]:
    """Rules whose output has an ``id`` column: the detections a ground truth scores."""
    rules = [*module.derived, *module.stateful]
    return [r.name for r in rules
            if r.name in module.outputs and any(c.name == "id" for c in r.columns)]


def _verify(args: argparse.Namespace) -> int:
    module = compile_file(args.file, _overrides(args.set), state_ttl_us=args.state_ttl)
    strategies = _strategy_list(args.strategies)
    sources = parse_input_specs(module, args.input)
    results = verify(module, sources, strategies, engines=args.engines,
                     batch_size=args.batch_size or DEFAULT_BATCH_SIZE, master=args.master,
                     threshold=args.threshold, stat_window=args.stat_window,
                     mongo_uri=args.mongo_uri, progress=False, capacity=args.capacity,
                     slowdown=_slowdown(args.slow_engine))
    print(args.table(results))
    if args.json:
        Path(args.json).write_text(to_json(results) + "\n")
    broken = failures(results)
    if broken:
        print(f"cep: {', '.join(broken)} changed the events: key-preserving strategies "
              "must match key grouping exactly", file=sys.stderr)
        return EXIT_RUN_ERROR
    return 0


def _simulate(args: argparse.Namespace) -> int:
    import numpy as np

    from cep.balancing.simulate import periodic_zipf_trace, simulate

    if args.trace:
        trace = np.load(args.trace)
    else:
        trace = periodic_zipf_trace(args.events, args.keys, seed=args.seed)
    strategies = _strategy_list(args.strategies)
    cost = _engine_cost(args.engine_cost, args.engines)
    columns = ("avg_rstd", "max_rstd", "avg_rstd_lower_bound", "rebalances",
               "avg_pct_keys_moved_per_rebalance", "max_pct_keys_moved_per_rebalance",
               "events_moved", "makespan", "busy_makespan", "decision_ms_mean")
    summaries = {}
    print("strategy  " + "  ".join(f"{_short(c):>12}" for c in columns))
    for name in strategies:
        result = simulate(trace, name, n_engines=args.engines, window=args.window,
                          threshold=args.threshold, seed=args.seed, engine_cost=cost,
                          capacity=args.capacity)
        summaries[name] = result.summary
        cells = [result.summary.get(c, "") for c in columns]
        print(f"{name:8s}  " + "  ".join(
            f"{c:>12.2f}" if isinstance(c, float) else f"{c!s:>12}" for c in cells))
    if args.json:
        Path(args.json).write_text(json.dumps(summaries, indent=2, default=str) + "\n")
    return 0


def _slowdown(specs: list[str]) -> dict[int, float]:
    out = {}
    for spec in specs:
        engine, _, factor = spec.partition(":")
        try:
            out[int(engine)] = float(factor)
        except ValueError:
            raise InputError(f"--slow-engine wants E:FACTOR like 2:3, got {spec!r}") from None
    return out


def _engine_cost(text: str | None, n_engines: int) -> list[float] | None:
    if not text:
        return None
    try:
        cost = [float(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"--engine-cost wants numbers like 1,1,3,1,1, got {text!r}") from None
    if len(cost) != n_engines or min(cost) <= 0:
        raise InputError(f"--engine-cost needs {n_engines} positive numbers, got {text!r}")
    return cost


def _short(column: str) -> str:
    return (column.replace("_per_rebalance", "").replace("avg_", "avg ")
            .replace("max_", "max ").replace("pct_keys_moved", "% keys mv")
            .replace("rstd_lower_bound", "RSTD bound").replace("decision_ms_mean", "decide ms")
            .replace("_", " "))


def _report(args: argparse.Namespace) -> int:
    from cep.report import draw

    try:
        paths = draw(args.metrics, args.output, args.threshold)
    except (OSError, ValueError, KeyError) as err:
        raise InputError(f"cannot draw the report: {err}") from err
    for path in paths:
        print(path)
    return 0


def balance_text(strategy: str, metrics: list[dict]) -> str | None:
    """The engines' balance of a Spark run in a line (the load RSTD that the strategies
    act on, what the DLB paper's Table 1 compares), and for a key-moving strategy whose
    run ended before its first key map could apply, why the balance stayed KG's (keys
    handed over at the end of the last batch never arrive): a user who asked for DLB and
    sees nothing change should learn why from the run, not from the docs."""
    if not metrics:
        return None
    rstds = [m["rstd"] for m in metrics]
    moved = sum(m.get("exported_keys", 0) for m in metrics)
    text = (f"  engines' load RSTD {statistics.fmean(rstds):.1f}% on average over "
            f"{len(rstds)} batch{'es' if len(rstds) != 1 else ''}, {moved:,} keys handed "
            f"over ({strategy})")
    if strategy != "kg" and strategy in KEY_PRESERVING and max(
            m["batch"] for m in metrics) < FIRST_DECIDED_BATCH:
        text += (f"\n  the run ended before batch {FIRST_DECIDED_BATCH}, where the "
                 "Balancer's first key map applies, so its balance is KG's; a smaller "
                 "--batch-size gives it batches to act between")
    return text


def _summary_text(summary: dict, dead_path: str | None) -> str:
    rate = summary["events"] / summary["seconds"] if summary["seconds"] else 0.0
    parts = [
        f"cep: {summary['events']} events, {summary['outputs']} output rows "
        f"in {summary['seconds']:.2f}s ({rate:,.0f} events/s)",
    ]
    if summary["outputs_per_rule"]:
        parts.append("  per rule: " + ", ".join(
            f"{k}={v}" for k, v in summary["outputs_per_rule"].items()))
    if summary["dead_lettered"]:
        parts.append(f"  {summary['dead_lettered']} malformed records dead-lettered to "
                     f"{dead_path}")
    if summary["skipped_blank"]:
        parts.append(f"  {summary['skipped_blank']} blank lines skipped")
    return "\n".join(parts)

