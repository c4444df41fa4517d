"""One number format for every table cep prints (``cep.tables``): counts with thousands
separators, percentages with ``%``, seconds with ``s``, and the same header for the same
measure in ``cep simulate``, ``cep verify``, ``cep bench`` and the run summary."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from cep.bench import format_diagnostics
from cep.cli import main
from cep.cli.summary import summary_data, summary_text
from cep.run_config import RunResult
from cep.tables import columns, count, millis, number, pct, ratio, seconds
from cep.verify import StrategyResult, format_table

RAW_FLOAT = re.compile(r"(?<![\d.,])\d{4,}\.\d+")  # 1706839.00: no separators, no unit


def test_each_kind_of_figure_has_one_format() -> None:
    assert [count(1_706_839.0), count(13_416), count(0), count(None)] == [
        "1,706,839", "13,416", "0", "-"]
    assert [pct(25.12), pct(44.531, 2), pct(15.0, 0), pct(None)] == [
        "25.1%", "44.53%", "15%", "-"]
    assert [seconds(1_298.94), seconds(0.5234, 2), seconds(10.0, 0)] == [
        "1,298.9s", "0.52s", "10s"]
    assert [millis(0.1234), ratio(1.0625), number(2.0), number(2.5)] == [
        "0.12ms", "1.06x", "2", "2.5"]


def test_columns_put_names_left_and_figures_right() -> None:
    assert columns([["strategy", "events"], ["kg", "13,416"], ["dlb-h", "9"]]) == (
        "strategy  events\n"
        "kg        13,416\n"
        "dlb-h          9")


def _run(strategy: str, **changes) -> StrategyResult:
    base = StrategyResult(strategy, 13_416, True, 0, 0, 25.12, 40.0, 3, 1_204, 1_234_567,
                          1_298.94, makespan_s=61.25, avg_cpu_rstd=12.5, engines=5,
                          load_average=[1.5, 1.25, 1.0])
    return dataclasses.replace(base, **changes)


def test_verify_table() -> None:
    results = [_run("kg"), _run("pkg", events=14_000, equal_to_kg=False, missing=1_200,
                                extra=1_784)]
    assert format_table(results).splitlines() == [
        "strategy  events  = KG  missing  extra  avg RSTD  max RSTD  rebalances  keys moved  "
        "state bytes  run time",
        "kg        13,416   yes        0      0     25.1%     40.0%           3       1,204  "
        "  1,234,567  1,298.9s",
        "pkg       14,000    NO    1,200  1,784     25.1%     40.0%           3       1,204  "
        "  1,234,567  1,298.9s"]


def test_bench_diagnostics_share_the_verify_headers() -> None:
    table = format_diagnostics([_run("kg")]).splitlines()
    assert table[:2] == [
        "strategy  engines  CPU RSTD  keys moved  state bytes  moves cost  makespan  "
        "headroom ev/CPU  captured  run time   load at start",
        "kg              5     12.5%       1,204    1,234,567        0.0s     61.2s      "
        "1.00x/1.00x         -  1,298.9s  1.50 1.25 1.00"]


def test_run_summary_and_its_json() -> None:
    result = RunResult(
        metrics=[], seconds=12.0,
        totals={"events_in": 1_706_839, "events_out": 24_031, "dead_lettered": 1_002,
                "late_events": 3_500},
        outputs_per_rule={"busy_topic": 24_031})
    text = summary_text(result, 12.3456, "dead.jsonl")
    assert text.splitlines()[:3] == [
        "cep: 1,706,839 events, 24,031 output rows in 12.35s (138,250 events/s)",
        "  per rule: busy_topic=24,031",
        "  1,002 malformed records dead-lettered to dead.jsonl"]
    assert text.splitlines()[3].startswith("  3,500 late events (below the watermark) "
                                           "processed as they came")
    data = summary_data(result, 12.3456, "dead.jsonl")
    assert {k: data[k] for k in ("events", "output_rows", "seconds", "per_rule",
                                 "dead_lettered", "late_events")} == {
        "events": 1_706_839, "output_rows": 24_031, "seconds": 12.346,
        "per_rule": {"busy_topic": 24_031}, "dead_lettered": 1_002, "late_events": 3_500}
    assert "balance" not in data  # the local runner has no engines
    assert summary_data(result, 1.0, "d", "kg")["balance"] is None  # nor batches


def test_simulate_table_has_no_raw_floats(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    trace = tmp_path / "trace.npy"
    rng = np.random.default_rng(3)
    np.save(trace, rng.zipf(1.5, size=40_000) % 300)
    out = tmp_path / "sim.json"
    assert main(["simulate", "--trace", str(trace), "--strategies", "kg,dlb-h",
                 "--window", "2000", "--json", str(out)]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split("  ")[0] == "strategy"
    assert [h.strip() for h in header.split("  ") if h.strip()] == [
        "strategy", "avg RSTD", "max RSTD", "avg RSTD bound", "rebalances",
        "avg keys/rebal", "max keys/rebal", "events moved", "makespan", "busy makespan",
        "decide"]
    summaries = json.loads(out.read_text())
    for row in rows:
        cells = row.split()
        name = cells[0]
        assert cells[1] == pct(summaries[name]["avg_rstd"])
        assert cells[4] == count(summaries[name]["rebalances"])
        assert cells[7] == count(summaries[name]["events_moved"])
        assert cells[8] == count(summaries[name]["makespan"])
        assert cells[10].endswith("ms")
        assert not RAW_FLOAT.search(row), row
    assert "," in rows[0].split()[8]  # tens of thousands of events: separated


def test_cep_run_writes_its_summary_as_json(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    root = Path(__file__).parent.parent
    summary = tmp_path / "summary.json"
    assert main(["run", str(root / "rules" / "busy_topic.epl"), "--input",
                 str(root / "tests" / "data" / "tweets_small.jsonl"), "--runner", "local",
                 "--output", str(tmp_path / "out.jsonl"), "--set", "threshold=4",
                 "--json", str(summary)]) == 0
    data = json.loads(summary.read_text())
    assert data["events"] == 80 and data["dead_lettered"] == 0
    assert data["per_rule"] == {"busy_topic": data["output_rows"]}
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"cep: 80 events, {count(data['output_rows'])} output rows in ")
