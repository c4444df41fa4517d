"""The input log: which bytes of which files make up a stream, and in what order.

Every input stream's source (a file, a directory, a glob, a built-in generator such as
``tweets:n=…``, or Kafka topics ``kafka://HOST:PORT/TOPIC``) becomes a list of *segments*
``(ordinal, stream, kind, path, start, end)``: a byte range of a JSON-lines or CSV file,
a row range of a Parquet file or of a generator, an offset range of a Kafka partition
(chunks of at most 10,000 offsets, interleaved across partitions: ``kafka_input.py``).
Segments are numbered in the order they are found: at a run's start, every
stream's files in name order (streams in the order the rule file declares them); with
``--follow``, then, each listing's new files (in name order) and the lines appended to
files already seen (one new segment per grown file per listing).

Order and sequence numbers (docs/language.md#order). An event's place in the input is its
segment and its offset there (the byte offset of its line, or its row index), and its
sequence number is ``ordinal << 36 | (offset - segment start)``: increasing along the
log, the same whatever the batch size, engines, strategy or cluster, and computed by
whoever reads the record without counting the records before it. A segment holds at
most 2**36 bytes or rows (64 GiB); a larger file is cut into several.

The log is the only input state a run keeps (``segments.jsonl`` in the checkpoint,
append-only, one JSON line per segment, fsynced before Spark may plan with it): a
restarted run reads the same bytes for the same offsets. Files must therefore only
grow: a file that shrinks while it is followed stops the run with an error.

What the driver reads of an input: directory listings, file sizes, the first 64 KiB of a
text file (its bytes per line, to turn ``--batch-size`` events into bytes), the tail of
a grown file (to end a segment at its last newline: a half-written line waits), and a
Parquet file's footer. Never a record.
"""

from __future__ import annotations

import glob
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from cep.run_config import DEFAULT_IDLE_TIMEOUT_S

SEQ_SHIFT = 36
MAX_SEGMENT = 1 << SEQ_SHIFT
SAMPLE_BYTES = 64 << 10  # read at a text file's start to estimate its bytes per line
TAIL_STEP = 64 << 10  # read backwards in steps of this to find a grown file's last newline
GENERATOR_KINDS = ("tweets",)
KAFKA_URI = "kafka://"  # a Kafka source: segments of partitions' offsets (kafka_input.py)
KAFKA_KIND = "kafka"  # the kind of a Kafka partition's segment
TEXT_KINDS = ("json", "csv")
GRID_BYTES = 4 << 20  # text pieces are cut at these byte multiples of their segment
GRID_ROWS = 65_536  # row-addressed pieces (Parquet, Kafka) at these row multiples
# a generator's pieces are finer: a piece is a task's least unit, and a generated batch
# of 120,000 tweets cut at 65,536 rows gave Spark two input tasks whatever the nodes;
# cut at 16,384, FSD on 5 emulated nodes went from 1.58x (KG) and 1.81-2.02x (the
# others) a node's rate to 2.34x and 2.50-2.86x (bench/results/superseded/
# speedup-sweep6.json and bench/results/speedup-sweep7.json); generated rows cost
# nothing to address
GRID_GENERATED_ROWS = 16_384
_EXTENSIONS = {".jsonl": "json", ".json": "json", ".ndjson": "json", ".csv": "csv",
               ".parquet": "parquet", ".pq": "parquet"}


class InputLogError(Exception):
    """An input that cannot be logged: nothing at a path, a file that shrank, …"""


@dataclass(frozen=True)
class Segment:
    """A contiguous piece of one input: bytes [start, end) of a text file, or rows."""

    ordinal: int
    stream: str
    kind: str  # json | csv | parquet | a generator name
    path: str  # the file, or the generator's spec
    start: int
    end: int
    unit: float  # estimated bytes per record (1.0 where start/end count rows)
    final: bool  # a last line without a newline is a record (files at rest)
    idle: bool = False  # an empty mark: this Kafka partition is idle (``event_time.py``)

    @property
    def seq_base(self) -> int:
        return self.ordinal << SEQ_SHIFT

    def to_json(self) -> str:
        fields = asdict(self)
        if not self.idle:  # the log of a run without idle marks reads as before
            del fields["idle"]
        return json.dumps(fields, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> Segment:
        return Segment(**json.loads(text))


@dataclass(frozen=True)
class Piece:
    """Part of a segment read by one Spark task: [lo, hi) in the segment's units."""

    segment: Segment
    lo: int
    hi: int


def local_path(uri: str) -> str:
    """A ``file:`` URI as a path; anything else as given."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri


def file_kind(path: str) -> str | None:
    """``json``, ``csv`` or ``parquet`` from a file's extension; None if unknown."""
    return _EXTENSIONS.get(os.path.splitext(path)[1].lower())


def generator_kind(source: str) -> str | None:
    """The generator a source names (``tweets`` or ``tweets:…``), unless a file by that
    name exists."""
    name = source.split(":", 1)[0]
    return name if name in GENERATOR_KINDS and not os.path.exists(source) else None


def list_files(source: str, *, must_exist: bool) -> list[str]:
    """The files a source names, in name order: a file, a directory's files (not hidden
    ones, nor ones starting with ``_``, nor ones of an unknown format: a writer's
    temporary file stays invisible until it is renamed into place), or a glob's matches."""
    path = local_path(source)
    if os.path.isdir(path):
        found = [os.path.join(path, f) for f in os.listdir(path)
                 if not f.startswith((".", "_")) and file_kind(f)]
        found = [f for f in found if os.path.isfile(f)]
    elif any(c in path for c in "*?["):
        found = [f for f in glob.glob(path) if os.path.isfile(f)
                 and not os.path.basename(f).startswith((".", "_"))]
    elif os.path.isfile(path):
        if file_kind(path) is None:
            raise InputLogError(f"cannot tell the format of {path} from its extension "
                                "(.jsonl, .json, .ndjson, .csv, .parquet)")
        found = [path]
    elif must_exist:
        raise InputLogError(f"input not found: {source}")
    else:
        found = []
    if must_exist and not found:
        raise InputLogError(f"no input files in {source}")
    return sorted(found)


def bytes_per_line(path: str, start: int, end: int) -> float:
    """Bytes per line in a sample at the start of [start, end) (at least 1)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        sample = fh.read(min(SAMPLE_BYTES, end - start))
    return max(1.0, len(sample) / max(1, sample.count(b"\n")))


def last_line_end(path: str, lo: int, hi: int) -> int:
    """The offset just past the last newline in [lo, hi), or ``lo`` if there is none:
    where a segment of a file that is still being written may end."""
    with open(path, "rb") as fh:
        top = hi
        while top > lo:
            bottom = max(lo, top - TAIL_STEP)
            fh.seek(bottom)
            chunk = fh.read(top - bottom)
            at = chunk.rfind(b"\n")
            if at >= 0:
                return bottom + at + 1
            top = bottom
    return lo


def parquet_rows(path: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


class InputLog:
    """The segments of a run's inputs, persisted in ``directory/segments.jsonl``.

    ``sources`` maps each input stream (in declaration order) to its source. With
    ``follow`` a text file's segments end at its last newline (the rest waits for more
    bytes); without it, files are taken as complete."""

    def __init__(self, directory: Path | None, sources: dict[str, str], follow: bool,
                 starting_offsets: str = "earliest",
                 idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S) -> None:
        self.sources = sources
        self.follow = follow
        self.starting_offsets = starting_offsets  # where a Kafka partition's log begins
        # a counting Kafka partition with nothing new for this long while others advance
        # is marked idle (``_idle_marks``); 0: at the first discovery that finds nothing
        self.idle_timeout_s = idle_timeout_s
        # when each counting partition last had something new (this process's clock:
        # a restarted run gives every partition the full timeout again)
        self.last_new: dict[str, float] = {}
        self.file = directory / "segments.jsonl" if directory else None
        self.segments: dict[int, Segment] = {}
        self.count = 0  # segments ever logged (the next ordinal)
        self.known: dict[str, tuple[int, float]] = {}  # path -> (logged end, unit)
        # Kafka partitions that count for the watermark (from their join mark on), with
        # their stream, and those whose last mark says idle (see ``_idle_marks``)
        self.fed: dict[str, str] = {}
        self.idle: set[str] = set()
        if self.file is not None and self.file.exists():
            self._load()

    def _load(self) -> None:
        assert self.file is not None
        text = self.file.read_bytes()
        whole = text[: text.rfind(b"\n") + 1]  # a line torn by a crash was never used
        if len(whole) != len(text):
            with open(self.file, "r+b") as fh:
                fh.truncate(len(whole))
        for line in whole.decode("utf-8").splitlines():
            self._remember(Segment.from_json(line))

    def _remember(self, segment: Segment) -> None:
        self.segments[segment.ordinal] = segment
        self.count = max(self.count, segment.ordinal + 1)
        if segment.kind == KAFKA_KIND:
            if segment.idle:
                self.idle.add(segment.path)
            else:  # a chunk, or a join mark (empty): the partition counts from here
                self.fed[segment.path] = segment.stream
                self.idle.discard(segment.path)
        if segment.kind not in GENERATOR_KINDS:
            end, _ = self.known.get(segment.path, (0, segment.unit))
            self.known[segment.path] = (max(end, segment.end), segment.unit)
        else:
            self.known[segment.path] = (segment.end, 1.0)

    def _append(self, new: list[Segment]) -> None:
        if not new:
            return
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.file, "ab") as fh:
                fh.write("".join(s.to_json() + "\n" for s in new).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
        for segment in new:
            self._remember(segment)

    # ------------------------------------------------------------------ discovery

    def discover(self, *, first: bool = False) -> int:
        """Log what is new in every source; returns how many segments were added.

        ``first``: the run's first listing, where a source that names nothing is an
        error unless the run follows it (a directory may start empty)."""
        new: list[Segment] = []
        for stream, source in self.sources.items():
            if source.startswith(KAFKA_URI):
                continue  # below, all topics at once (their chunks interleave)
            kind = generator_kind(source)
            if kind is not None:
                if source not in self.known:
                    new.extend(self._generator_segments(stream, kind, source, len(new)))
                continue
            for path in list_files(source, must_exist=first and not self.follow):
                new.extend(self._file_segments(stream, path, self.count + len(new)))
        if any(source.startswith(KAFKA_URI) for source in self.sources.values()):
            new.extend(self._kafka_segments(self.count + len(new)))
        self._append(new)
        return len(new)

    def _kafka_segments(self, ordinal: int) -> list[Segment]:
        """Chunks of every Kafka partition up to its read_committed end (see
        ``cep.io.kafka_input``); a broker that cannot tell raises a one-line
        ``KafkaTransportError``."""
        from cep.io.kafka_input import kafka_segments

        found = kafka_segments(self.sources, self.known, self.starting_offsets)
        joins = self._join_marks(found)
        marks = [(stream, path, lo, hi) for stream, path, lo, hi in found if hi == lo]
        chunks = [c for c in found if c[3] > c[2]]
        logged = [Segment(ordinal + i, stream, KAFKA_KIND, path, lo, hi, 1.0, True)
                  for i, (stream, path, lo, hi) in enumerate(marks + joins + chunks)]
        return logged + self._idle_marks(logged, ordinal + len(logged))

    def _join_marks(self, found: list[tuple[str, str, int, int]]
                    ) -> list[tuple[str, str, int, int]]:
        """A join mark (an empty segment at its first new offset) for each partition
        that has records in this discovery and does not count yet (new, or idle), logged
        before every chunk of the discovery: from there on the watermark waits for it
        (``event_time.py``), so the chunks of the partitions logged before its own, which
        may run further in time, do not make its records late."""
        first: dict[str, tuple[str, str, int, int]] = {}
        for stream, path, lo, hi in found:
            if hi > lo and path not in first and (path not in self.fed or path in self.idle):
                first[path] = (stream, path, lo, lo)
        return list(first.values())

    def _idle_marks(self, logged: list[Segment], ordinal: int) -> list[Segment]:
        """An idle mark for each partition that counts, found nothing new in this
        discovery while others did, has found nothing new for ``idle_timeout_s``
        seconds, and is not marked idle already: the watermark then leaves it out until
        its next join mark (``event_time.py``), so a partition that went quiet does not
        hold time back forever (Flink's ``withIdleness``). The decision is logged, so a
        replay and every runner make the same one. Nothing is marked when nothing
        advanced (time stands still for every partition then)."""
        now = time.monotonic()
        advanced = {s.path for s in logged if s.end > s.start}
        for s in logged:
            self.last_new[s.path] = now
        if not advanced:
            return []
        quiet = [path for path in sorted(self.fed)
                 if path not in advanced and path not in self.idle
                 and now - self.last_new.setdefault(path, now) >= self.idle_timeout_s]
        return [Segment(ordinal + i, self.fed[path], KAFKA_KIND, path, self.known[path][0],
                        self.known[path][0], 1.0, True, idle=True)
                for i, path in enumerate(quiet)]

    def _generator_segments(self, stream: str, kind: str, spec: str, added: int
                            ) -> list[Segment]:
        from cep.io.tweets.plan import parse_spec

        n = parse_spec(spec).get("n", 200_000)
        return self._cut(stream, kind, spec, 0, n, 1.0, True, self.count + added)

    def _file_segments(self, stream: str, path: str, ordinal: int) -> list[Segment]:
        kind = file_kind(path)
        assert kind is not None
        size = os.path.getsize(path) if kind != "parquet" else None
        logged, unit = self.known.get(path, (0, 0.0))
        if kind == "parquet":
            if path in self.known:
                return []  # a Parquet file is whole when it appears (write, then rename)
            return self._cut(stream, kind, path, 0, parquet_rows(path), 1.0, True, ordinal)
        assert size is not None
        if size < logged:
            raise InputLogError(f"{path} shrank from {logged} to {size} bytes while cep "
                                "was reading it: inputs may only grow")
        end = last_line_end(path, logged, size) if self.follow else size
        if end <= logged:
            return []
        if not unit:
            unit = bytes_per_line(path, logged, end)
        return self._cut(stream, kind, path, logged, end, unit, not self.follow, ordinal)

    @staticmethod
    def _cut(stream: str, kind: str, path: str, start: int, end: int, unit: float,
             final: bool, ordinal: int) -> list[Segment]:
        """Segments of at most MAX_SEGMENT units covering [start, end)."""
        out = []
        for lo in range(start, end, MAX_SEGMENT):
            hi = min(end, lo + MAX_SEGMENT)
            out.append(Segment(ordinal + len(out), stream, kind, path, lo, hi, unit,
                               final or hi < end))
        return out

    # ------------------------------------------------------------------ offsets

    def end_offset(self) -> tuple[int, int]:
        """The position after everything logged so far."""
        return self.count, 0

    def advance(self, seg: int, pos: int, budget: float, stop: tuple[int, int] | None = None
                ) -> tuple[int, int]:
        """The position about ``budget`` records after (seg, pos), not past ``stop``."""
        stop = stop or self.end_offset()
        origin, left = (seg, pos), budget
        while (seg, pos) < stop and seg in self.segments:
            s = self.segments[seg]
            pos = max(pos, s.start)
            cap = stop[1] if seg == stop[0] else s.end
            if pos >= cap:
                seg, pos = seg + 1, 0
                continue
            units = (cap - pos) / s.unit
            if units <= left:
                left -= units
                pos = cap
                if left <= 0:
                    break
                continue
            pos += max(1, math.ceil(left * s.unit))
            left = 0
            break
        return (seg, pos) if left < budget else origin  # nothing new: stay put

    def pieces(self, start: tuple[int, int], end: tuple[int, int]) -> Iterator[Piece]:
        """The ranges between two positions, cut at fixed grid points of each segment
        (:func:`grid_step`: bytes of text, else rows), so the same offsets always give the
        same pieces, whatever the batch size or the cluster: a piece's dead letters and
        its task can be named by it."""
        seg, pos = start
        while (seg, pos) < end and seg in self.segments:
            s = self.segments[seg]
            lo = max(pos, s.start)
            hi = end[1] if seg == end[0] else s.end
            if s.end == s.start:  # a mark, no records, but the watermark must see it once
                if pos <= s.start:
                    yield Piece(s, s.start, s.start)
                seg, pos = seg + 1, 0
                continue
            step = grid_step(s)
            while lo < hi:
                cut = min(hi, s.start + ((lo - s.start) // step + 1) * step)
                yield Piece(s, lo, cut)
                lo = cut
            seg, pos = seg + 1, 0

    def forget_before(self, seg: int) -> None:
        """Drop segments wholly before ``seg`` from memory (committed: never read again)."""
        for ordinal in [o for o in self.segments if o < seg]:
            del self.segments[ordinal]

    def total_units(self) -> float:
        """Records (estimated for text files) in the segments held in memory."""
        return sum((s.end - s.start) / s.unit for s in self.segments.values())


def grid_step(segment: Segment) -> int:
    """The input log's grid in the segment's units (bytes of text, else rows)."""
    if segment.kind in TEXT_KINDS:
        return GRID_BYTES
    return GRID_GENERATED_ROWS if segment.kind in GENERATOR_KINDS else GRID_ROWS
