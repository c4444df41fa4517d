"""``cep run FILE --input SRC``: the rules over an input, on Spark or in this process,
then a summary on standard error."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from pathlib import Path

from cep.cli.balancing_options import STRATEGY_NAMES, add_balancing_options, slowdown
from cep.cli.options import add_set_option, add_state_options, add_udf_option, overrides
from cep.cli.runner_options import add_runner_options
from cep.cli.summary import balance_text, quality_lines, summary_data, summary_text
from cep.engine.udf.files import load_udf_files
from cep.io.readers.reader import MAX_RECORD_BYTES
from cep.io.scale_changes import MAX_ENGINES
from cep.io.sinks import FORMATS
from cep.run import run
from cep.run_config import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_ENGINES,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MONGO_TIMEOUT,
    DEFAULT_TRIGGER_S,
    DEFAULT_UDF_TIMEOUT,
    HASHES,
    LATE_POLICIES,
    STARTING_OFFSETS,
    Output,
    RunConfig,
    is_uri_output,
)
from grammar import ir
from grammar.compile import compile_file
from splitter.autoscale import DEFAULT_CLUSTER_MAX, DEFAULT_LOWER, DEFAULT_UPPER
from splitter.engine_labels import local_slots


def add_arguments(run_parser: argparse.ArgumentParser) -> None:
    run_parser.add_argument("file", help="the .epl rule file")
    add_state_options(run_parser)
    run_parser.add_argument("--max-record-bytes", type=int, default=MAX_RECORD_BYTES,
                            metavar="N",
                            help="dead-letter input records larger than this (default 1 MiB)")
    run_parser.add_argument(
        "--input", action="append", required=True, metavar="SRC",
        help="a JSON-lines/CSV/Parquet path, directory or glob, or Kafka topics "
        "kafka://HOST:PORT/TOPIC[,TOPIC] (kafka://embedded/TOPIC: cep's own broker); with "
        "several input streams write STREAM=SRC (repeatable)")
    add_runner_options(run_parser)
    run_parser.add_argument(
        "--engines", type=engines_option, default=(DEFAULT_ENGINES, None),
        metavar="N|auto[:LO-HI]",
        help=f"CEP engines (Spark stateful groups), default {DEFAULT_ENGINES}; auto:LO-HI "
        "lets the load set the count between LO and HI while the job runs (starting at "
        "LO; Guo and Zhou's pi = ceil(2w/(u+v)) from the engines' busy share, out only "
        "when the input lag grows, in only when the job keeps up, decisions in the "
        "metrics); auto alone is 1 to the local master's task slots, or 1-"
        f"{DEFAULT_CLUSTER_MAX} on a cluster; key-preserving strategies only")
    run_parser.add_argument(
        "--autoscale-band", type=_band, default=(DEFAULT_LOWER, DEFAULT_UPPER),
        metavar="V:U",
        help="with --engines auto: the busy share of its batches' wall time below which "
        "an engine is idle (v) and above which it is overloaded (u); each engine is given "
        f"(u+v)/2 (default {DEFAULT_LOWER:g}:{DEFAULT_UPPER:g})")
    run_parser.add_argument("--batch-size", type=int, default=None, metavar="N",
                            help=f"events per micro-batch (spark default "
                            f"{DEFAULT_BATCH_SIZE:,}; local default: all at once)")
    run_parser.add_argument(
        "--output", metavar="PATH", help="where events go, per micro-batch: FILE.jsonl "
        "(appended), a directory (a part file per batch and engine; always for parquet), "
        "kafka://HOST:PORT/TOPIC or mongodb://HOST/DB.COLLECTION (exactly once), default "
        "standard output")
    run_parser.add_argument(
        "--starting-offsets", choices=STARTING_OFFSETS, default="earliest",
        help="where a Kafka input's partitions are first read from: their earliest record "
        "(default) or only records that arrive after the start")
    run_parser.add_argument(
        "--idle-timeout", type=_idle_timeout, default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="SECONDS",
        help="a Kafka partition with no new record for this long while others advance "
        f"stops holding the watermark back until it has records again (default "
        f"{DEFAULT_IDLE_TIMEOUT_S:g}; 0: at once; inf: never)")
    run_parser.add_argument(
        "--late", choices=LATE_POLICIES, default="process",
        help="an event whose timestamp is below the watermark (the largest timestamp so "
        "far minus the schema's LATENESS): process it as it comes (default) or drop it to "
        "the dead letters; counted either way")
    run_parser.add_argument("--follow", action="store_true",
                            help="keep running: pick up new files and appended lines until "
                            "SIGINT/SIGTERM, which finishes the batch in flight (spark "
                            "runner)")
    run_parser.add_argument("--trigger-interval", type=float, default=DEFAULT_TRIGGER_S,
                            metavar="SECONDS", help="with --follow: how often to look for "
                            f"new input (default {DEFAULT_TRIGGER_S:g})")
    run_parser.add_argument("--format", choices=FORMATS, default="jsonl",
                            help="jsonl (default), parquet or console")
    run_parser.add_argument("--checkpoint", metavar="DIR",
                            help="keep the input log, Spark checkpoint and delivery ledgers "
                            "here, so an interrupted run resumes where its committed "
                            "batches end")
    run_parser.add_argument("--metrics", metavar="PATH",
                            help="per-batch metrics as JSON lines")
    run_parser.add_argument("--dead-letter", metavar="PATH",
                            help="where malformed input records go (default: "
                            "OUTPUT.dead.jsonl, or cep-dead-letter.jsonl)")
    add_set_option(run_parser, "override a variable (repeatable)")
    add_udf_option(run_parser, ", and on Spark in every Python worker")
    run_parser.add_argument(
        "--udf-timeout", type=float, default=DEFAULT_UDF_TIMEOUT, metavar="SECONDS",
        help="longest a call of a user function may take: functions run in a worker "
        "process of their own, and a call that hangs longer, or ends that process, makes "
        f"its record a dead letter (default {DEFAULT_UDF_TIMEOUT:g}; 0: run them in the "
        "job's process, unguarded)")
    add_balancing_options(run_parser)
    run_parser.add_argument(
        "--hash", choices=HASHES, default=None,
        help="key grouping's hash of a key to its engine: mod (hash mod N, default) or "
             "jump (a consistent hash: a change of --engines moves the fewest keys); a "
             "restart keeps the run's")
    run_parser.add_argument("--strategy", default="kg", choices=STRATEGY_NAMES,
                            help="how keys are spread over engines (default kg: key "
                            "grouping)")
    run_parser.add_argument(
        "--mongo-timeout", type=float, default=DEFAULT_MONGO_TIMEOUT, metavar="SECONDS",
        help="longest wait for MongoDB to be found, connect or answer (default "
        f"{DEFAULT_MONGO_TIMEOUT:g}; options in the URI win)")
    run_parser.add_argument("--quiet", action="store_true", help="no progress lines")
    run_parser.add_argument("--json", metavar="PATH",
                            help="also write the summary (events, output rows per rule, "
                            "dead letters, late events, the engines' balance, detection "
                            "quality) as JSON")
    run_parser.add_argument("--ui", metavar="[HOST:]PORT",
                            help="serve a live view of the run (a web page, its JSON and "
                            "Prometheus /metrics) on this port, 127.0.0.1 unless HOST is "
                            "given (spark runner)")
    run_parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    load_udf_files(args.udf)  # first: the checker must know the functions' signatures
    module = compile_file(args.file, overrides(args.set), state_ttl_us=args.state_ttl)
    if args.follow:
        for line in follow_warnings(module):
            print(line, file=sys.stderr)
    dead_path = args.dead_letter or (
        f"{args.output}.dead.jsonl" if args.output and not is_uri_output(args.output)
        else "cep-dead-letter.jsonl")
    if args.ui is None:
        view = contextlib.nullcontext(None)
    else:
        from cep.ui.live import live_view  # the standard library's HTTP server, when asked

        view = live_view(args.ui)
    with view as on_workdir:
        result = run(module, run_config(args, dead_path), on_workdir=on_workdir)
    elapsed = time.perf_counter() - started
    print(summary_text(result, elapsed, dead_path), file=sys.stderr)
    if args.json:
        strategy = args.strategy if args.runner == "spark" else None
        Path(args.json).write_text(json.dumps(
            summary_data(result, elapsed, dead_path, strategy), indent=2) + "\n")
    balance = balance_text(args.strategy, result.metrics) if args.runner == "spark" else None
    if balance:
        print(balance, file=sys.stderr)
    for line in quality_lines(result.quality):
        print(line, file=sys.stderr)
    return 0


def follow_warnings(module: ir.CompiledModule) -> list[str]:
    """What a ``--follow`` run will never report: MATCH_RECOGNIZE matches that end only
    at the end of the input (``$``), which an unbounded input never reaches."""
    return [f"warning: rule '{rule.name}': its PATTERN's $ matches only at the end of the "
            "input, which a --follow run never reaches: those matches are never reported"
            for rule in module.stateful
            if isinstance(rule, ir.MatchRecognizeRule) and rule.waits_for_the_end]


def run_config(args: argparse.Namespace, dead_path: str) -> RunConfig:
    """The run that ``cep run``'s options ask for. ``--format console`` is standard
    output in JSON lines, whatever ``--output`` says. The local runner has no engines to
    slow down, and reads no ``--slow-engine``."""
    console = args.format == "console"
    slow = slowdown(args.slow_engine) if args.runner == "spark" else {}
    engines, bounds = args.engines
    if bounds == AUTO:  # bare auto: the bounds depend on the master
        bounds = (1, local_slots(args.master) or DEFAULT_CLUSTER_MAX)
        engines = 1
    return RunConfig(
        tuple(args.input), runner=args.runner,
        output=Output(None if console else args.output, "jsonl" if console else args.format),
        engines=engines, autoscale=bounds, autoscale_band=args.autoscale_band,
        batch_size=args.batch_size, master=args.master,
        checkpoint=args.checkpoint, follow=args.follow, trigger_s=args.trigger_interval,
        dead_letter=dead_path, metrics_file=args.metrics,
        max_record_bytes=args.max_record_bytes, verbose=args.verbose,
        progress=not args.quiet, strategy=args.strategy, threshold=args.threshold,
        stat_window=args.stat_window, capacity=args.capacity, load=args.load,
        moves=args.moves, hash=args.hash,
        slowdown=slow, mongo_uri=args.mongo_uri,
        mongo_timeout=args.mongo_timeout, starting_offsets=args.starting_offsets,
        idle_timeout_s=args.idle_timeout,
        late=args.late, udf_timeout=args.udf_timeout)


AUTO = (0, 0)  # ``--engines auto`` without bounds, resolved once the master is known


def engines_option(text: str) -> tuple[int, tuple[int, int] | None]:
    """``--engines``: ``N`` (a fixed count), ``auto`` or ``auto:LO-HI`` (the count the
    run starts at, LO, and the policy's bounds)."""
    text = text.strip()
    if text.isdigit() and int(text) >= 1:
        return int(text), None
    if text == "auto":
        return 1, AUTO
    match = re.fullmatch(r"auto:(\d+)-(\d+)", text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"not an engine count: {text!r} (a number, auto or auto:LO-HI, e.g. auto:2-8)")
    lo, hi = int(match.group(1)), int(match.group(2))
    if not 1 <= lo <= hi <= MAX_ENGINES:
        raise argparse.ArgumentTypeError(
            f"auto:{lo}-{hi}: the bounds must be 1 <= LO <= HI <= {MAX_ENGINES}")
    return lo, (lo, hi)


def _band(text: str) -> tuple[float, float]:
    """``--autoscale-band V:U``: two shares, 0 <= V < U."""
    try:
        lower, upper = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not V:U shares like 0.3:0.8: {text!r}") from None
    if not 0 <= lower < upper:
        raise argparse.ArgumentTypeError(f"the band must have 0 <= V < U, got {text!r}")
    return lower, upper


def _idle_timeout(text: str) -> float:
    """``--idle-timeout``'s seconds: a number at or above 0, or ``inf`` (never idle)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text!r}")
    return value
