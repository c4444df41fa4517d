"""From ``--input`` arguments to typed event tables, for the in-process reference runner.

``--input PATH`` feeds the module's only input stream; with several input streams each
argument is ``STREAM=PATH``. The inputs are listed into the same input log the Spark
runtime uses (``inputlog.py``) and read segment by segment with the same range reader,
so every event gets the same sequence number (its place in the input) in both runners.
Malformed records go to the dead-letter file; the counts come back so the run summary
can report them. This loads the whole input: it is for the reference runner, tests and
small inputs; the Spark runtime never does this.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cep.engine.table import NULL_SUFFIX, SEQ, SUB, Table, concat, empty
from cep.io.deadletter import DeadLetter
from cep.io.event_time import ClockPiece, end_of_log
from cep.io.inputlog import (
    GENERATOR_KINDS,
    KAFKA_KIND,
    KAFKA_URI,
    InputLog,
    InputLogError,
    Segment,
    generator_kind,
)
from cep.io.readers.ranges import read_range
from cep.io.readers.reader import MAX_RECORD_BYTES
from grammar import ir
from grammar.field_reads import unread_fields

if TYPE_CHECKING:  # Kafka's client is imported on demand only
    from cep.io.kafka_input import KafkaFetch

TWEETS_FIELDS = ("id", "ts", "user", "lang", "text", "retweets", "topic")


class InputError(Exception):
    """An input that cannot be read at all (missing path, unknown stream name)."""


@dataclass
class LoadedInputs:
    tables: dict[str, Table]
    accepted: int
    rejected: int
    skipped: int
    truth_ids: np.ndarray | None = None  # a generator's ground truth, when it has one
    # what each segment tells the watermark (``event_time.py``), and the seq at which
    # the input ends (after every event: where pending timers fire)
    clock: list[ClockPiece] = field(default_factory=list)
    end_seq: int = 0
    segments: dict[int, Segment] = field(default_factory=dict)  # by ordinal


def parse_input_specs(module: ir.CompiledModule, specs: list[str]) -> dict[str, str]:
    """Map each input stream to its source from ``--input`` arguments (streams in the
    order the rule file declares them)."""
    inputs = module.input_streams
    if not inputs:
        raise InputError("the rule file declares no input stream (CREATE SCHEMA)")
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, source = spec.partition("=")
        if sep and name in module.streams:
            if name not in inputs:
                raise InputError(f"'{name}' is a derived stream; feed an input stream: "
                                 f"{', '.join(inputs)}")
            stream = name
        elif len(inputs) == 1:
            stream, source = inputs[0], spec
        else:
            raise InputError(f"several input streams ({', '.join(inputs)}): write "
                             f"--input STREAM=PATH")
        if stream in out:
            raise InputError(f"stream '{stream}' is given two inputs")
        out[stream] = source
    for stream, source in out.items():
        check_generator_fields(module.streams[stream], source)
    return {name: out[name] for name in inputs if name in out}


def check_generator_fields(stream: ir.StreamDef, source: str) -> None:
    """A generator provides fixed fields: a schema asking for others is an input error."""
    if generator_kind(source) is None:
        return
    missing = [name for name, _ in stream.fields if name not in TWEETS_FIELDS]
    if missing:
        raise InputError(f"--input {source} has no field {', '.join(missing)} for stream "
                         f"{stream.name}; it provides {', '.join(TWEETS_FIELDS)}")


def load_inputs(module: ir.CompiledModule, specs: list[str],
                dead_letter_path: str | None,
                max_record_bytes: int = MAX_RECORD_BYTES) -> LoadedInputs:
    """Read every input, dead-lettering bad records (records over ``max_record_bytes``
    among them), each event numbered by its place in the input."""
    segments = input_segments(module, specs)
    with DeadLetter(dead_letter_path) as dead:
        return load_segments(module, segments, dead, max_record_bytes)


def input_segments(module: ir.CompiledModule, specs: list[str]) -> list[Segment]:
    """The segments of every input, in log order (what :func:`load_inputs` reads whole
    and ``cep.io.input_chunks`` piece by piece)."""
    sources = parse_input_specs(module, specs)
    errors: tuple[type[Exception], ...] = (InputLogError, ValueError)
    if any(source.startswith(KAFKA_URI) for source in sources.values()):
        from cep.transports.address import KafkaTransportError  # Kafka's client: on demand

        errors = (*errors, KafkaTransportError)
    log = InputLog(None, sources, follow=False)
    try:
        log.discover(first=True)
    except errors as err:
        raise InputError(str(err)) from None
    return [log.segments[o] for o in sorted(log.segments)]


def load_segments(module: ir.CompiledModule, segments: list[Segment], dead: DeadLetter,
                  max_record_bytes: int = MAX_RECORD_BYTES) -> LoadedInputs:
    """The events of the given segments (in their order) as the reference runner's
    tables: also how a followed run's input log is replayed in one process."""
    tables, clock, truth = read_ranges(module, [(s, s.start, s.end) for s in segments],
                                       dead, max_record_bytes)
    accepted = sum(len(t[SEQ]) for t in tables.values())
    truth_ids = np.concatenate(truth) if truth else None
    end = end_of_log(segments[-1].ordinal + 1) if segments else 0
    return LoadedInputs(tables, accepted, dead.count, dead.skipped, truth_ids, clock, end,
                        {s.ordinal: s for s in segments})


def read_ranges(module: ir.CompiledModule, ranges: list[tuple[Segment, int, int]],
                dead: DeadLetter, max_record_bytes: int = MAX_RECORD_BYTES,
                reading: ir.CompiledModule | None = None
                ) -> tuple[dict[str, Table], list[ClockPiece], list[np.ndarray]]:
    """Records [lo, hi) of each segment in ``ranges`` (in their order): each input
    stream's events (every stream present, maybe empty), what the ranges tell the clock,
    and a generator's ground truth (the ids of its first stories). Whole segments for
    :func:`load_segments`, a chunk of them for ``cep.io.input_chunks``. ``reading``:
    the module with the fields its rules read (``grammar.field_reads.reading_module``),
    whose streams' fields the tables get (the others are checked, not kept); by default
    every field of ``module``."""
    reading = reading or module
    parts: dict[str, list[Table]] = {name: [] for name in module.input_streams}
    truth: list[np.ndarray] = []
    clock: list[ClockPiece] = []
    fetched = kafka_fetch(ranges)
    for segment, lo, hi in ranges:
        stream, kept = module.streams[segment.stream], reading.streams[segment.stream]
        frame, flags = read_segment(segment, lo, hi, stream, dead, max_record_bytes,
                                    fetched, unread_fields(module, reading, stream.name))
        table = frame_to_table(frame, kept)
        parts[segment.stream].append(table)
        clock.append(ClockPiece.of(segment, lo, table, kept))
        if flags is not None:
            truth.append(frame["id"].to_numpy()[flags])
        del frame
    tables = {name: concat(tabs) or empty(list(reading.streams[name].fields), (SEQ, SUB))
              for name, tabs in parts.items()}
    return tables, clock, truth


def read_segment(segment: Segment, lo: int, hi: int, stream: ir.StreamDef, dead: DeadLetter,
                 max_record_bytes: int = MAX_RECORD_BYTES, fetched: KafkaFetch | None = None,
                 unread: frozenset[str] = frozenset()
                 ) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Records [lo, hi) of a segment as a typed frame whose ``seq`` is each record's
    sequence number, and (for a generator with a ground truth) which rows are first
    stories. The one reader of both runners (the Spark source calls it on executors).
    ``fetched``: the Kafka records of the caller's pieces, fetched together
    (:class:`cep.io.kafka_input.KafkaFetch`). ``unread``: fields a file's or a Kafka
    topic's reader checks but may leave out of the frame (no rule reads them); a
    generator's frames keep every field."""
    flags = None
    if segment.kind in GENERATOR_KINDS:
        from cep.io.tweets.generator import tweets_range

        frame, flags = tweets_range(_tweets_plan(segment.path), lo, hi)
        offsets = frame["seq"].to_numpy()
    elif segment.kind == KAFKA_KIND:
        from cep.io.kafka_input import read_kafka_range  # Kafka's client: on demand

        frame = read_kafka_range(segment.path, lo, hi, stream, dead, max_record_bytes,
                                 fetched, unread)
        offsets = frame["offset"].to_numpy()
    else:
        frame = read_range(segment.path, segment.kind, lo, hi, stream, dead,
                           max_record_bytes=max_record_bytes, final=segment.final,
                           unread=unread)
        offsets = frame["offset"].to_numpy()
    frame["seq"] = segment.seq_base + (offsets - segment.start)
    return frame, flags


def kafka_fetch(pieces: list[tuple[Segment, int, int]]) -> KafkaFetch | None:
    """One fetch per Kafka partition for these pieces (None when none is Kafka's)."""
    ranges = [(s.path, lo, hi) for s, lo, hi in pieces if s.kind == KAFKA_KIND and hi > lo]
    if not ranges:
        return None
    from cep.io.kafka_input import KafkaFetch  # Kafka's client: on demand

    return KafkaFetch(ranges)


@functools.lru_cache(maxsize=4)
def _tweets_plan(spec: str) -> dict:
    """A generator's plan, made once per process and spec (executors read many ranges)."""
    from cep.io.tweets.plan import tweets_plan

    return tweets_plan(spec)


def frame_to_table(frame: pd.DataFrame, stream: ir.StreamDef) -> Table:
    """A typed frame from :func:`read_segment` as an engine table."""
    table: Table = {SEQ: frame["seq"].to_numpy(dtype=np.int64)}
    table[SUB] = np.zeros(len(frame), dtype=np.int64)
    for name, t in stream.fields:
        column = frame[name]
        table[name] = column.to_numpy(dtype=object) if t == "string" else column.to_numpy()
        if name + NULL_SUFFIX in frame:
            table[name + NULL_SUFFIX] = frame[name + NULL_SUFFIX].to_numpy(dtype=bool)
    return table
