"""Late events on Spark as in the local runner (docs/semantics-event-time.md, "Late
events"): counted once each, whatever rules their stream feeds (a stateful rule's stream
and a stream of a stateless rule only), and under ``--late drop`` left out before any rule
sees them and written to the dead letters exactly as the local runner writes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.beats import RULES, beats
from support.faults import (
    batch_total,
    cep_run,
    events,
    finish,
    in_flight,
    kill_group,
    metrics,
    start,
    wait_until,
)
from support.spark_runs import run_and_read

from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text

ALARMS = """
CREATE SCHEMA Alarm (device string, ts timestamp, level int) TIMESTAMP ts;
@Name('loud')
SELECT device, level FROM Alarm WHERE level > 3;
"""


def alarms(start: int, n: int = 120, seed: int = 11) -> list[dict]:
    """Alarms from ``start`` on (their file is read after the beats'), some of them well
    out of order."""
    rng = np.random.default_rng(seed)
    out, t = [], start
    for _ in range(n):
        t += int(rng.integers(10_000, 60_000))
        late = int(rng.integers(20_000, 90_000)) if rng.random() < 0.25 else 0
        out.append({"device": f"d{int(rng.integers(0, 12))}", "ts": t - late,
                    "level": int(rng.integers(0, 10))})
    return out


def _write(path, events) -> str:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def late_case(tmp_path_factory):
    """The rules, the inputs and the local runner's run with ``drop``: its events, dead
    letters (as a set of lines) and totals."""
    folder = tmp_path_factory.mktemp("late")
    beat = beats()
    sources = {"Beat": _write(folder / "beats.jsonl", beat),
               "Alarm": _write(folder / "alarms.jsonl", alarms(max(b["ts"] for b in beat)))}
    specs = [f"{name}={path}" for name, path in sources.items()]
    module = compile_text(RULES + ALARMS, "late")
    dead = folder / "local-dead.jsonl"
    local = run(module, RunConfig(specs, runner="local", late="drop",
                                  dead_letter=str(dead), output=Output(collect=True)))
    letters = _lines(dead)
    processed = run(module, RunConfig(specs, runner="local", output=Output(collect=True)))
    return module, sources, local, letters, processed


def _lines(path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    assert len(lines) == len(set(lines)), "a dead letter written twice"
    return set(lines)


def test_the_case_has_late_events_in_both_streams(late_case):
    _, _, local, letters, processed = late_case
    sources = {json.loads(line)["source"].rsplit("/", 1)[-1] for line in letters}
    assert sources == {"beats.jsonl", "alarms.jsonl"}
    assert all(json.loads(line)["kind"] == "late" for line in letters)
    assert local.totals["late_events"] == local.totals["late_dropped"] == len(letters) > 0
    assert local.records != processed.records  # dropping changes what the rules see
    assert "loud" in {r["rule"] for r in local.records}


@pytest.mark.parametrize(("engines", "batch_size"), [(1, 40), (3, 25)])
def test_spark_drops_late_events_as_the_local_runner(spark, late_case, tmp_path, engines,
                                                    batch_size):
    module, sources, local, letters, _ = late_case
    dead = tmp_path / "dead.jsonl"
    result, records = run_and_read(module, sources, engines=engines, batch_size=batch_size,
                                   late="drop", dead_letter=str(dead))
    assert records == local.records
    assert _lines(dead) == letters
    assert result.totals["late_events"] == result.totals["late_dropped"] == len(letters)
    assert sum(m["late_events"] for m in result.metrics) == len(letters)


def test_spark_counts_late_events_of_every_stream_under_process(spark, late_case, tmp_path):
    module, sources, _, _, processed = late_case
    dead = tmp_path / "dead.jsonl"
    result, records = run_and_read(module, sources, engines=3, batch_size=25,
                                   dead_letter=str(dead))
    assert records == processed.records
    assert result.totals["late_events"] == processed.totals["late_events"] > 0
    assert result.totals["late_dropped"] == 0
    assert not dead.exists() or not dead.read_text(encoding="utf-8")


def test_sigkill_then_restart_neither_loses_nor_repeats_a_late_dead_letter(late_case,
                                                                          tmp_path):
    """SIGKILLed inside batch 5, once its engines have written the dead letters of its
    late beats (after a batch that dropped one), and restarted from its checkpoint (keys
    moving through MongoDB): the local runner's events and dead letters, each once."""
    _, sources, local, letters, _ = late_case
    rule = tmp_path / "late.epl"
    rule.write_text(RULES + ALARMS, encoding="utf-8")
    run, dead = tmp_path / "run", tmp_path / "dead.jsonl"
    command = cep_run(run, "--input", f"Alarm={sources['Alarm']}", "--late", "drop",
                      "--dead-letter", str(dead), rule=rule,
                      source=f"Beat={sources['Beat']}")
    proc = start(command, tmp_path / "killed")
    folder = run / "dead" / f"batch-{5:07d}"
    wait_until(lambda: in_flight(run, 5) and any(folder.glob("late-*.jsonl")), proc,
               "batch 5's late dead letters written")
    kill_group(proc)
    assert batch_total(run, "late_events") > 0, "the kill must come after late events"
    resumed = finish(command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    assert events(Path(f"{run}.jsonl")) == local.records
    assert _lines(dead) == letters
    assert sum(m["late_events"] for m in metrics(Path(f"{run}.metrics"))) == len(letters)
