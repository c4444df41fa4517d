"""The dead-letter sink: where input records that fail validation go, with the reason.

A run must never lose a record silently: every input line ends up either as an event or
here (blank lines are the one exception; they are counted in :attr:`DeadLetter.skipped`).
Each rejected record becomes one JSON line

    {"source": file, "offset": n, "kind": k, "reason": "...", "record": raw text}

with ``offset`` the byte offset of the record's first byte in its file (for Parquet: the
0-based row index), the same whether the file was read whole or in byte ranges, ``kind`` a short
category (see :data:`KINDS`) for counting, ``reason`` a sentence naming the field and the
value, and ``record`` the raw text cut to 1000 characters. With ``path=None`` only the
counts are kept (tests, ``cep check``).

One `DeadLetter` serves one reading of the input, and the file holds exactly that
reading's rejected records, once each: a file left at ``path`` by an earlier run is
removed when the `DeadLetter` is made, and the file is created at the first rejected
record (a clean input leaves no file behind). The reference runner reads its whole input
in every run, so replacing the file loses no record, where appending would list each
once per run. On Spark the input tasks write each piece's rejected records, and the
driver appends them per micro-batch, exactly once (``cep.spark.output.delivery``).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from typing import IO

from cep.closing import Closing

RECORD_LIMIT = 1000

#: Reason kinds, the keys of :attr:`DeadLetter.reasons`.
KINDS = (
    "invalid_utf8",  # the line is not UTF-8
    "not_json",  # the line does not parse as JSON
    "not_object",  # valid JSON, but not an object
    "bad_row",  # CSV: wrong number of columns, or a quoted value spanning lines
    "null_timestamp",  # the TIMESTAMP field is missing or null (any other field is NULL then)
    "wrong_type",  # a value of the wrong kind (string for int, fraction for int, ...)
    "out_of_range",  # an integer outside int (32-bit) / long (64-bit), a timestamp overflow
    "bad_timestamp",  # a string that is neither ISO-8601 nor a number
    "too_large",  # a record over the reader's max_record_bytes
    "late",  # below the watermark when it arrived, under the drop policy (late_letters.py)
    "udf_error",  # a user function raised on it (udf_letters.py)
)


class DeadLetter(Closing):
    """Collects rejected records: writes them to ``path`` (JSON lines, replacing what an
    earlier run left there) and counts them."""

    def __init__(self, path: str | None = None, append: bool = False) -> None:
        """``append``: add to what this reading of the input wrote there already (late
        events, found once the records have been read), instead of replacing it."""
        self.path = path
        self.count = 0
        self.skipped = 0
        self.reasons: Counter[str] = Counter()
        self._file: IO[str] | None = None
        self._mode = "a" if append else "w"
        if path is not None and not append:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def add(self, source: str, offset: int, kind: str, reason: str, record: str) -> None:
        """Record one rejected input record."""
        if kind not in KINDS:
            raise ValueError(f"unknown dead-letter kind {kind!r}")
        self.count += 1
        self.reasons[kind] += 1
        if self.path is None:
            return
        if self._file is None:
            self._file = open(self.path, self._mode, encoding="utf-8")  # noqa: SIM115 - kept open
        entry = {
            "source": source,
            "offset": offset,
            "kind": kind,
            "reason": reason,
            "record": record[:RECORD_LIMIT],
        }
        self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def skip(self, n: int = 1) -> None:
        """Count ``n`` blank input lines that were skipped (not records, not rejected)."""
        self.skipped += n

    def summary(self) -> str:
        """One line for the run summary: rejected by kind, and skipped blank lines."""
        if self.count:
            kinds = ", ".join(f"{k}: {n}" for k, n in self.reasons.most_common())
            text = f"{self.count} record(s) rejected ({kinds})"
        else:
            text = "no records rejected"
        if self.path is not None and self.count:
            text += f", see {self.path}"
        return f"{text}; {self.skipped} blank line(s) skipped"

    def close(self) -> None:
        """Flush and close the file (counts stay readable)."""
        if self._file is not None:
            self._file.close()
            self._file = None
