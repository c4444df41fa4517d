"""``bench/scale_ab.py``'s summary of two trees' scale-change runs, on hand-built run files.

Oracle: the figures written by hand into the runs; no run of Spark is involved.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_bench import _bench_script

REPO = Path(__file__).resolve().parent.parent


def _run(extra: float, mb: float, export: float) -> dict:
    """A ``bench_scale_midrun.py`` file's fields the summary reads: three changes (the
    first, to 2 engines at batch 2, left out), per batch the engines' stage seconds."""
    stages = {b: {"export": 0.0, "import": 0.0, "save": 1.0} for b in range(30)}
    stages[19].update({"import": 1.5, "save": 4.0})
    stages[25].update({"import": 1.1, "save": 3.0})
    stages[18]["export"] = export
    stages[24]["export"] = export / 2
    return {
        "change_costs": [
            {"at_batch": 2, "from": 4, "to": 2, "keys": 9, "bytes": 1e6},
            {"at_batch": 19, "from": 2, "to": 4, "keys": 1800, "bytes": mb * 1e6,
             "extra_over_normal": extra},
            {"at_batch": 25, "from": 4, "to": 2, "keys": 1800, "bytes": mb * 1.1e6,
             "extra_over_normal": extra / 2}],
        "batches": [{"batch": b, "stage_s": s} for b, s in stages.items()],
        "phases": [{"engines": [2], "events_per_s": 20_000.0, "batch_s": 6.0},
                   {"engines": [4], "events_per_s": 29_000.0 + mb, "batch_s": 4.0}],
        "kg_fixed": {"events_per_s": 38_000.0}, "events_equal_kg": True}


def test_each_change_after_the_first_with_its_stage_seconds() -> None:
    bench = _bench_script("scale_ab")
    found = bench.summary(_run(1.2, 80.0, 3.5))
    assert found["changes"] == [
        {"from": 2, "to": 4, "keys": 1800, "mb": 80.0, "extra_over_normal": 1.2,
         "export_s": 3.5, "import_s": 1.5, "save_s": 4.0},
        {"from": 4, "to": 2, "keys": 1800, "mb": 88.0, "extra_over_normal": 0.6,
         "export_s": 1.75, "import_s": 1.1, "save_s": 3.0}]
    assert found["hi_events_per_s"] == 29_080.0 and found["events_equal_kg"]


def test_reuse_summarises_the_files_and_takes_medians(tmp_path) -> None:
    bench = _bench_script("scale_ab")
    runs = {("before", 1): _run(1.4, 80, 3.6), ("after", 1): _run(0.6, 56, 2.6),
            ("before", 2): _run(1.0, 82, 3.8), ("after", 2): _run(0.8, 60, 3.0)}
    for (side, number), run in runs.items():
        (tmp_path / f"ab-{side}-{number}.json").write_text(json.dumps(run))
    out = tmp_path / "ab.json"
    assert bench.main([str(REPO), str(REPO), "--reuse", str(tmp_path), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["started"] is None and len(written["rounds"]) == 2
    out_change = {side: written["medians"][side]["changes"][0] for side in ("before", "after")}
    assert out_change["before"]["extra_over_normal"] == 1.2
    assert out_change["after"]["extra_over_normal"] == 0.7
    assert out_change["after"]["mb"] == 58.0 and out_change["before"]["export_s"] == 3.7
