"""``/metrics``: the live view's figures in Prometheus' text format (version 0.0.4).

Names follow Prometheus' conventions, as Flink's and Spark's reporters do: a ``cep_``
prefix, base units in the name (``_seconds``, ``_bytes``, ``_ratio``), counters ending
in ``_total``, and one label per dimension (``engine``, ``rule``, ``kind``, ``phase``,
``stage``, ``part``, ``origin``, ``input`` and
``source``), so an existing Prometheus and Grafana can watch a
cep job without a converter. Counters count from the run's first batch (they are summed
from its metrics), so a restarted ``cep ui`` does not reset them.
"""

from __future__ import annotations

from cep.engine.clock import NO_TIME

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Exposition:
    """Metric families written one after another, each with HELP and TYPE lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, text: str,
               samples: list[tuple[dict[str, str], float | int | None]]) -> None:
        present = [(labels, value) for labels, value in samples if value is not None]
        if not present:
            return
        self.lines.append(f"# HELP {name} {text}")
        self.lines.append(f"# TYPE {name} {kind}")
        for labels, value in present:
            self.lines.append(f"{name}{_labels(labels)} {_number(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def exposition(snapshot: dict) -> str:
    """The text of ``/metrics`` for a state snapshot (``LiveState.snapshot``)."""
    out = Exposition()
    settings, totals = snapshot["settings"], snapshot["totals"]
    run = snapshot["run"]
    run_id = settings.get("run_id") or run["manifest"].get("run_id", "")
    out.family("cep_run_info", "gauge", "The watched run (value always 1).", [(
        {"run_id": run_id, "strategy": str(settings.get("strategy", "")),
         "rule_file": str(settings.get("rule_file", "")), "source": run["path"]}, 1)])
    out.family("cep_batches_total", "counter", "Micro-batches committed.",
               [({}, snapshot["batches"])])
    out.family("cep_last_batch", "gauge", "Id of the last committed micro-batch.",
               [({}, snapshot["last_batch"])])
    out.family("cep_last_batch_timestamp_seconds", "gauge",
               "Unix time the last micro-batch committed.", [({}, snapshot["last_wall"])])
    out.family("cep_events_in_total", "counter", "Input events the engines processed.",
               [({}, totals["events_in"])])
    out.family("cep_complex_events_total", "counter", "Complex events emitted, per rule.",
               [({"rule": r}, n) for r, n in snapshot["per_rule"].items()])
    out.family("cep_dead_letters_total", "counter",
               "Input records sent to the dead letters, per kind.", _dead_samples(snapshot))
    out.family("cep_rule_set_version", "gauge",
               "Rule set version the last batch ran (cep deploy and undeploy change it).",
               [({}, snapshot["rules"]["version"])])
    out.family("cep_rule_version", "gauge",
               "Per running rule, the rule set version its definition came with.",
               [({"rule": r["rule"]}, r["version"]) for r in snapshot["rules"]["running"]])
    out.family("cep_rule_start_batch", "gauge",
               "Per running rule, the micro-batch its definition started in.",
               [({"rule": r["rule"]}, r["batch"]) for r in snapshot["rules"]["running"]])
    out.family("cep_blank_lines_total", "counter", "Blank input lines skipped.",
               [({}, totals["blank_lines"])])
    _engines(out, snapshot)
    _balance(out, snapshot)
    _timing(out, snapshot)
    _state(out, snapshot)
    _inputs(out, snapshot)
    return out.text()


def _dead_samples(snapshot: dict) -> list[tuple[dict[str, str], int]]:
    """Per kind; dead letters of batches whose metrics lack the kinds (an older cep)
    count as ``unknown``, so the family always sums to the total."""
    kinds = dict(snapshot["dead_kinds"])
    rest = snapshot["totals"]["dead_lettered"] - sum(kinds.values())
    if rest > 0 or not kinds:
        kinds["unknown"] = max(rest, 0)
    return [({"kind": k}, n) for k, n in kinds.items()]


def _engines(out: Exposition, snapshot: dict) -> None:
    engines = snapshot["engines"]
    out.family("cep_engine_events_total", "counter", "Input events per CEP engine.",
               [({"engine": str(e)}, n) for e, n in enumerate(engines["rows"])])
    out.family("cep_engine_busy_seconds_total", "counter",
               "Wall seconds each CEP engine spent on its batches.",
               [({"engine": str(e)}, s) for e, s in enumerate(engines["busy_s"])])
    out.family("cep_engine_cpu_seconds_total", "counter",
               "CPU seconds each CEP engine's worker spent on its batches.",
               [({"engine": str(e)}, s) for e, s in enumerate(engines["cpu_s"])])
    out.family("cep_engine_batch_events", "gauge",
               "Input events per CEP engine in the last micro-batch.",
               [({"engine": str(e)}, n) for e, n in enumerate(engines["last_rows"])])


def _balance(out: Exposition, snapshot: dict) -> None:
    settings, totals = snapshot["settings"], snapshot["totals"]
    last = snapshot["points"][-1] if snapshot["points"] else {}
    rstd = last.get("rstd")
    out.family("cep_engine_load_rstd_ratio", "gauge",
               "Relative standard deviation of the engines' loads in the last micro-batch.",
               [({}, None if rstd is None else round(rstd / 100, 6))])
    threshold = settings.get("threshold")
    out.family("cep_balance_threshold_ratio", "gauge",
               "The imbalance (RSTD) above which the Balancer moves keys (theta).",
               [({}, None if threshold is None else round(threshold / 100, 6))])
    out.family("cep_engines", "gauge", "CEP engines of the run.",
               [({}, settings.get("engines"))])
    last = snapshot["points"][-1] if snapshot["points"] else {}
    out.family("cep_engines_running", "gauge",
               "CEP engines that ran the last micro-batch (cep scale, --engines auto).",
               [({}, last.get("engines") or None)])
    _autoscale(out, snapshot.get("autoscale") or {})
    out.family("cep_balancer_moved_keys_total", "counter",
               "Keys the Balancer decided to move.", [({}, totals["keys_moved"])])
    out.family("cep_keys_handed_over_total", "counter",
               "Keys whose state an engine handed over to another.",
               [({}, totals["exported_keys"])])
    out.family("cep_handed_over_bytes_total", "counter",
               "Bytes of key state handed over between engines.",
               [({}, totals["exported_bytes"])])
    out.family("cep_handover_seconds_total", "counter",
               "Engine seconds spent exporting and importing moved keys' state.",
               [({}, totals["handover_s"])])
    out.family("cep_balancer_keys", "gauge", "Keys the Balancer has seen.",
               [({}, snapshot["balance"].get("keys"))])


def _autoscale(out: Exposition, auto: dict) -> None:
    """``--engines auto``: the policy's bounds, its last measure and decision (with its
    reason as a label of an info gauge) and its changes per direction."""
    bounds, last = auto.get("bounds"), auto.get("last") or {}
    if not bounds:
        return
    out.family("cep_autoscale_bound_engines", "gauge",
               "The engine counts --engines auto may choose between.",
               [({"bound": "min"}, bounds[0]), ({"bound": "max"}, bounds[1])])
    out.family("cep_autoscale_load_engines", "gauge",
               "The load w the policy measured after the last micro-batch: the engines' "
               "busy seconds per wall second, scaled by arrivals when the lag grew.",
               [({}, last.get("load"))])
    out.family("cep_autoscale_wanted_engines", "gauge",
               "Guo and Zhou's pi = ceil(2w/(u+v)) for the last micro-batch, in bounds.",
               [({}, last.get("pi"))])
    out.family("cep_autoscale_decision_info", "gauge",
               "The policy's last decision (out, in, hold, wait) and its reason.",
               [({"action": str(last.get("action", "")),
                  "reason": str(last.get("reason", ""))}, 1)] if last else [])
    out.family("cep_autoscale_decisions_total", "counter",
               "Engine count changes the policy asked for, per direction.",
               [({"direction": d}, n) for d, n in (auto.get("counts") or {}).items()])


def _timing(out: Exposition, snapshot: dict) -> None:
    last = snapshot["points"][-1] if snapshot["points"] else {}
    out.family("cep_batch_duration_seconds", "gauge",
               "Wall seconds from the previous commit to the last micro-batch's commit.",
               [({}, last.get("duration"))])
    out.family("cep_batch_phase_seconds", "gauge",
               "The last micro-batch's parts: input tasks and engines in task seconds, "
               "delivery in wall seconds.",
               [({"phase": "read"}, last.get("read_s")),
                ({"phase": "engines"}, last.get("engines_s")),
                ({"phase": "deliver"}, last.get("deliver_s"))])
    out.family("cep_stage_seconds_total", "counter",
               "Task seconds per stage of the input tasks and engines.",
               [({"stage": s}, v) for s, v in snapshot["stage_s"].items()])
    out.family("cep_engine_part_seconds", "gauge",
               "The engines' task seconds of the last micro-batch: restore, process, "
               "save and handoff.",
               [({"part": part}, v) for part, v in last.get("engine_parts", {}).items()])


def _state(out: Exposition, snapshot: dict) -> None:
    last = snapshot["points"][-1] if snapshot["points"] else {}
    watermark = snapshot["balance"].get("watermark")
    out.family("cep_watermark_seconds", "gauge",
               "The event-time watermark after the last micro-batch, as Unix time.",
               [({}, watermark / 1e6 if isinstance(watermark, int) and watermark > NO_TIME
                 else None)])
    out.family("cep_late_events_total", "counter",
               "Input events below the watermark when they came (dropped or processed, as "
               "the run's --late says).", [({}, snapshot["totals"].get("late_events", 0))])
    out.family("cep_engine_keys_held", "gauge",
               "Keys with state in the engines after the last micro-batch.",
               [({}, last.get("keys_held"))])
    out.family("cep_batch_state_written_bytes", "gauge",
               "Bytes of engine state the last micro-batch wrote to the state store.",
               [({}, last.get("state_bytes"))])
    out.family("cep_state_written_bytes_total", "counter",
               "Bytes of engine state written to the state store.",
               [({}, snapshot["totals"].get("state_bytes"))])
    out.family("cep_engine_restores_total", "counter",
               "Engine batches by where the engine's state came from (resident, "
               "caught_up, rebuilt, new) and the state log entries read (log_entries).",
               [({"origin": s}, n) for s, n in snapshot.get("restored", {}).items()])


def _inputs(out: Exposition, snapshot: dict) -> None:
    sources = (snapshot["input"] or {}).get("sources", [])
    labelled = [({"input": s["stream"], "source": s["source"]}, s) for s in sources]
    out.family("cep_input_read_records_total", "counter",
               "Input records read (estimated from bytes for text files).",
               [(labels, s["read_records"]) for labels, s in labelled])
    out.family("cep_input_behind_records", "gauge",
               "Input records found but not read yet (Kafka: the offset lag).",
               [(labels, s["behind_records"]) for labels, s in labelled])
    out.family("cep_input_arrived_records", "gauge",
               "Input records that arrived after the last listing, when the batch "
               "committed (a followed file's growth, a Kafka partition's end past the "
               "plan); with cep_input_behind_records, the lag --engines auto reads.",
               [(labels, s.get("arrived_records", 0)) for labels, s in labelled])
    out.family("cep_input_read_bytes_total", "counter", "Bytes of text input read.",
               [(labels, s["read"]) for labels, s in labelled if s["unit"] == "bytes"])
    out.family("cep_input_behind_bytes", "gauge", "Bytes of text input not read yet.",
               [(labels, s["behind"]) for labels, s in labelled if s["unit"] == "bytes"])


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{name}="{_escape(str(value))}"' for name, value in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float | int) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return repr(float(value)) if isinstance(value, float) else str(value)
