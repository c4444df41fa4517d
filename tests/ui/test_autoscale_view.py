"""The live view of a job under ``--engines auto``: each batch's point says the engines
that ran it and the policy's decision; the state lists the decisions that changed the
count with their reasons, and ``/metrics`` exposes the bounds, the load, Guo and Zhou's
pi, the last decision with its reason and the changes per direction.

Oracle: the records themselves (the decisions fed in are the ones that must come out)."""

from __future__ import annotations

from cep.ui.prometheus import exposition
from cep.ui.state import LiveState


def _record(batch: int, engines: int, action: str, target: int | None = None) -> dict:
    decision = {"action": action, "engines": engines, "load": 1.7, "pi": 4,
                "target": target, "reason": f"because {action}"}
    return {"batch": batch, "events_in": 10, "events_out": 1, "wall_time": 100.0 + batch,
            "settings": {"rules": ["hot"], "autoscale": [1, 4]},
            "rows_per_engine": [10 // engines] * engines, "autoscale": decision}


def test_the_view_marks_scale_decisions_and_changes_and_exposes_them():
    state = LiveState()
    for record in (_record(0, 1, "hold"), _record(1, 1, "out", 4), _record(2, 1, "wait"),
                   _record(3, 4, "wait"), _record(4, 4, "in", 2), _record(5, 2, "hold")):
        state.add(record)
    state.add({"batch": 6, "events_in": 0})  # a record of an older cep: no decision
    snap = state.snapshot()
    points = snap["points"]
    assert [p["engines"] for p in points] == [1, 1, 1, 4, 4, 2, 0]
    assert [p.get("autoscale") for p in points] == ["hold", "out", "wait", "wait", "in",
                                                    "hold", None]
    assert points[1]["autoscale_target"] == 4 and points[1]["autoscale_reason"] == "because out"
    assert snap["autoscale"]["decisions"] == [
        {"batch": 1, "action": "out", "from": 1, "to": 4, "reason": "because out"},
        {"batch": 4, "action": "in", "from": 4, "to": 2, "reason": "because in"}]
    state = LiveState()
    for record in (_record(0, 1, "out", 4), _record(1, 4, "hold")):
        state.add(record)
    text = exposition({"run": {"path": "run", "manifest": {}}, **state.snapshot()})
    assert "cep_engines_running 4\n" in text
    assert 'cep_autoscale_bound_engines{bound="max"} 4\n' in text
    assert "cep_autoscale_wanted_engines 4\n" in text
    assert 'cep_autoscale_decision_info{action="hold",reason="because hold"} 1\n' in text
    assert 'cep_autoscale_decisions_total{direction="out"} 1\n' in text


def test_the_view_and_metrics_show_the_lag_the_policy_reads():
    """A followed input's lag is its records found and not read plus those that
    arrived after the listing: the point's ``behind_records`` is the lag
    ``splitter.autoscale.observation`` gives the policy, and ``/metrics`` has both parts.
    Oracle: the numbers fed in (6 behind, 7 arrived)."""
    from splitter.autoscale import observation

    record = {**_record(0, 2, "hold"), "input": {"sources": [
        {"stream": "Reading", "source": "in/", "unit": "bytes", "read": 100, "behind": 60,
         "read_records": 4, "behind_records": 6, "arrived_records": 7}]}}
    state = LiveState()
    state.add(record)
    snap = state.snapshot()
    assert snap["points"][0]["behind_records"] == 13 == observation(record, None).behind
    text = exposition({"run": {"path": "run", "manifest": {}}, **snap})
    assert 'cep_input_behind_records{input="Reading",source="in/"} 6\n' in text
    assert 'cep_input_arrived_records{input="Reading",source="in/"} 7\n' in text
