"""User functions' failures as dead letters: a record on which a function the rules
call raised, hung on or ended its process on (``cep.engine.udf_errors``) is one dead
letter of kind ``udf_error``, with the function and the exception's message (or "timed
out after 10s", "ended its process (exit code 1)") as its reason.

Like a late event's, the record is known by its seq and read back from its input by
whoever found it (``late_letters``: its source, offset and text): the reference runner
from the segments it read, a Spark task from the run's input log, which holds every
segment ever read (:func:`logged_segments`). A failure whose record is not known (an
evaluation without ``expr.Env.seq``; every operator's sets it) has offset -1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cep.engine.udf_errors import UdfFailure, distinct, reason
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import SEQ_SHIFT, Segment
from cep.io.late_letters import OFFSET_MASK, record_source, record_text
from grammar import ir


def add_udf_letters(dead: DeadLetter, module: ir.CompiledModule,
                    segments: dict[int, Segment], failures: list[UdfFailure]) -> int:
    """Dead-letter each (record, function) of ``failures`` once; how many letters."""
    letters = distinct(failures)
    for failure in letters:
        why = reason(failure)
        segment = segments.get(failure.seq >> SEQ_SHIFT) if failure.seq >= 0 else None
        if segment is None:
            dead.add("", -1, "udf_error", f"{why} (record not known)", "")
            continue
        offset = segment.start + (failure.seq & OFFSET_MASK)
        dead.add(record_source(segment), offset, "udf_error", why,
                 record_text(module, segment, offset))
    return len(letters)


def logged_segments(log_dir: str, failures: list[UdfFailure]) -> dict[int, Segment]:
    """The segments of the failures' records, read from a run's input log
    (``input/segments.jsonl``: appended and fsynced before a batch reads them)."""
    wanted = {f.seq >> SEQ_SHIFT for f in failures if f.seq >= 0}
    found: dict[int, Segment] = {}
    if not wanted:
        return found
    with open(Path(log_dir) / "segments.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # a line torn by a crash was never used
            ordinal = json.loads(line)["ordinal"]
            if ordinal in wanted:
                found[ordinal] = Segment.from_json(line)
    return found


def write_udf_letters(path: str, module: ir.CompiledModule, log_dir: str,
                      failures: list[UdfFailure]) -> int:
    """A Spark task's failures as a dead-letter piece at ``path`` (replacing what an
    earlier try of the task wrote there), which the driver appends once per batch."""
    if not failures:
        return 0
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with DeadLetter(path) as dead:
        return add_udf_letters(dead, module, logged_segments(log_dir, failures), failures)
