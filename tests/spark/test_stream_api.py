"""The Python API for unbounded runs: ``rules.stream`` hands over each micro-batch's
events as a DataFrame while the run goes on, and ``stop()`` ends it after the batch in
flight commits."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pandas as pd

import cep

ROOT = Path(__file__).parent.parent.parent
LINES = (ROOT / "tests" / "data" / "readings.jsonl").read_text().splitlines(keepends=True)


def test_stream_yields_batches_while_files_arrive_and_stops(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(LINES[:30]))
    rules = cep.compile_rules(ROOT / "rules" / "sensor_average.epl")
    expected = rules.run(str(ROOT / "tests" / "data" / "readings.jsonl"), runner="local")
    seen: list[pd.DataFrame] = []
    batches: list[int] = []
    landed = threading.Event()
    with rules.stream(str(folder), engines=2, batch_size=15, master="local[2]",
                      trigger_s=0.3) as run:
        for batch, frame in run:
            batches.append(batch)
            seen.append(frame)
            if not landed.is_set():  # a second file arrives while the run goes on
                tmp = folder / ".b.jsonl.tmp"
                tmp.write_text("".join(LINES[30:]))
                os.replace(tmp, folder / "b.jsonl")
                landed.set()
            if sum(len(f) for f in seen) >= len(expected):
                run.stop()
    assert batches == list(range(len(batches))) and len(batches) >= 3
    got = pd.concat(seen, ignore_index=True)
    # same rows; seq differs only for the second file (a segment of its own)
    pd.testing.assert_frame_equal(got.drop(columns="seq"), expected.drop(columns="seq"))
