"""The live view of a job whose rules changed: each batch's point says the rule set
version it ran and whether it started there (the charts' marker), the state lists the
running rules with their version and start batch, and ``/metrics`` exposes them."""

from __future__ import annotations

from cep.ui.prometheus import exposition
from cep.ui.state import LiveState


def _record(batch: int, version: int, changed: bool, running: list[dict]) -> dict:
    return {"batch": batch, "events_in": 10, "events_out": 1, "wall_time": 100.0 + batch,
            "settings": {"rules": ["hot"]}, "outputs_per_rule": {"hot": 1},
            "rules": {"version": version, "changed": changed, "running": running}}


def test_the_view_marks_where_the_rules_changed_and_lists_them():
    start = [{"rule": "hot", "version": 0, "batch": 0, "first_seq": 0, "started": "start"}]
    later = [*start, {"rule": "cold", "version": 1, "batch": 2, "first_seq": 99,
                      "started": "added"}]
    state = LiveState()
    state.add(_record(0, 0, False, start))
    state.add(_record(1, 0, False, start))
    state.add(_record(2, 1, True, later))
    state.add({"batch": 3, "events_in": 0})  # a record of an older cep: no rules
    snap = state.snapshot()
    assert [p["rules_changed"] for p in snap["points"]] == [False, False, True, False]
    assert [p["rules_version"] for p in snap["points"]] == [0, 0, 1, 0]
    assert snap["rules"]["changes"] == [{"batch": 2, "version": 1}]
    state = LiveState()
    for record in (_record(0, 0, False, start), _record(2, 1, True, later)):
        state.add(record)
    snap = state.snapshot()
    assert snap["rules"]["running"] == later and snap["rules"]["version"] == 1
    text = exposition({"run": {"path": "run", "manifest": {}}, **snap})
    assert "cep_rule_set_version 1\n" in text
    assert 'cep_rule_version{rule="cold"} 1\n' in text
    assert 'cep_rule_start_batch{rule="cold"} 2\n' in text
