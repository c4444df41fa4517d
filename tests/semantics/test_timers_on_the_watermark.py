"""Event time that passes for every key (issue 29): the watermark fires timers for keys
that went silent, the end of a bounded input fires what is pending, late events follow
the run's policy, and a key whose state time has expired holds nothing."""

from __future__ import annotations

import json

import pytest
from support.beats import BEAT, MIN, SILENT, heartbeats

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import reference_run
from grammar.compile import compile_text


def _clock(record: dict) -> str:
    return record["ts"][11:19]


@pytest.mark.parametrize("batch_size", [None, 1, 7, 40])
def test_a_silent_device_is_reported_when_the_others_move_time_past_its_deadline(
        run_epl, batch_size):
    events = heartbeats()
    out = run_epl(BEAT.format("") + SILENT, events, batch_size)
    first_after = next(i for i, e in enumerate(events) if e["ts"] >= 15 * MIN + 30_000)
    assert events[first_after]["device"] == "d1"
    assert [(r["device"], _clock(r), r["seq"]) for r in out] == [
        ("d2", "00:15:30", first_after),
        ("d1", "00:35:00", "end"), ("d3", "00:35:00", "end")]


def test_the_timers_result_comes_before_the_results_of_the_event_that_fired_it(run_epl):
    rule = BEAT.format("") + SILENT + "\n@Name('each')\nSELECT device FROM Beat;"
    out = run_epl(rule, heartbeats())
    fired = next(r["seq"] for r in out if r["rule"] == "silent")
    assert [(r["rule"], r["device"]) for r in out if r["seq"] == fired] == [
        ("silent", "d2"), ("each", "d1")]


def test_timers_of_one_moment_come_by_deadline_then_key(run_epl):
    # z goes silent first, then y, x and w at one time (y's beat first in the input);
    # w's beat at 00:30 moves the watermark past the four deadlines at once: its own
    # timer fires too, before the beat (too late to count) starts the next
    events = [{"device": d, "ts": t * MIN} for d, t in (
        ("z", 9), ("y", 10), ("x", 10), ("w", 10), ("w", 30))]
    out = run_epl(BEAT.format("") + SILENT, events)
    assert [(r["device"], _clock(r), r["seq"]) for r in out] == [
        ("z", "00:14:00", 4), ("w", "00:15:00", 4), ("x", "00:15:00", 4),
        ("y", "00:15:00", 4),
        ("w", "00:35:00", "end")]


OUT_OF_ORDER = [{"device": d, "ts": t * 1000} for d, t in (
    ("a", 0), ("b", 3), ("a", 2), ("b", 1), ("a", 9), ("b", 7), ("a", 8), ("b", 12))]


def _run(tmp_path, text: str, events: list[dict], late: str = "process"):
    module = compile_text(text, "<test>")
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    loaded = load_inputs(module, [str(path)], None)
    return reference_run(module, loaded.tables, late=late)


def test_out_of_order_within_the_lateness_gives_the_sorted_inputs_events(tmp_path):
    rule = (BEAT.format(" LATENESS 3 sec")
            + "SELECT device, count(*) AS n FROM Beat#groupwin(device)#time(4 sec);")
    shuffled = _run(tmp_path, rule, OUT_OF_ORDER)
    ordered = _run(tmp_path, rule, sorted(OUT_OF_ORDER, key=lambda e: e["ts"]))
    assert len(shuffled.late["seq"]) == 0
    strip = [({k: v for k, v in r.items() if k != "seq"}) for r in
             output_records(shuffled.output)]
    assert sorted(map(json.dumps, strip)) == sorted(
        json.dumps({k: v for k, v in r.items() if k != "seq"})
        for r in output_records(ordered.output))


def test_late_events_are_counted_and_dropped_or_processed_by_the_policy(tmp_path):
    rule = BEAT.format(" LATENESS 1 sec") + "SELECT device FROM Beat#groupwin(device)#length(1);"
    processed = _run(tmp_path, rule, OUT_OF_ORDER, "process")
    dropped = _run(tmp_path, rule, OUT_OF_ORDER, "drop")
    # below the watermark (largest so far − 1 s): b@1 (3−1=2), a@2? no (2 ≥ 2), a@8 (9−1)
    assert len(processed.late["seq"]) == len(dropped.late["seq"]) == 2
    assert len(processed.output["seq"]) == len(OUT_OF_ORDER)
    assert len(dropped.output["seq"]) == len(OUT_OF_ORDER) - 2


def test_keys_whose_window_time_has_passed_hold_nothing(tmp_path):
    rule = BEAT.format("") + "SELECT device, count(*) AS n FROM Beat#groupwin(device)#time(5 min);"
    events = [{"device": f"u{i}", "ts": i * MIN} for i in range(60)]
    module = compile_text(rule, "<test>")
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    loaded = load_inputs(module, [str(path)], None)
    run = reference_run(module, loaded.tables, batch_size=10, figures=True)
    # after each batch of ten one-minute users, only the last five minutes' users remain
    assert [b["keys_held"] for b in run.batches[:-1]] == [5] * 5
    assert run.batches[-1]["keys_held"] == 0  # the end of the input lets all time pass
