"""Timers on Spark fire as in the reference (docs/semantics-event-time.md): every kind of
timer, for keys that go silent, across engines and batch sizes, at the end of the input,
with keys moving between engines while their timers are pending, and the state of keys
whose time has passed freed on every engine."""

from __future__ import annotations

import json

import pytest
from support.beats import BEAT, MIN, RULES, SILENT, beats, heartbeats
from support.chaos import chaos
from support.spark_runs import reference, run_and_read

from cep.io.inputs import load_inputs
from cep.reference import reference_run
from grammar.compile import compile_text
from splitter.policies import strategies


@pytest.fixture(scope="module")
def timers_case(tmp_path_factory):
    path = tmp_path_factory.mktemp("beats") / "beats.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in beats()), encoding="utf-8")
    module = compile_text(RULES, "timers")
    expected = reference(module, path)
    loaded = load_inputs(module, [str(path)], None)
    held = reference_run(module, loaded.tables, figures=True).batches[-1]["keys_held"]
    assert {r["rule"] for r in expected} == {"silent", "minute", "burst", "calm", "rise",
                                            "dip", "recent"}
    assert any(r["seq"] >= 1 << 36 for r in expected)  # some fire at the end of input
    return module, path, expected, held


@pytest.mark.parametrize(("engines", "batch_size"), [(1, 40), (3, 7), (5, 40), (3, 150)])
def test_spark_fires_timers_as_the_reference(spark, timers_case, engines, batch_size):
    module, path, expected, held = timers_case
    run, records = run_and_read(module, path, engines=engines, batch_size=batch_size)
    assert records == expected
    assert sum(m.get("late_events", 0) for m in run.metrics) > 0  # counted, processed
    # the last batch is the end of the input: every timer fired, the keys whose state
    # time has passed freed on every engine; what is left (#length(1)'s last row) is
    # what the reference holds
    assert run.metrics[-1]["keys_held"] == held == 12
    # ... the one batch that says so (its progress line names it): no event read, and
    # what it output is what the end of the input fired
    assert [m["input_ended"] for m in run.metrics] == [False] * (len(run.metrics) - 1) + [True]
    assert run.metrics[-1]["events_in"] == 0
    assert run.metrics[-1]["events_out"] == sum(r["seq"] >= 1 << 36 for r in expected) > 0


@pytest.mark.parametrize(("engines", "batch_size"), [(1, 10), (3, 7)])
def test_the_issues_silent_device_is_reported_on_spark(spark, tmp_path, engines, batch_size):
    """d2 stops at 00:10:30: reported at 00:15:30 at the seq of the first beat (of d1) that
    moves the watermark there; d1 and d3 at the end of the input (00:35:00)."""
    events = heartbeats()
    path = tmp_path / "beats.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    module = compile_text(BEAT.format("") + SILENT, "silent")
    _, records = run_and_read(module, path, engines=engines, batch_size=batch_size)
    assert records == reference(module, path)
    first_after = next(i for i, e in enumerate(events) if e["ts"] >= 15 * MIN + 30_000)
    at_line = sum(len(json.dumps(e)) + 1 for e in events[:first_after])
    assert [(r["device"], r["ts"][11:19]) for r in records] == [
        ("d2", "00:15:30"), ("d1", "00:35:00"), ("d3", "00:35:00")]
    assert records[0]["seq"] == at_line and events[first_after]["device"] == "d1"


# dlb-l (the paper's) and chaos (a random key to a random engine every batch) by default;
# the other movers of the same handoff are slow tests (test_balancing runs them on Spark)
@pytest.mark.parametrize("strategy", ["dlb-l", "chaos", *(
    pytest.param(name, marks=pytest.mark.slow) for name in ("dlb-h", "lptf", "elb", "clb"))])
def test_keys_moving_with_timers_pending_give_exactly_the_kg_events(
        spark, timers_case, strategy, monkeypatch):
    """Keys move between engines, through MongoDB, while their timers, open windows and
    intervals are pending (devices that went silent included): the events are KG's."""
    monkeypatch.setitem(strategies.STRATEGIES, "chaos", chaos)
    module, path, expected, _ = timers_case
    run, records = run_and_read(module, path, engines=3, batch_size=20, strategy=strategy,
                                threshold=5.0, moves="always")
    assert sum(m["exported_keys"] for m in run.metrics) > 0
    assert records == expected


def test_keys_held_fall_back_to_the_recently_active_keys(spark, tmp_path):
    """60 users, each active for one minute in turn, under a #time(5 min) rule: after
    each batch the engines hold the users of the last five minutes or so, not every
    user seen, and nothing once the input has ended."""
    events = [{"device": f"u{i}", "ts": i * 60_000 + j * 10_000, "v": j}
              for i in range(60) for j in range(5)]
    path = tmp_path / "users.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    module = compile_text("CREATE SCHEMA Beat (device string, ts timestamp, v int) "
                          "TIMESTAMP ts;\nSELECT device, count(*) AS n "
                          "FROM Beat#groupwin(device)#time(5 min);", "recent")
    run, records = run_and_read(module, path, engines=3, batch_size=25)
    assert records == reference(module, path)
    held = [m["keys_held"] for m in run.metrics]
    assert len(held) > 10 and max(held) <= 11  # about 5 minutes of users, of 60
    assert held[-1] == 0


def test_milp_moving_keys_with_timers_pending_gives_exactly_the_kg_events(spark, tmp_path):
    """MILP's migration budget (5% of the keys with load) moves none of 12 devices: here
    60 devices, so that it moves some while their timers are pending."""
    path = tmp_path / "beats.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in beats(n=900, devices=60)),
                    encoding="utf-8")
    module = compile_text(RULES, "timers")
    run, records = run_and_read(module, path, engines=3, batch_size=60, strategy="milp",
                                threshold=5.0, moves="always")
    assert sum(m["exported_keys"] for m in run.metrics) > 0
    assert records == reference(module, path)
