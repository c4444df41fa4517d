"""``cep verify``: run several routing strategies on Spark and compare each with KG.

Key grouping defines the right events; a key-preserving strategy (one that moves whole
keys with their state) must produce exactly the same multiset of events. PKG splits keys
and may differ: the table shows by how much (missing and extra events).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from cep.provenance import load_average, machine
from cep.run import run as run_rules
from cep.run_config import Output, RunConfig, RunResult
from cep.tables import HEADERS, columns, count, pct, seconds
from grammar import ir
from splitter.policies.names import KEY_PRESERVING
from splitter.policies.stats import rstd

# placed by hashes alone, never by the Balancer: the measure of a key's load is not theirs
PLACED_WITHOUT_LOAD = frozenset({"kg", "pkg"})


@dataclass
class StrategyResult:
    strategy: str
    events: int
    equal_to_kg: bool
    missing: int
    extra: int
    avg_rstd: float
    max_rstd: float
    rebalances: int
    keys_moved: int
    state_bytes_moved: int
    seconds: float
    processed: int = 0
    events_per_s: float = 0.0
    load_moved: int = 0
    makespan_s: float = 0.0  # Σ over batches of the busiest engine's seconds
    batch_makespan_s: list[float] = field(default_factory=list)
    # the same in CPU seconds, which other tasks on a shared machine do not inflate
    makespan_cpu_s: float = 0.0
    batch_makespan_cpu_s: list[float] = field(default_factory=list)
    # mean over batches of the RSTD of the engines' CPU seconds: the balance of the work,
    # beside ``avg_rstd``, the balance of the events that the strategies equalise
    avg_cpu_rstd: float = 0.0
    # how much shorter the engines' part of the run could get at most on this cluster's
    # task slots if a key placement spread the batches perfectly (``balance_headroom``),
    # by events and by the engines' CPU seconds; 1.0: no placement can shorten it
    headroom_events: float = 1.0
    headroom_cpu: float = 1.0
    # the two sums of ``balance_headroom`` by events: this run's Σ_b max(W_b/slots, w_b)
    # and the floor Σ_b max(W_b/slots, k_b) no placement can beat; against KG's, what
    # the strategy captured of the headroom (``headroom_captured``)
    events_bound: float = 0.0
    events_floor: float = 0.0
    move_s: float = 0.0  # the engines' export and import seconds: what moving keys cost
    stage_s: dict[str, float] = field(default_factory=dict)  # Σ over batches and engines
    # where the engines' batches found their state, Σ over batches (``resident.py``):
    # resident, caught_up, rebuilt, new, and the log entries they read
    keys_restored: dict[str, int] = field(default_factory=dict)
    wall_s: dict[str, float] = field(default_factory=dict)  # the run's wall clock, by phase
    engines: int = 0
    load: str = "events"  # the Balancer's per-key load: events, or measured cost
    # per batch, for throughput over time (the DLB paper's Figures 3 and 4): seconds from
    # the query's start to the batch's commit, its events and its engines' load RSTD
    batch_elapsed_s: list[float] = field(default_factory=list)
    batch_events: list[int] = field(default_factory=list)
    batch_rstd: list[float] = field(default_factory=list)
    # each batch's heaviest key's events: no key-preserving placement gives the busiest
    # engine less (the speedup bench's bound on more nodes)
    batch_heaviest_key: list[int] = field(default_factory=list)
    keys_known: int = 0  # keys the Balancer had seen by the end (key-moving strategies)
    # the machine's 1, 5 and 15 minute load averages as the run started: on a shared
    # machine a run's figures move with what else runs there
    load_average: list[float] = field(default_factory=list)
    round: int = 1  # of ``cep bench --rounds``: every strategy runs once a round, in turn
    # on an emulated cluster (``cep bench --nodes``): each node's CPU seconds over the run
    # and the seconds its quota held it back, from its cgroup; how much of a run the
    # nodes worked against the driver's serial part (the speedup bench's bound)
    node_cpu_s: list[float] = field(default_factory=list)
    node_throttled_s: list[float] = field(default_factory=list)
    # the whole machine's busy CPU seconds from the first batch's commit to the last
    # (the window ``batch_elapsed_s`` spans; ``cep.machine_cpu``): with the cores, what
    # the run's rate costs the machine, which bounds what more nodes can add
    machine_window_cpu_s: float | None = None

    @property
    def key_preserving(self) -> bool:
        return self.strategy in KEY_PRESERVING

    @property
    def label(self) -> str:
        """The strategy, and the load it balanced where that is not the paper's events."""
        return self.strategy if self.load == "events" else f"{self.strategy}/{self.load}"


def _multiset(records: list[dict]) -> Counter:
    return Counter(json.dumps(r, sort_keys=True) for r in records)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` between runs too (a run's own handlers take over
    while it runs, and set the same event): where the default would kill the process,
    Spark's session and an emulated cluster would be left to their atexit hooks."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _stop_if_asked(stop: threading.Event) -> None:
    if stop.is_set():
        raise KeyboardInterrupt("stopped by a signal")


#: how a comparison runs one strategy: :func:`cep.run.run`'s signature (``cep.testing``
#: passes its in-process engines)
Runner = Callable[[ir.CompiledModule, RunConfig, threading.Event], RunResult]


def verify(module: ir.CompiledModule, config: RunConfig, strategies: list[str],
           loads: Sequence[str] = (), rounds: int = 1, warm_up: Sequence[str] = (),
           progress: Callable[[str], None] | None = None,
           runner: Runner = run_rules) -> list[StrategyResult]:
    """Run every strategy (KG first, as the reference) with ``config`` otherwise, and
    compare. A strategy that moves keys runs once per measure of a key's load in
    ``loads`` (default ``config.load``); KG and PKG, which balance no load, run once.
    With ``rounds`` the whole sequence runs that many times, the strategies in turn, so
    that what else the machine runs weighs on all of them alike; every run is compared
    with the first KG's events. ``warm_up``: the inputs of an unmeasured KG run first
    (none: no such run). The events are compared as multisets, so they are read back
    into this process: verification is for bounded inputs. ``progress`` is told of each
    run as it ends (a comparison of many runs takes many minutes). SIGINT or SIGTERM
    ends the run in flight as it ends ``cep run``, and then the whole comparison, with
    ``KeyboardInterrupt``: a run cut short is never compared as if it were whole.
    ``runner`` runs each strategy (default :func:`cep.run.run`)."""
    order = run_order(strategies, tuple(loads) or (config.load,), rounds)
    stop = threading.Event()  # set by SIGINT/SIGTERM, in a run or between runs
    with _stop_on_signals(stop):
        if warm_up:
            runner(module, dataclasses.replace(config, inputs=tuple(warm_up),
                                               strategy="kg", output=Output(collect=True)),
                   stop)
        results = _compare(module, config, order, stop, progress, runner)
    return [r for r in results if r.strategy in strategies]


def _compare(module: ir.CompiledModule, config: RunConfig,
             order: list[tuple[int, str, str]], stop: threading.Event,
             progress: Callable[[str], None] | None, runner: Runner) -> list[StrategyResult]:
    """The runs of :func:`verify`, in ``order``, each compared with the first."""
    results: list[StrategyResult] = []
    reference: Counter | None = None
    for done, (turn, name, load) in enumerate(order, 1):
        _stop_if_asked(stop)
        machine_load = load_average()
        started = time.perf_counter()
        if progress is not None:  # a run on Spark says nothing until it ends
            progress(f"[{done}/{len(order)}] round {turn}, {name} ({load}): running")
        run = runner(module, dataclasses.replace(config, strategy=name, load=load,
                                                 output=Output(collect=True)), stop)
        _stop_if_asked(stop)
        records = run.records
        assert records is not None  # collected
        got = _multiset(records)
        if reference is None:
            reference = got
        rstds = batch_rstds(run.metrics)
        slowest = [max(m["busy_s_per_engine"], default=0.0) for m in run.metrics]
        slowest_cpu = [max(m.get("cpu_s_per_engine", []), default=0.0) for m in run.metrics]
        stages: Counter = Counter()
        restored: Counter = Counter()
        for m in run.metrics:
            stages.update(m.get("stage_s", {}))
            restored.update(m.get("keys_restored", {}))
            stages["state_commit"] += m.get("spark_ms", {}).get("state_commit", 0) / 1000
        events_bound, events_floor = balance_bounds(
            [m["rows_per_engine"] for m in run.metrics], run.slots,
            [m.get("heaviest_key_rows", 0) for m in run.metrics])
        results.append(StrategyResult(
            strategy=name,
            events=len(records),
            equal_to_kg=got == reference,
            missing=sum((reference - got).values()),
            extra=sum((got - reference).values()),
            avg_rstd=round(float(rstds.mean()), 2),
            max_rstd=round(float(rstds.max()), 2),
            rebalances=sum(1 for m in run.metrics if m.get("rebalanced")),
            keys_moved=sum(m.get("exported_keys", 0) for m in run.metrics),
            state_bytes_moved=sum(m.get("exported_bytes", 0) for m in run.metrics),
            seconds=round(time.perf_counter() - started, 1),
            processed=run.events,
            events_per_s=round(run.events / max(run.seconds, 1e-9), 1),
            load_moved=sum(m.get("load_moved", 0) for m in run.metrics),
            makespan_s=round(sum(slowest), 3),
            batch_makespan_s=[round(x, 4) for x in slowest],
            makespan_cpu_s=round(sum(slowest_cpu), 3),
            batch_makespan_cpu_s=[round(x, 4) for x in slowest_cpu],
            avg_cpu_rstd=round(float(np.mean([rstd(m.get("cpu_s_per_engine", []))
                                               for m in run.metrics] or [0.0])), 2),
            headroom_events=headroom_ratio(events_bound, events_floor),
            events_bound=events_bound,
            events_floor=events_floor,
            move_s=round(stages.get("export", 0.0) + stages.get("import", 0.0), 3),
            headroom_cpu=balance_headroom(
                [m.get("cpu_s_per_engine", []) for m in run.metrics], run.slots),
            stage_s={k: round(v, 3) for k, v in stages.items()},
            keys_restored=dict(restored),
            wall_s=wall_times(run),
            engines=config.engines,
            load=load,
            batch_elapsed_s=elapsed_times(run),
            batch_events=[m["events_in"] for m in run.metrics],
            batch_rstd=[m["rstd"] for m in run.metrics],
            batch_heaviest_key=[m.get("heaviest_key_rows", 0) for m in run.metrics],
            keys_known=max((m.get("keys", 0) for m in run.metrics), default=0),
            load_average=machine_load,
            round=turn,
        ))
        if progress is not None:
            last = results[-1]
            progress(f"[{done}/{len(order)}] round {turn}, {name} ({load}): "
                     f"{seconds(last.seconds)}, {count(last.events_per_s)} events/s, "
                     f"{'events = KG' if last.equal_to_kg else 'events DIFFER from KG'}")
    return results


def run_order(strategies: Sequence[str], loads: Sequence[str], rounds: int
              ) -> list[tuple[int, str, str]]:
    """(round, strategy, load measure) of each run, in the order :func:`verify` runs
    them: KG first, each key-moving strategy once per measure, round after round."""
    once = [("kg", "events"), *[(s, load) for s in strategies if s != "kg"
                                for load in (("events",) if s in PLACED_WITHOUT_LOAD
                                             else loads)]]
    return [(turn, name, load) for turn, (name, load)
            in itertools.product(range(1, rounds + 1), once)]


def batch_rstds(metrics: list[dict]) -> np.ndarray:
    """The load RSTD of each batch that read events: the end of the input's batch (where
    all time passes) reads none, and its 0% would flatter every strategy's average."""
    read = [m["rstd"] for m in metrics if m.get("events_in", 1)]
    return np.array(read or [m["rstd"] for m in metrics] or [0.0], dtype=float)


def balance_headroom(batches: list[list[float]], slots: int,
                     heaviest: Sequence[float] = ()) -> float:
    """The most a better key placement could shorten the engines' part of a run on
    ``slots`` task slots: Σ_b max(W_b / slots, w_b) / Σ_b max(W_b / slots, k_b), with
    W_b a batch's work summed over its engines, w_b its busiest engine's and k_b its
    heaviest key's (``heaviest``, 0 where not known).

    Neither the engines' tasks nor any placement can finish a batch before W_b / slots,
    the busiest engine cannot finish before w_b, and no placement that keeps a key on one
    engine splits k_b; a placement moves work, it does not remove it. So when the
    busiest engine holds less than 1/slots of the work (five engines on two cores, the
    busiest under 40% of the tweets), the ratio is 1.0: the cores bound the batch, and
    balancing cannot raise throughput there, whatever the RSTD. On a cluster with a core
    per engine the ratio is KG's busiest engine over the mean, or over the heaviest key
    where one key holds more than a mean engine's share (Zipf 1.5 over 4,096 keys gives
    the top key 39% of the tweets: at most 1.33x over KG's 51% on 5 engines)."""
    return headroom_ratio(*balance_bounds(batches, slots, heaviest))


def headroom_ratio(bound: float, floor: float) -> float:
    """The headroom of :func:`balance_bounds`' two sums (1.0: no work, nothing to gain)."""
    return round(bound / floor, 3) if floor else 1.0


def balance_bounds(batches: list[list[float]], slots: int,
                   heaviest: Sequence[float] = ()) -> tuple[float, float]:
    """The two sums of :func:`balance_headroom`: Σ_b max(W_b / slots, w_b), what this
    placement's busiest engines and the cores allowed, and Σ_b max(W_b / slots, k_b),
    what no key-preserving placement can beat."""
    bound = ideal = 0.0
    for b, loads in enumerate(batches):
        if len(loads):
            total = float(np.sum(loads))
            floor = float(heaviest[b]) if b < len(heaviest) else 0.0
            bound += max(total / slots, float(np.max(loads)))
            ideal += max(total / slots, floor)
    return bound, ideal


def headroom_captured(result: StrategyResult, kg: StrategyResult) -> float | None:
    """The share of KG's headroom by events that ``result``'s placement took: 1.0 when
    its busiest engines reached the floor no placement can beat, 0.0 when they were as
    long as KG's (negative: longer). None where KG had no headroom to take."""
    room = kg.events_bound - kg.events_floor
    if room <= 1e-9:
        return None
    return (kg.events_bound - result.events_bound) / room


def elapsed_times(run: RunResult) -> list[float]:
    """Seconds from the query's start to each batch's commit (the first batch's end is
    ``first_batch_s`` after the start, the others follow by their sinks' clocks)."""
    if not run.metrics:
        return []
    start = run.metrics[0]["wall_time"] - run.first_batch_s
    return [round(m["wall_time"] - start, 3) for m in run.metrics]


def wall_times(run: RunResult) -> dict[str, float]:
    """Where a run's wall clock went: Spark's start, the micro-batches (of which: query
    planning, the batch's job with cep's sink (``add_batch``), of that the sink and the
    busiest engine's task (``engines``), and the offset and commit logs), the rest."""
    spark = [m.get("spark_ms", {}) for m in run.metrics]
    batches = sum(s.get("trigger", 0) for s in spark) / 1000
    phases = {
        "session": run.session_s,
        "batches": batches,
        "planning": sum(s.get("planning", 0) for s in spark) / 1000,
        "add_batch": sum(s.get("add_batch", 0) for s in spark) / 1000,
        "engines": sum(max(m["busy_s_per_engine"], default=0.0) for m in run.metrics),
        "sink": sum(m.get("write_s", 0.0) for m in run.metrics),
        "logs": sum(s.get(k, 0) for s in spark for k in ("latest_offset", "get_batch",
                                                            "wal_commit", "commit_offsets"))
        / 1000,
    }
    phases["other"] = run.seconds - phases["session"] - batches
    return {k: round(v, 2) for k, v in phases.items()}


def run_name(r: StrategyResult, results: Sequence[StrategyResult]) -> str:
    """A run's name in the per-run tables: its label, and its round where there are
    several."""
    return f"{r.label}#{r.round}" if any(x.round > 1 for x in results) else r.label


def format_table(results: list[StrategyResult]) -> str:
    """``cep verify``'s table: each run's events against KG's, its balance and what it
    moved (figures as ``cep.tables`` writes them)."""
    rows = [[HEADERS["strategy"], HEADERS["events"], HEADERS["equal_to_kg"], "missing",
             "extra", HEADERS["avg_rstd"], HEADERS["max_rstd"], HEADERS["rebalances"],
             HEADERS["keys_moved"], HEADERS["state_bytes"], HEADERS["run_time"]]]
    for r in results:
        rows.append([run_name(r, results), count(r.events), "yes" if r.equal_to_kg else "NO",
                     count(r.missing), count(r.extra), pct(r.avg_rstd), pct(r.max_rstd),
                     count(r.rebalances), count(r.keys_moved), count(r.state_bytes_moved),
                     seconds(r.seconds)])
    return columns(rows)


def failures(results: list[StrategyResult]) -> list[str]:
    """Key-preserving strategies whose events differ from KG's (a broken promise)."""
    return [r.strategy for r in results if r.key_preserving and not r.equal_to_kg]


def to_json(results: list[StrategyResult], setup: dict[str, object]) -> str:
    """The results as one document: ``setup`` (what was run, and where: the inputs, the
    order of the tweets, the nodes), the date, the machine and its load averages, and each
    run's figures under ``results`` (what ``cep report`` draws the paper's figures from)."""
    document = {**setup, **machine(), "load_average_at_end": load_average(),
                "results": [asdict(r) for r in results]}
    return json.dumps(document, indent=2)
