"""The engine's memory stays flat over a long run: rules/fsd.epl over a million tweets.

First Story Detection keeps, per LSH bucket, the last H tweets (``#length(H)``) and the
last event (``#lastevent``), so its state is bounded by buckets × H rows. The run feeds an
in-process :class:`Engine` batch after batch, as the Spark runtime does. The input is
generated whole before the run (as ``cep run`` loads its input whole), so it weighs the
same at every measurement and what changes is the engine's. H and the number of buckets
are set lower than the example's (100 and 512 instead of 500 and 4096) so that the bound
of 51,200 rows is reached within the first fifth of the run; after that the resident set
size (``VmRSS``) must not grow by more than a few tens of megabytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cep.engine.engine import Engine
from cep.engine.table import SEQ
from cep.io.inputs import frame_to_table
from cep.io.tweets.generator import generate_tweets
from cep.reference import batch_watermarks, input_watermark, run_batch
from grammar.compile import compile_file

RULE = Path(__file__).parent.parent.parent / "rules" / "fsd.epl"
TWEETS, BATCH = 1_000_000, 10_000
WARM_UP = 0.2  # the share of the run after which the state is at its bound
GROWTH_MB = 40.0


def rss_mb() -> float:
    """This process's resident set size, from /proc (psutil is not a dependency)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@pytest.mark.slow
def test_fsd_engine_memory_stays_flat_over_a_million_tweets() -> None:
    module = compile_file(RULE, {"H": "100", "buckets": "512"})
    engine = Engine(module)
    window = next(op.window for _, op in engine.operators if hasattr(op, "window"))
    frame = generate_tweets(n=TWEETS, buckets=512, seed=11).frame
    table = frame_to_table(frame, module.streams["Tweet"])
    del frame
    series: list[float] = []
    rows: list[int] = []
    starts = range(0, TWEETS, BATCH)
    seq = table["__seq"]
    clocks = batch_watermarks(input_watermark(module, {"Tweet": table}), [
        (int(seq[lo]), int(seq[min(lo + BATCH, TWEETS) - 1]) + 1) for lo in starts])
    for lo, clock in zip(starts, clocks, strict=True):
        part = {name: column[lo:lo + BATCH] for name, column in table.items()}
        run_batch(module, engine, {"Tweet": part}, clock)
        series.append(rss_mb())
        rows.append(len(window.rows[SEQ]))
    warm = int(len(series) * WARM_UP)
    print(f"\nRSS (MB) every {BATCH:,} tweets: {' '.join(f'{v:.0f}' for v in series)}")
    print(f"window rows: {rows[0]:,} after the first batch, {rows[warm]:,} at the end of "
          f"warm-up, {rows[-1]:,} at the end")
    after = np.array(series[warm:])
    print(f"after warm-up: {after[0]:.0f} MB, max {after.max():.0f} MB, "
          f"end {after[-1]:.0f} MB ({after.max() - after[0]:+.0f} MB)")
    assert max(rows) <= 512 * 100
    assert rows[-1] >= 0.9 * max(rows)  # the state is full, not shrinking, at the end
    assert after.max() - after[0] < GROWTH_MB
