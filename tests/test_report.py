"""cep report draws real PNGs with content from runs' metrics files."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import numpy as np

from cep.cli import main


def _metrics(path, strategy: str, seed: int) -> str:
    rng = np.random.default_rng(seed)
    with open(path, "w") as out:
        for b in range(8):
            rows = rng.integers(1000, 5000, 5).tolist()
            out.write(json.dumps({
                "batch": b, "events_in": sum(rows), "rows_per_engine": rows,
                "rstd": float(rng.uniform(1, 60)), "wall_time": 100.0 + 2 * b, "sink_s": 2.0,
                "exported_keys": int(rng.integers(0, 9)), "strategy": strategy}) + "\n")
    return str(path)


def test_report_writes_four_nontrivial_pngs(tmp_path, capsys):
    files = [_metrics(tmp_path / "kg.jsonl", "kg", 1),
             _metrics(tmp_path / "dlb.jsonl", "dlb-h", 2)]
    assert main(["report", *files, "-o", str(tmp_path / "plots")]) == 0
    names = sorted(p.rsplit("/", 1)[-1] for p in capsys.readouterr().out.split())
    assert names == ["engine_load.png", "migrations.png", "rstd.png", "throughput.png"]
    for name in names:
        path = tmp_path / "plots" / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = mpimg.imread(path)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 400
        assert pixels[..., :3].std() > 0.05  # lines and bars, not a blank canvas


def test_report_refuses_a_file_without_batches(tmp_path, capsys):
    bad = tmp_path / "empty.jsonl"
    bad.write_text('{"quality": {}}\n')
    assert main(["report", str(bad), "-o", str(tmp_path / "p")]) == 1
    assert "no per-batch metrics" in capsys.readouterr().err


def test_report_draws_the_threshold_the_run_used(tmp_path):
    from cep.report import load_series, run_thresholds

    path = tmp_path / "run.jsonl"
    rows = [{"batch": b, "events_in": 10, "rows_per_engine": [5, 5], "rstd": 0.0,
             "settings": {"strategy": "dlb-h", "threshold": 1.0, "engines": 2}}
            for b in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    series = [load_series(str(path))]
    assert series[0][0] == "dlb-h"
    assert run_thresholds(series) == [1.0]
    assert main(["report", str(path), "-o", str(tmp_path / "plots")]) == 0
