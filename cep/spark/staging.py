"""Inputs become numbered micro-batches on disk before Spark reads them.

The driver reads every input with cep's own reader (so typing, dead letters and the
global ``seq`` are exactly the reference evaluator's), then writes batch b as ``parts``
Parquet files of one row each (a pickled slice of every input stream's rows). The file
stream source reads them with ``maxFilesPerTrigger = parts``, so micro-batch b is input
batch b and each part is one routing task; modification times increase with b because
the file source orders files by them.

Staging is all or nothing: the files go to a sibling ``<directory>.partial`` that is
renamed to ``directory`` last, so a run killed mid-staging leaves no directory that its
restart could mistake for the whole input (the restart stages again from scratch).
Once staged, the directory is the run's input for good: a restart reads its layout
(:func:`staged_layout`) instead of re-deriving it from the new process's parallelism,
because Spark's checkpoint has already fixed which files make up each micro-batch.
"""

from __future__ import annotations

import os
import pickle
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cep.engine.table import SEQ, Table, take
from cep.reference import batch_bounds

STAGED_SCHEMA = "batch long, part long, payload binary"


def stage_batches(inputs: dict[str, Table], batch_size: int, parts: int,
                  directory: Path) -> int:
    """Write the inputs as micro-batches; returns how many batches there are.

    ``directory`` must not exist yet (or be empty): it appears complete or not at all."""
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # left by a run killed while staging
    partial.mkdir(parents=True)
    bounds = batch_bounds(inputs, batch_size)
    base = time.time() - len(bounds) - 10
    for b, (lo, hi) in enumerate(bounds):
        cuts = np.linspace(lo, hi, parts + 1).round().astype(np.int64)
        for p in range(parts):
            chunk = {name: take(t, (t[SEQ] >= cuts[p]) & (t[SEQ] < cuts[p + 1]))
                     for name, t in inputs.items()}
            frame = pd.DataFrame({"batch": [b], "part": [p],
                                  "payload": [pickle.dumps(chunk, protocol=5)]})
            path = partial / f"batch-{b:07d}-part-{p:03d}.parquet"
            frame.to_parquet(path, index=False)
            os.utime(path, (base + b, base + b))
    os.replace(partial, directory)
    return len(bounds)


def staged_layout(directory: Path) -> tuple[int, int]:
    """(batches, parts per batch) of a staged directory; (0, 0) if nothing is staged."""
    batches = len(list(directory.glob("batch-*-part-000.parquet")))
    parts = len(list(directory.glob("batch-0000000-part-*.parquet")))
    return batches, parts
