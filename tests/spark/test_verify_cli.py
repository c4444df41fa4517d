"""cep verify and cep bench from the command line (a real Spark run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cep.bench import PAPER_TABLE1, format_bench
from cep.verify import StrategyResult

ROOT = Path(__file__).parent.parent.parent


def test_verify_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "verify.json"
    result = subprocess.run(
        [sys.executable, "-m", "cep.cli", "verify", str(ROOT / "rules" / "fsd.epl"),
         "--input", str(ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"),
         "--strategies", "kg,dlb-h,pkg", "--engines", "3", "--batch-size", "30",
         "--threshold", "5", "--master", "local[2]", "--json", str(out)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["strategy", "events", "="]
    rows = {r["strategy"]: r for r in json.loads(out.read_text())}
    assert rows["dlb-h"]["equal_to_kg"] and rows["dlb-h"]["keys_moved"] > 0
    assert all(r["avg_cpu_rstd"] > 0 for r in rows.values())  # 3 engines never tie
    assert not rows["pkg"]["equal_to_kg"] and rows["pkg"]["extra"] > 0


def test_bench_table_puts_the_paper_beside_each_strategy():
    result = StrategyResult("dlb-h", 57, True, 0, 0, 21.8, 40.0, 3, 11, 13_134, 30.0,
                            processed=240, events_per_s=8.0, load_moved=26,
                            avg_cpu_rstd=36.7)
    table = format_bench([result])
    paper_rate = f"{PAPER_TABLE1['dlb-h'][0] / 2400:,.0f}"
    assert "dlb-h" in table and paper_rate in table and "23.43%" in table
    header, row = table.splitlines()[:2]
    assert "CPU RSTD" in header and "21.8%" in row and "36.7%" in row
