"""What ``cep run`` says on standard error when it is done: events, output rows per
rule, dead letters, the engines' balance and the detection quality; and the same as one
JSON document for ``cep run --json``. Figures are written as ``cep.tables`` writes them."""

from __future__ import annotations

import statistics

from cep.run_config import RunResult
from cep.tables import count, pct, seconds
from splitter.policies.names import KEY_PRESERVING


def summary_text(result: RunResult, elapsed: float, dead_path: str) -> str:
    """The summary lines of a run that took ``elapsed`` seconds (compiling the rules
    included)."""
    data = summary_data(result, elapsed, dead_path)
    parts = [f"cep: {count(data['events'])} events, {count(data['output_rows'])} output rows "
             f"in {seconds(data['seconds'], 2)} ({count(data['events_per_s'])} events/s)"]
    if data["per_rule"]:
        parts.append("  per rule: " + ", ".join(
            f"{k}={count(v)}" for k, v in data["per_rule"].items()))
    if data["dead_lettered"]:
        parts.append(f"  {count(data['dead_lettered'])} malformed records dead-lettered to "
                     f"{dead_path}")
    if data["udf_failures"]:
        parts.append(f"  {count(data['udf_failures'])} records on which user functions failed "
                     f"dead-lettered to {dead_path} (their values NULL)")
    if data["blank_lines"]:
        parts.append(f"  {count(data['blank_lines'])} blank lines skipped")
    late = data["late_events"]
    if late and data["late_dropped"]:
        parts.append(f"  {count(late)} late events (below the watermark) dead-lettered to "
                     f"{dead_path}")
    elif late:
        parts.append(f"  {count(late)} late events (below the watermark) processed as they "
                     "came; declare how far the input may run out of order with LATENESS on "
                     "its schema's TIMESTAMP, or drop them with --late drop")
    return "\n".join(parts)


def summary_data(result: RunResult, elapsed: float, dead_path: str,
                 strategy: str | None = None) -> dict[str, object]:
    """The summary as data: what ``cep run --json`` writes. ``strategy``: the Spark
    run's, whose engines' balance it adds (None: the local runner, no engines)."""
    totals = result.totals
    events = totals.get("events_in", 0)
    elapsed = round(elapsed, 3)
    data: dict[str, object] = {
        "events": events, "output_rows": totals.get("events_out", 0),
        "seconds": elapsed, "events_per_s": events / elapsed if elapsed else 0.0,
        "per_rule": dict(result.outputs_per_rule or {}),
        "dead_lettered": totals.get("dead_lettered", 0), "dead_letter_file": dead_path,
        "blank_lines": totals.get("blank_lines", 0),
        "udf_failures": totals.get("udf_failures", 0),
        "late_events": totals.get("late_events", 0),
        "late_dropped": totals.get("late_dropped", 0),
        "quality": result.quality or None,
    }
    if strategy is not None:
        data["balance"] = balance_data(strategy, result.metrics)
    return data


def balance_data(strategy: str, metrics: list[dict]) -> dict[str, object] | None:
    """The engines' balance of a Spark run: the mean load RSTD over the batches that read
    events, the batches and the keys handed over (None: no batch)."""
    from cep.verify import batch_rstds

    if not metrics:
        return None
    rstds = batch_rstds(metrics).tolist()
    return {"strategy": strategy, "avg_rstd": statistics.fmean(rstds),
            "batches": len(rstds),
            "keys_handed_over": sum(m.get("exported_keys", 0) for m in metrics),
            "last_batch": max(m["batch"] for m in metrics),
            "scale_changes": scale_changes(metrics)}


def scale_changes(metrics: list[dict]) -> list[dict]:
    """The scale changes of the batches in ``metrics``: from and to how many engines, the
    batch from which the new count ran, and the keys and bytes the engines handed over
    at the end of the batch before (``scaled``, which ``ScaleHook`` adds to that batch's
    metrics; the Balancer's ``keys_moved`` counts only the keys it knew of)."""
    return [{"at_batch": m["scaled"]["at_batch"], "from": m["scaled"]["from"],
             "to": m["scaled"]["to"], "keys": m["scaled"]["keys"],
             "bytes": m["scaled"]["bytes"]} for m in metrics if m.get("scaled")]


def balance_text(strategy: str, metrics: list[dict]) -> str | None:
    """The engines' balance of a Spark run in a line (the load RSTD that the strategies
    act on, what the DLB paper's Table 1 compares), and for a key-moving strategy whose
    run ended before its first key map could apply, why the balance stayed KG's (keys
    handed over at the end of the last batch never arrive): a user who asked for DLB and
    sees nothing change should learn why from the run, not from the docs."""
    from splitter.balancer import FIRST_DECIDED_BATCH  # a Spark run has a balance

    balance = balance_data(strategy, metrics)
    if balance is None:
        return None
    batches = balance["batches"]
    text = (f"  engines' load RSTD {pct(balance['avg_rstd'])} on average over "
            f"{count(batches)} batch{'es' if batches != 1 else ''}, "
            f"{count(balance['keys_handed_over'])} keys handed over ({strategy})")
    for change in balance["scale_changes"]:  # type: ignore[attr-defined]
        text += (f"\n  {change['from']} -> {change['to']} engines from batch "
                 f"{count(change['at_batch'])}: {count(change['keys'])} keys, "
                 f"{count(change['bytes'])} bytes handed over")
    if (strategy != "kg" and strategy in KEY_PRESERVING
            and balance["last_batch"] < FIRST_DECIDED_BATCH):
        text += (f"\n  the run ended before batch {FIRST_DECIDED_BATCH}, where the "
                 "Balancer's first key map applies, so its balance is KG's; a smaller "
                 "--batch-size gives it batches to act between")
    return text


def quality_lines(quality: dict | None) -> list[str]:
    """Each rule's precision and recall against the input's ground truth, if it has one."""
    return [f"  {rule} vs ground truth: precision {q['precision']:.3f}, recall "
            f"{q['recall']:.3f} ({count(q['detected'])} detected, {count(q['truth'])} true)"
            for rule, q in (quality or {}).items()]
