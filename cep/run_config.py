"""What a run is asked to do (:class:`RunConfig`, :class:`Output`) and what it did
(:class:`RunResult`): the one vocabulary of the command line, the Python API, the
benches, the reference runner's path and Spark's runtime.

It imports nothing of cep (and nothing beyond the standard library) because it sits
below every layer that reads it: Spark's runtime takes a ``RunConfig``, and so does
:func:`cep.run.run` above it, and the command line's parser reads the defaults here
without loading the runners.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

RUNNERS = ("spark", "local")
#: KG's hashes (``migration.hashing.HASHES``, which this layer does not import)
HASHES = ("mod", "jump")
DEFAULT_MASTER = "local[*]"  # Spark in this process, a task slot per core
DEFAULT_ENGINES = 5
#: Events per micro-batch on Spark: the most a batch takes (a live input's batch holds
#: what has arrived, up to this). Why this many: a micro-batch costs Spark about 0.7 s
#: whatever its events (one with none, on 2 cores), so batches of 100,000 spent about
#: half their time on that. Measured on 2 quiet cores, before the resident engines
#: (bench/results/superseded/speed.json, no longer on docs/performance.md): flights
#: ``#length(5)``, 3.34M events, 56 s at 100,000, 41 s at 250,000, 31 s at 500,000
#: (Apache Flink 2.3: 41 s); FSD over 1M tweets 63, 48 and 40 s. With the resident
#: engines, measured 2026-11-29 on 2 cores (load 2-4), whole ``cep run`` processes in
#: interleaved rounds, medians: the same flights rule 13.5 s at 500,000, 12.5 s at 1M,
#: 12.1 s at 2M and 4M; a MATCH_RECOGNIZE rule on them 13.3, 12.7 and 11.9 s; FSD over
#: 2M tweets 30.4, 27.3 and 26.0 s, its process tree's peak 4.2, 4.1 and 4.7 GB. 1M
#: takes most of the gain without the larger peak, and a bounded input of 3M events
#: still gives the Balancer three batches.
DEFAULT_BATCH_SIZE = 1_000_000
#: Seconds MongoDB may take to be found, to connect and to answer one operation. Long
#: enough to ride out a replica-set election (~12 s), short enough that an outage stops
#: the run in well under a minute.
DEFAULT_MONGO_TIMEOUT = 30.0
# A followed run looks for new input this often. 0.1 s rather than 1 s: on a followed
# file a per-key rule's p50 latency fell from 0.81 to 0.38 s (bench/results/latency.json),
# and an idle run's CPU rose from 0.8% to 2.1% of a core (driver, JVM and workers)
DEFAULT_TRIGGER_S = 0.1
#: How long a Kafka partition may have nothing new, while others advance, before the
#: watermark stops waiting for it (``--idle-timeout``; ``cep.io.inputlog``'s idle marks):
#: long enough for a quiet moment of a live partition, short enough that a partition
#: that stopped delays time-driven results by about a second.
DEFAULT_IDLE_TIMEOUT_S = 1.0
DEFAULT_THRESHOLD = 15.0  # the engines' load RSTD (%) above which the Balancer acts
#: What becomes of an event whose timestamp is below the watermark when it arrives:
#: processed as it comes (the default, as Esper does with every event it is sent), or
#: dropped to the dead letters (kind ``late``), as Flink drops late events.
LATE_POLICIES = ("process", "drop")
STARTING_OFFSETS = ("earliest", "latest")  # where a Kafka input is first read from
#: Seconds one call of a user function may take before its record is a dead letter
#: (``cep.engine.udf_isolation``, which runs functions outside the job's process): far
#: above what a function a rule calls per batch should take, short enough that a hang
#: costs a batch seconds, not the run. 0: functions run in the job's process, unguarded.
DEFAULT_UDF_TIMEOUT = 10.0


@dataclass(frozen=True)
class Output:
    """Where the events go. ``path`` None: standard output. A path ending in ``.jsonl``,
    ``.json`` or ``.ndjson`` (format jsonl): one file, appended per batch. Any other
    path, and every Parquet output: a directory of parts, one per batch and engine.
    ``kafka://…/TOPIC`` or ``mongodb://…/DB.COLLECTION``: a service, written per batch
    exactly once (Spark runner). ``callback``: Python code gets each batch's events as
    JSON-lines text in reference order (Spark runner). ``collect``: the run hands its
    events back in :attr:`RunResult.records` (in reference order) and writes none."""

    path: str | None = None
    fmt: str = "jsonl"
    callback: Callable[[int, bytes], None] | None = None
    collect: bool = False


InputSpecs = str | PathLike | Mapping[str, "str | PathLike"] | Sequence["str | PathLike"]


@dataclass(frozen=True)
class RunConfig:
    """One run of a rule module: its inputs, the runner and everything it is tuned by.

    ``inputs`` are ``--input`` specs (``SRC`` or ``STREAM=SRC``: a path, directory,
    glob, generator or Kafka URI), given as one spec, a list of them, or a mapping of
    input streams to sources; they are kept as a tuple of specs. ``batch_size`` None:
    Spark's :data:`DEFAULT_BATCH_SIZE`, or for the local runner every event at once.
    ``max_record_bytes`` None: the readers' own bound (1 MiB). ``strategy`` picks the
    routing on Spark: ``kg`` (key grouping), ``pkg`` (partial key grouping, splits
    keys) or a key-moving strategy (``dlb-h``, ``dlb-l``, ``lptf``, …) whose moved keys'
    state travels through MongoDB (``mongo_uri``, or an embedded server);
    ``mongo_timeout`` bounds each wait on MongoDB unless the URI sets it itself.
    ``follow``: run until stopped, picking up new files, appended lines and Kafka
    records every ``trigger_s`` seconds. ``starting_offsets`` (``earliest`` or
    ``latest``) is where a Kafka partition's first read begins; a partition with nothing
    new for ``idle_timeout_s`` seconds while others advance stops holding the watermark
    back (``cep.io.event_time``). ``slowdown`` makes
    engine E's processing that many times slower (to try ``capacity="measured"``).
    ``spark_conf``: Spark settings over cep's own for the session the run creates (a
    standalone cluster's driver address and executor sizes; ``cep.spark.cluster.standalone``).
    ``udf_timeout``: seconds one call of a user function may take; a call that hangs
    longer, or that ends its process, dead-letters its record (0: functions run in the
    job's process, unguarded; ``cep.engine.udf_isolation``). ``autoscale``: ``(LO,
    HI)``, the engine count follows the load between them (``--engines auto:LO-HI``,
    ``splitter.autoscale``; Spark runner, key-preserving strategies)."""

    inputs: tuple[str, ...]
    runner: str = "spark"
    output: Output = field(default_factory=Output)
    engines: int = DEFAULT_ENGINES
    batch_size: int | None = None
    master: str = DEFAULT_MASTER
    checkpoint: str | None = None
    follow: bool = False
    trigger_s: float = DEFAULT_TRIGGER_S
    dead_letter: str | None = None
    metrics_file: str | None = None
    max_record_bytes: int | None = None
    verbose: bool = False  # Spark's own logs
    progress: bool = True  # a line per batch on standard error
    strategy: str = "kg"
    threshold: float = DEFAULT_THRESHOLD
    stat_window: int = 1  # batches of per-key load the Balancer looks at
    capacity: str = "equal"  # equal shares, or shares from measured busy seconds
    load: str = "events"  # a key's load for the Balancer: its events, or its measured cost
    moves: str = "pays"  # move keys only when it saves more than it costs, or "always"
    # KG's hash (migration.hashing.HASHES): "mod" (hash mod N) or "jump" (Lamping and
    # Veach's jump consistent hash, which moves the fewest keys when the engine count
    # changes); None: the run's, recorded in its run directory (mod for a new run)
    hash: str | None = None
    slowdown: Mapping[int, float] = field(default_factory=dict)
    mongo_uri: str | None = None
    mongo_timeout: float = DEFAULT_MONGO_TIMEOUT
    starting_offsets: str = "earliest"
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    late: str = "process"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    udf_timeout: float = DEFAULT_UDF_TIMEOUT
    # ``--engines auto:LO-HI``: (LO, HI), the policy's bounds (``splitter.autoscale``);
    # the run starts at ``engines`` (LO) and its state partitions are HI's
    autoscale: tuple[int, int] | None = None
    # its load band [v, u]: an engine's busy share below v is idle, above u overloaded
    # (``splitter.autoscale.DEFAULT_LOWER``, ``DEFAULT_UPPER``; this layer imports none)
    autoscale_band: tuple[float, float] = (0.3, 0.8)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", input_specs(self.inputs))
        if self.runner not in RUNNERS:
            raise ValueError(f"runner must be 'spark' or 'local', not {self.runner!r}")
        if self.late not in LATE_POLICIES:
            raise ValueError(f"late must be 'process' or 'drop', not {self.late!r}")
        if self.hash is not None and self.hash not in HASHES:
            raise ValueError(f"hash must be 'mod' or 'jump', not {self.hash!r}")
        if not self.udf_timeout >= 0:
            raise ValueError(f"udf_timeout must be >= 0 seconds, not {self.udf_timeout!r}")
        if self.autoscale is not None:
            lo, hi = self.autoscale
            if not 1 <= lo <= hi or not lo <= self.engines <= hi:
                raise ValueError(f"autoscale bounds must be 1 <= LO <= engines <= HI, got "
                                 f"{lo}-{hi} with {self.engines} engines")
        lower, upper = self.autoscale_band
        if not 0 <= lower < upper:
            raise ValueError(f"the autoscale band must have 0 <= v < u, got {lower}:{upper}")


def input_specs(inputs: InputSpecs) -> tuple[str, ...]:
    """``--input`` specs from one spec, several, or a mapping of streams to sources."""
    if isinstance(inputs, str | PathLike):
        return (str(inputs),)
    if isinstance(inputs, Mapping):
        return tuple(f"{stream}={source}" for stream, source in inputs.items())
    return tuple(str(spec) for spec in inputs)


@dataclass(frozen=True)
class RunResult:
    """What a run did: per-batch metrics (on Spark the last batches of this process,
    see ``cep.spark.runtime.METRICS_KEPT``), totals of this process, detection quality
    against a generator's ground truth (None without one), output rows per rule, and
    wall-clock seconds: ``seconds`` the whole call, on Spark ``session_s`` to start it
    and ``first_batch_s`` from the query's start to the first batch's commit."""

    metrics: list[dict]
    totals: dict[str, int]
    seconds: float
    session_s: float = 0.0
    first_batch_s: float = 0.0
    workdir: Path | None = None  # a Spark run's directory, kept only with a checkpoint
    slots: int = 1  # tasks the cluster runs at once (Spark's default parallelism)
    outputs_per_rule: dict[str, int] = field(default_factory=dict)
    quality: dict | None = None
    records: list[dict] | None = None  # the events, for an ``Output(collect=True)``

    @property
    def events(self) -> int:
        return self.totals.get("events_in", 0)


def is_uri_output(path: str | None) -> bool:
    """An output that is a service, not a file or directory (here, not in
    ``cep.transports.outputs``, whose Kafka and MongoDB clients a local run does not
    import)."""
    return path is not None and path.startswith(("kafka://", "mongodb://", "mongodb+srv://"))
