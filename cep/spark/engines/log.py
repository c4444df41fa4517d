"""An engine's durable state in Spark's state store: a changelog, a base and its deltas.

Why not the state per key: PySpark's state calls cost one socket round trip each (about
50-300 µs here, no multi-key get or put exists in any 4.x), so state kept per key cost
what the keys touched cost (FSD, 5 engines, 2.95M tweets: 62 task seconds restoring and
saving against 34 processing). Here a batch costs three calls whatever its keys: it
reads the engine's version and appends one blob to its log, and the version after it.

Per engine label (the operator's grouping key) the store holds one MapState, ``log``:

* batch -> (token, blob), one entry per batch since the last base. A **base** is the
  whole engine (``Engine.snapshot``, codec kind ``engine``); a **delta** is what the
  batch changed (``Engine.merge_in``'s change, codec kind ``change``: its keys, per
  window the rows each key kept and the rows it gained, per rule the keys' other state
  whole);
* at key ``VERSION_KEY`` (no batch has it), the **version**, as JSON: the batch the
  durable state reflects and the token of the processing that wrote it, the batch of
  the log's base and its bytes, the bytes of the deltas written since, and the batches
  that have a log entry (the base first).

Why one state variable and not a ValueState for the version beside the log: Spark's
state server builds, analyses and code-generates every variable's encoders again in
every task, and a variable's first read and first write in a task generate code again
(Java Flight Recorder, 48 engine tasks: about 29 ms of a task's 70 ms in the state
server went to the version's ValueState). Measured on a 17-batch run of 3 engines on 2
cores, two runs each way: the engines' save stage fell from 1.33-1.40 to 0.33-0.50
task-seconds, restore stayed at 0.5-0.9.

The fold rule: a batch writes a base (and clears the older entries) instead of its delta
when the deltas since the last base would add up to more than the base's bytes (at least
``FOLD_FLOOR``), or to more than ``MAX_DELTAS`` entries. Writing stays amortised O(bytes
changed), and rebuilding the engine reads at most about twice its state in at most
``MAX_DELTAS + 1`` calls.

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

    def encode(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> Version:
        """A version read back from the state store (checked: the checkpoint rests on
        disk, where others can write)."""
        try:
            raw = json.loads(data)
            version = cls(**{**raw, "entries": tuple(raw["entries"])})
        except (ValueError, TypeError, KeyError) as err:
            raise StateFormatError(f"the engine's state log has no valid version ({err})"
                                   ) from None
        numbers = [version.batch, version.base, version.base_bytes, version.delta_bytes,
                   version.rules, *version.entries]
        if type(version.token) is not str or any(type(n) is not int for n in numbers):
            raise StateFormatError("the engine's state log has no valid version")
        return version

    def after(self, batch: int) -> list[int]:
        """The log's entries after ``batch``, oldest first."""
        return [b for b in self.entries if b > batch]

    def folds(self, delta_bytes: int) -> bool:
        """Whether a delta of ``delta_bytes`` goes as a base instead (the fold rule)."""
        return (self.delta_bytes + delta_bytes > max(self.base_bytes, FOLD_FLOOR)
                or len(self.entries) > MAX_DELTAS)


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

    def entry(self, batch: int) -> tuple[str, bytes] | None:
        """The log's entry of ``batch``: (token, blob), or None."""
        row = self.log.getValue((batch,))
        return None if row is None else (str(row[0]), bytes(row[1]))

    def append(self, batch: int, token: str, blob: bytes, base: bool, rules: int = 0) -> None:
        """Write ``batch``'s blob, a base (the older entries go) or a delta after the
        version the batch began at, and the version that says so; ``rules``: the rule
        set version of the engine that wrote it (a change of it always writes a base,
        so a log's entries all belong to one rule set)."""
        before = self.version()
        if base or before is None:
            self.log.clear()
            version = Version(batch, token, batch, len(blob), 0, (batch,), rules)
        else:
            assert before.rules == rules, "a new rule set starts with a base"
            version = Version(batch, token, before.base, before.base_bytes,
                              before.delta_bytes + len(blob), (*before.entries, batch),
                              rules)
        self.log.updateValue((batch,), (token, blob))
        self.log.updateValue((VERSION_KEY,), (token, version.encode()))
