"""What an input task sends each engine to find the late events of its batch
(``cep.spark.engines.late_rows``, where the why is): the seq and timestamp of the task's input
events of streams with a TIMESTAMP that the engine owns or receives rows of.

Part of the Splitter: it runs in the input tasks, beside the routing (``routing.py``).
"""

from __future__ import annotations

import numpy as np

from cep.engine.clock import timed_events
from cep.engine.table import Table
from grammar import ir

# what an input task sends an engine: seq, timestamp, owned (counted there), segments
Candidates = tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]


def owners(seq: np.ndarray, n: int) -> np.ndarray:
    """The engine that counts each event: a multiplicative hash of its seq, whose low
    bits are a byte offset in a text file (``seq % n`` would hand every event of a file
    of even-length lines to the even engines)."""
    mixed = seq.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return ((mixed >> np.uint64(32)) % np.uint64(n)).astype(np.int64)


def candidates(module: ir.CompiledModule, inputs: dict[str, Table],
               rows_of: list[np.ndarray], segments: list[str]) -> list[Candidates | None]:
    """Per engine of stage 0, what it needs of the task's timed events: those it owns,
    and those whose rows it receives (seqs ``rows_of[e]``: none but under ``drop``)."""
    seq, ts = timed_events(module, inputs)
    if not len(seq):
        return [None] * len(rows_of)
    owner = owners(seq, len(rows_of))
    out: list[Candidates | None] = []
    for e, rows in enumerate(rows_of):
        owned = owner == e
        needed = owned | np.isin(seq, rows) if len(rows) else owned
        out.append((seq[needed], ts[needed], owned[needed], segments) if needed.any()
                   else None)
    return out
