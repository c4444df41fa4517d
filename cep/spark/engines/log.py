"""An engine's durable state in Spark's state store: a changelog, a base and its deltas.

Why not the state per key: PySpark's state calls cost one socket round trip each (about
50-300 µs here, no multi-key get or put exists in any 4.x), so state kept per key cost
what the keys touched cost (FSD, 5 engines, 2.95M tweets: 62 task seconds restoring and
saving against 34 processing). Here a batch costs three calls whatever its keys: it
reads the engine's version and appends one blob to its log (a call per part of it, see
below), and the version after it.

Per engine label (the operator's grouping key) the store holds one MapState, ``log``:

* batch -> (token, blob), one entry per batch since the last base. A **base** is the
  whole engine (``Engine.snapshot``, codec kind ``engine``); a **delta** is what the
  batch changed (``Engine.merge_in``'s change, codec kind ``change``: its keys, per
  window the rows each key kept and the rows it gained, per rule the keys' other state
  whole);
* an entry's blob is cut into **parts** of at most ``PART_BYTES``: part 0 at the key of
  its batch, part i > 0 at :func:`part_key` (batch, i), a negative key, each part a
  state row (token, bytes) of its own;
* at key ``VERSION_KEY`` (no batch has it), the **version**, as JSON: the batch the
  durable state reflects and the token of the processing that wrote it, the batch of
  the log's base and its bytes, the bytes of the deltas written since, the batches
  that have a log entry (the base first) and each one's parts.

Why parts (issue 51): every value a state call carries is copied several times in the
executor's JVM (the socket's message, protobuf, the unpickled row, the UnsafeRow, the
state store's encoding, and as many again when it is read back), all at once and in one
piece. A base of FSD's engine at 2 engines over 3.96M tweets is 101 MB: writing it
whole, an executor still held 665 MB after a full collection, and executors of a 1 GB
heap (the emulated cluster's; the JVM's serial collector on a one-core node keeps two
thirds of it for the old generation) died of ``OutOfMemoryError`` at batch 30 of a
33-batch run. Cut into parts of ``PART_BYTES``, what a state call holds in the JVM is
bounded by the part, whatever the engine holds (the same run: at most 118 MB live after
a full collection, ``bench/bench_executor_heap.py``); the number of calls grows by one
per ``PART_BYTES`` written or read.

Logs written before parts existed have one part per entry and a version without
``parts``: they read as they are, and their next base writes parts.

Why one state variable and not a ValueState for the version beside the log: Spark's
state server builds, analyses and code-generates every variable's encoders again in
every task, and a variable's first read and first write in a task generate code again
(Java Flight Recorder, 48 engine tasks: about 29 ms of a task's 70 ms in the state
server went to the version's ValueState). Measured on a 17-batch run of 3 engines on 2
cores, two runs each way: the engines' save stage fell from 1.33-1.40 to 0.33-0.50
task-seconds, restore stayed at 0.5-0.9.

The fold rule: a batch writes a base (and clears the older entries) instead of its delta
when the deltas since the last base, less the bytes of the parcels the engine imported
since, would add up to more than the base's bytes and those parcels' bytes (at least
``FOLD_FLOOR``), or to more than ``MAX_DELTAS`` entries. Writing stays amortised O(bytes
changed), and rebuilding the engine reads at most about twice its state (the base and
the imports, twice) in at most ``MAX_DELTAS + 1`` calls.

Why the imported bytes count: an engine that takes over keys grows by their state in
one batch, and that batch's delta holds all of it; measured against the base alone, it
folds the whole grown engine in that batch. In a 4 -> 2 engine FSD change on 0.4-core
nodes the staying engines' 'save' took 7-10 s against 2 s in that batch
(``bench/results/scale_midrun-settle-2.json``, batch 25). With the imports on the bar's
side alone, in 1 of 3 runs the change's batch wrote deltas only; in the other 2 one
engine whose log was due to fold anyway still folded there (``scale_midrun-fold*.json``,
``state_saved``): the rule keeps the fold off the import's own bytes, not off the batch.

Why the imported bytes are also left out of the deltas' side: the delta of the batch that
imported holds the parcels' state (its change encoding took 1.001 times the parcel's
bytes for 2,048 FSD keys of 25 MB), so counted there it used up the bar it had raised,
and the next batch folded the engine whole. After a 2 -> 4 engine FSD change on 0.4-core
nodes the new engines wrote their ~40 MB of imported state twice, as the import's delta
in its batch and as a base in the next one (``bench/results/scale_midrun-51e8c56-2.json``,
batches 19 and 20: 'save' 4.1 and 4.2 s against 1.5 s, ``state_saved``).

A task's writes reach the store only when its task commits; a failed or retried task's
never do. That is what makes the version the truth that ``resident.py`` checks a
worker's memory against.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from cep.engine.codec import StateFormatError

VERSION_KEY = -1  # the log's entry of the version: batches count from 0
LOG_KEY_SCHEMA = StructType([StructField("batch", LongType())])
LOG_VALUE_SCHEMA = StructType([StructField("token", StringType()),
                               StructField("blob", BinaryType())])

# Fold settings; the environment variables exist for tests, which need folds in runs of
# a few kilobytes of state.
FOLD_FLOOR = int(os.environ.get("CEP_STATE_FOLD_FLOOR", 1 << 20))
MAX_DELTAS = int(os.environ.get("CEP_STATE_MAX_DELTAS", 32))
# The most bytes one state row of the log holds (a part of an entry's blob); the
# variable exists for tests, which need parts in runs of a few kilobytes of state.
PART_BYTES = int(os.environ.get("CEP_STATE_PART_BYTES", 4 << 20))
MAX_PARTS = 1 << 20  # parts of one entry: part_key's room per batch (4 TiB at 4 MiB)


def part_key(batch: int, part: int) -> int:
    """The log's key of ``batch``'s part ``part``: the batch itself for part 0 (where a
    log written before parts existed has its one part), below ``VERSION_KEY`` for the
    others, where no key of a batch or of the version falls."""
    if part == 0:
        return batch
    if not 0 < part < MAX_PARTS:
        raise ValueError(f"an entry has at most {MAX_PARTS} parts, not {part + 1}")
    return VERSION_KEY - 1 - (batch * MAX_PARTS + part - 1)


def cut(blob: bytes, size: int) -> list[bytes]:
    """``blob`` in parts of ``size`` bytes, the last one shorter; an empty blob is one
    empty part. A blob of one part is itself (a slice of all of a ``bytes`` is the
    object), so the usual small delta is not copied."""
    return [blob[at:at + size] for at in range(0, len(blob), size)] or [b""]


@dataclass(frozen=True)
class Version:
    """What the durable state of an engine is at (see the module's docstring)."""

    batch: int
    token: str
    base: int
    base_bytes: int
    delta_bytes: int
    entries: tuple[int, ...]
    rules: int = 0  # the rule set version the log's entries belong to (rule_versions.py)
    parts: tuple[int, ...] = ()  # each entry's parts; () for a log from before parts: 1 each
    moved_in_bytes: int = 0  # the parcels imported since the base (the fold rule)

    def encode(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> Version:
        """A version read back from the state store (checked: the checkpoint rests on
        disk, where others can write)."""
        try:
            raw = json.loads(data)
            version = cls(**{**raw, "entries": tuple(raw["entries"]),
                             "parts": tuple(raw.get("parts", ()))})
        except (ValueError, TypeError, KeyError) as err:
            raise StateFormatError(f"the engine's state log has no valid version ({err})"
                                   ) from None
        numbers = [version.batch, version.base, version.base_bytes, version.delta_bytes,
                   version.rules, version.moved_in_bytes, *version.entries, *version.parts]
        if (type(version.token) is not str or any(type(n) is not int for n in numbers)
                or (version.parts and len(version.parts) != len(version.entries))
                or not all(0 < n <= MAX_PARTS for n in version.parts)):
            raise StateFormatError("the engine's state log has no valid version")
        return version

    def parts_of(self, batch: int) -> int | None:
        """How many parts ``batch``'s entry has; None where the log has no such entry."""
        if batch not in self.entries:
            return None
        return self.parts[self.entries.index(batch)] if self.parts else 1

    def after(self, batch: int) -> list[int]:
        """The log's entries after ``batch``, oldest first."""
        return [b for b in self.entries if b > batch]

    def folds(self, delta_bytes: int, moved_in: int = 0) -> bool:
        """Whether a delta of ``delta_bytes`` goes as a base instead (the fold rule), in
        a batch that imported parcels of ``moved_in`` bytes."""
        imported = self.moved_in_bytes + moved_in
        grown = self.base_bytes + imported
        own = self.delta_bytes + delta_bytes - imported  # the deltas past the imports
        return own > max(grown, FOLD_FLOOR) or len(self.entries) > MAX_DELTAS


class EngineLog:
    """One engine label's ``log`` state variable: its entries and its version."""

    def __init__(self, log) -> None:
        self.log = log
        self._version: list[Version | None] = []  # read once per batch

    def version(self) -> Version | None:
        """The durable state's version as the batch began; None before the engine's
        first batch committed."""
        if not self._version:
            row = self.log.getValue((VERSION_KEY,))
            self._version.append(None if row is None else Version.decode(bytes(row[1])))
        return self._version[0]

    def token(self, batch: int) -> str | None:
        """The token of the processing that wrote ``batch``'s entry (its first part's),
        or None where the log has no entry of ``batch``."""
        row = self.log.getValue((batch,))
        return None if row is None else str(row[0])

    def entry(self, batch: int) -> tuple[str, bytes] | None:
        """The log's entry of ``batch``: (token, blob), its parts put together, or None
        where the version names no such entry. A part missing, or written by another
        processing than the first part (another token), is refused: the blob would be
        another one's."""
        version = self.version()
        parts = None if version is None else version.parts_of(batch)
        if parts is None:
            return None
        token, pieces = None, []
        for part in range(parts):
            row = self.log.getValue((part_key(batch, part),))
            if row is None or (token is not None and str(row[0]) != token):
                what = "missing" if row is None else "of another processing"
                raise StateFormatError(f"the engine's state log has part {part} of "
                                       f"{parts} of batch {batch}'s entry {what}")
            token = str(row[0])
            pieces.append(bytes(row[1]))
        return token, pieces[0] if parts == 1 else b"".join(pieces)

    def append(self, batch: int, token: str, blob: bytes, base: bool, rules: int = 0,
               moved_in: int = 0) -> None:
        """Write ``batch``'s blob in parts of ``PART_BYTES``, a base (the older entries
        go) or a delta after the version the batch began at, and the version that says
        so; ``rules``: the rule set version of the engine that wrote it (a change of it
        always writes a base, so a log's entries all belong to one rule set);
        ``moved_in``: the bytes of the parcels the batch imported."""
        before = self.version()
        pieces = cut(blob, PART_BYTES)
        if base or before is None:
            self.log.clear()
            version = Version(batch, token, batch, len(blob), 0, (batch,), rules,
                              (len(pieces),))
        else:
            assert before.rules == rules, "a new rule set starts with a base"
            parts = before.parts or (1,) * len(before.entries)
            version = Version(batch, token, before.base, before.base_bytes,
                              before.delta_bytes + len(blob), (*before.entries, batch),
                              rules, (*parts, len(pieces)),
                              before.moved_in_bytes + moved_in)
        for part, piece in enumerate(pieces):
            self.log.updateValue((part_key(batch, part),), (token, piece))
        self.log.updateValue((VERSION_KEY,), (token, version.encode()))
