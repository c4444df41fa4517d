"""cep verify and cep bench from the command line (a real Spark run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.children import default_signals

from cep.cli.errors import EXIT_INTERRUPTED
from cep.verify import StrategyResult, balance_bounds, balance_headroom, headroom_captured

ROOT = Path(__file__).parent.parent.parent


def test_verify_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "verify.json"
    result = subprocess.run(
        [sys.executable, "-m", "cep.cli", "verify", str(ROOT / "rules" / "fsd.epl"),
         "--input", str(ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"),
         "--strategies", "kg,dlb-h,pkg", "--engines", "3", "--batch-size", "30",
         "--threshold", "5", "--master", "local[2]", "--load", "events,cost",
         # every proposal moves: whether the gate lets one through depends on measured
         # seconds, and this test is about the table, not the gate (test_move_gain)
         "--moves", "always", "--warm-up", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["strategy", "events", "="]
    document = json.loads(out.read_text())
    assert (document["order"], document["engines"], document["nodes"]) == ("default", 3, None)
    assert document["date"] and len(document["load_average_at_end"]) == 3
    # a file is warmed up on whole: the warm-up run's figures are not among the results
    assert document["warm_up"] == [str(ROOT / "tests" / "data" / "skewed" / "tweets.jsonl")]
    rows = {r["strategy"] + ("/cost" if r["load"] == "cost" else ""): r
            for r in document["results"]}
    assert list(rows) == ["kg", "dlb-h", "dlb-h/cost", "pkg"]  # one run per measure
    assert rows["dlb-h/cost"]["equal_to_kg"] and rows["dlb-h/cost"]["rebalances"] > 0
    assert all(len(r["load_average"]) == 3 for r in rows.values())
    assert [row["strategy"] for row in document["table1"]] == list(rows)
    assert rows["dlb-h"]["equal_to_kg"] and rows["dlb-h"]["keys_moved"] > 0
    assert all(r["avg_cpu_rstd"] > 0 for r in rows.values())  # 3 engines never tie
    assert all(r["headroom_events"] >= 1.0 and r["headroom_cpu"] >= 1.0
               for r in rows.values())
    assert not rows["pkg"]["equal_to_kg"] and rows["pkg"]["extra"] > 0
    # a line per run on standard error as it starts and as it ends: a comparison runs
    # for minutes, and a run on Spark says nothing until its first batch
    lines = [line for line in result.stderr.splitlines() if line.startswith("cep: [")]
    starting = [line for line in lines if line.endswith(": running")]
    progress = [line for line in lines if not line.endswith(": running")]
    assert [line.split(":")[1].strip() for line in starting] == [
        line.split(":")[1].strip() for line in progress]
    assert lines.index(starting[0]) == 0 and lines.index(starting[1]) > lines.index(progress[0])
    assert [line.split(":")[1].strip() for line in progress] == [
        "[1/4] round 1, kg (events)", "[2/4] round 1, dlb-h (events)",
        "[3/4] round 1, dlb-h (cost)", "[4/4] round 1, pkg (events)"]
    assert progress[-1].endswith("events DIFFER from KG")


def test_balance_headroom_is_one_when_the_cores_not_the_busiest_engine_bound_a_batch():
    # five engines on two slots: the busiest holds 30% of the work, under 1/2
    assert balance_headroom([[30, 25, 20, 15, 10]], slots=2) == 1.0
    # a core per engine: KG's busiest engine over the mean
    assert balance_headroom([[60, 40]], slots=2) == 1.2
    # one engine with 70% of the work on two slots: 70 against 50; batches add up
    assert balance_headroom([[70, 10, 10, 10], [25, 25, 25, 25]], slots=2) == round(
        (70 + 50) / (50 + 50), 3)
    assert balance_headroom([[], [0.0, 0.0]], slots=2) == 1.0  # no work: nothing to gain


def test_balance_headroom_keeps_the_heaviest_key_on_one_engine():
    # five engines, a core each: one key holds 39 of 100 rows, so no placement that keeps
    # it whole beats 39 against KG's busiest 51
    assert balance_headroom([[51, 20, 12, 9, 8]], slots=5, heaviest=[39]) == round(51 / 39, 3)
    # a key under the mean share changes nothing
    assert balance_headroom([[30, 20, 20, 20, 10]], slots=5, heaviest=[9]) == 1.5


def test_sigterm_ends_the_whole_bench_not_only_the_run_in_flight(tmp_path):
    """The run in flight stops as ``cep run`` stops on SIGTERM, and then the bench
    stops too: before, it went on with the next strategy and compared the cut run
    with KG ("events DIFFER"), writing a JSON of figures from a run cut short."""
    out, runs = tmp_path / "bench.json", tmp_path / "runs"
    runs.mkdir()
    proc = subprocess.Popen(default_signals(
        [sys.executable, "-m", "cep.cli", "bench", str(ROOT / "rules" / "fsd.epl"),
         "--input", str(ROOT / "tests" / "data" / "skewed" / "tweets.jsonl"),
         "--strategies", "kg,dlb-h,pkg", "--engines", "3", "--batch-size", "30",
         "--master", "local[2]", "--warm-up", "0", "--json", str(out)]),
        stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(runs)})
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("cep: [1/3]"):
            break
    # the second run is in flight once its query has planned a batch (the first run's
    # directory is gone by then)
    deadline = time.monotonic() + 120
    while not list(runs.glob("cep-run-*/checkpoint/offsets/0")):
        assert time.monotonic() < deadline and proc.poll() is None, "".join(seen)
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    seen.extend(proc.stderr)
    assert proc.wait(timeout=300) == EXIT_INTERRUPTED, "".join(seen)
    assert not any(line.startswith(("cep: [2/3]", "cep: [3/3]")) for line in seen), seen
    assert not out.exists()


def test_headroom_captured_is_the_share_of_kg_headroom_a_placement_took():
    """KG's busiest engines leave 51 events a batch where no placement can go below the
    heaviest key's 39: a strategy whose busiest engine carries 45 took half of that."""
    def result(strategy, busiest):
        batches = [[busiest, 100 - busiest - 30, 10, 10, 10]]
        bound, floor = balance_bounds(batches, 5, [39])
        return StrategyResult(strategy, 0, True, 0, 0, 0.0, 0.0, 0, 0, 0, 0.0,
                              events_bound=bound, events_floor=floor)
    kg = result("kg", 51)
    assert headroom_captured(result("dlb-l", 45), kg) == pytest.approx(0.5)
    assert headroom_captured(result("dlb-h", 39), kg) == pytest.approx(1.0)
    assert headroom_captured(result("lptf", 57), kg) == pytest.approx(-0.5)
    even = result("kg", 39)  # KG already at the floor: nothing to capture
    assert headroom_captured(result("dlb-l", 39), even) is None
