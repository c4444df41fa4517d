"""Inputs become numbered micro-batches on disk before Spark reads them.

The driver reads every input with cep's own reader (so typing, dead letters and the
global ``seq`` are exactly the reference evaluator's), then writes batch b as ``parts``
Parquet files of one row each (a pickled slice of every input stream's rows). The file
stream source reads them with ``maxFilesPerTrigger = parts``, so micro-batch b is input
batch b and each part is one routing task; modification times increase with b because
the file source orders files by them.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cep.engine.table import SEQ, Table, take
from cep.reference import batch_bounds

STAGED_SCHEMA = "batch long, part long, payload binary"


def stage_batches(inputs: dict[str, Table], batch_size: int, parts: int,
                  directory: Path) -> int:
    """Write the inputs as micro-batches; returns how many batches there are."""
    directory.mkdir(parents=True, exist_ok=True)
    bounds = batch_bounds(inputs, batch_size)
    base = time.time() - len(bounds) - 10
    for b, (lo, hi) in enumerate(bounds):
        cuts = np.linspace(lo, hi, parts + 1).round().astype(np.int64)
        for p in range(parts):
            chunk = {name: take(t, (t[SEQ] >= cuts[p]) & (t[SEQ] < cuts[p + 1]))
                     for name, t in inputs.items()}
            frame = pd.DataFrame({"batch": [b], "part": [p],
                                  "payload": [pickle.dumps(chunk, protocol=5)]})
            path = directory / f"batch-{b:07d}-part-{p:03d}.parquet"
            tmp = path.with_name("." + path.name)
            frame.to_parquet(tmp, index=False)
            os.replace(tmp, path)
            os.utime(path, (base + b, base + b))
    return len(bounds)
