"""cep simulate: the trace simulator from the command line."""

from __future__ import annotations

import json

import numpy as np

from cep.cli import main


def test_simulate_skewed_trace_balances_and_writes_json(tmp_path, capsys):
    rng = np.random.default_rng(1)
    ranks = np.arange(1, 513)
    p = ranks ** -1.0 / (ranks ** -1.0).sum()
    trace = tmp_path / "trace.npy"
    np.save(trace, rng.choice(512, size=60_000, p=p))
    out = tmp_path / "sim.json"
    assert main(["simulate", "--trace", str(trace), "--strategies", "kg,dlb-h,lptf",
                 "--window", "5000", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("strategy")
    summaries = json.loads(out.read_text())
    assert summaries["dlb-h"]["avg_rstd"] < summaries["kg"]["avg_rstd"]
    assert summaries["dlb-h"]["rebalances"] > 0 and summaries["kg"]["rebalances"] == 0


def test_simulate_rejects_unknown_strategy(capsys):
    assert main(["simulate", "--events", "1000", "--strategies", "dlb-x"]) == 1
    assert "unknown strategy dlb-x" in capsys.readouterr().err
