"""One batch's metrics record as the few figures the page plots for it.

A record (``cep.spark.output.sink``) holds the run's settings, per-engine arrays and the latest
events; the page's charts need only numbers per batch, so this is what the server keeps
in its window of history and sends on every poll. Fields a record lacks (an older cep,
the local runner's single record) come out as 0 or None, never as an error.
"""

from __future__ import annotations

from splitter.autoscale import input_lag

READ_STAGES = ("read", "derive", "route")  # the input tasks' part of a batch
HANDOVER_STAGES = ("export", "import")  # the engines' part of moving keys
# An engine task's seconds as the state path splits them: finding its engine (the
# resident copy, caught up or rebuilt from the state store's log), running the rules,
# writing the batch's change, moving keys ("snapshot": the save of an older cep).
ENGINE_PARTS = {"restore": ("restore",), "process": ("process",),
                "save": ("save", "snapshot"), "handoff": HANDOVER_STAGES}


def is_batch_record(record: object) -> bool:
    """A per-batch metrics record, not another line a metrics file may hold (the local
    runner's quality line, say)."""
    return isinstance(record, dict) and isinstance(record.get("batch"), int) \
        and "events_in" in record


def batch_point(record: dict, previous_wall: float | None) -> dict:
    """The plotted figures of one batch. ``previous_wall``: the commit time of the batch
    before it (its duration is the gap; the first batch's is its sink time, as ``cep
    report`` takes it)."""
    wall = record.get("wall_time")
    if wall is not None and previous_wall is not None and wall > previous_wall:
        duration = wall - previous_wall
    else:
        duration = record.get("sink_s") or None
    stages = record.get("stage_s", {})
    busy = record.get("busy_s_per_engine", [])
    events_in, events_out = record.get("events_in", 0), record.get("events_out", 0)
    sources = (record.get("input") or {}).get("sources", [])
    return {
        "batch": record["batch"],
        "wall": wall,
        "duration": _round(duration),
        "events_in": events_in,
        "events_out": events_out,
        "in_rate": _round(events_in / duration) if duration else None,
        "out_rate": _round(events_out / duration) if duration else None,
        "rows": record.get("rows_per_engine", []),
        "busy": busy,
        "rstd": record.get("rstd"),
        "handed_over": record.get("exported_keys", 0),
        "handover_bytes": record.get("exported_bytes", 0),
        "imported": record.get("imported_keys", 0),
        "handover_s": _round(sum(stages.get(s, 0.0) for s in HANDOVER_STAGES)),
        "decided": record.get("keys_moved", 0),
        "outputs": record.get("outputs_per_rule", {}),
        "dead": record.get("dead_lettered", 0),
        "read_s": _round(sum(stages.get(s, 0.0) for s in READ_STAGES)),
        "engines_s": _round(sum(busy)),
        "engine_parts": {part: _round(sum(stages.get(s, 0.0) for s in names))
                         for part, names in ENGINE_PARTS.items()},
        "keys_held": record.get("keys_held"),
        "state_bytes": record.get("state_bytes"),
        "deliver_s": record.get("write_s"),
        # the lag the autoscaler reads: found and not read, plus arrived since
        "behind_records": input_lag(sources) if sources else None,
        # the rule set version the batch ran, and whether it started there (cep deploy)
        "rules_version": (record.get("rules") or {}).get("version", 0),
        "rules_changed": bool((record.get("rules") or {}).get("changed")),
        # the engines that ran it; a scale decision (--engines auto) and its reason
        "engines": len(record.get("rows_per_engine", [])),
        **_autoscale(record.get("autoscale")),
    }


def _autoscale(decision: dict | None) -> dict:
    """A batch's ``--engines auto`` decision as plotted: only a change (``out``, ``in``)
    is marked; every batch says the count the policy wants (``pi``)."""
    if not decision:
        return {}
    changed = decision.get("action") in ("out", "in")
    return {"autoscale": decision.get("action"), "autoscale_pi": decision.get("pi"),
            "autoscale_load": decision.get("load"),
            **({"autoscale_target": decision.get("target"),
                "autoscale_reason": decision.get("reason")} if changed else {})}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
