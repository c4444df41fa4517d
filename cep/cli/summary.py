"""What ``cep run`` says on standard error when it is done: events, output rows per
rule, dead letters, the engines' balance and the detection quality."""

from __future__ import annotations

import statistics

from cep.run_config import RunResult
from splitter.policies.strategies import KEY_PRESERVING


def summary_text(result: RunResult, seconds: float, dead_path: str) -> str:
    """The summary lines of a run that took ``seconds`` (compiling the rules included)."""
    events = result.totals.get("events_in", 0)
    outputs = result.totals.get("events_out", 0)
    dead_lettered = result.totals.get("dead_lettered", 0)
    blank = result.totals.get("blank_lines", 0)
    seconds = round(seconds, 3)
    rate = events / seconds if seconds else 0.0
    parts = [f"cep: {events} events, {outputs} output rows in {seconds:.2f}s "
             f"({rate:,.0f} events/s)"]
    if result.outputs_per_rule:
        parts.append("  per rule: " + ", ".join(
            f"{k}={v}" for k, v in result.outputs_per_rule.items()))
    if dead_lettered:
        parts.append(f"  {dead_lettered} malformed records dead-lettered to {dead_path}")
    if blank:
        parts.append(f"  {blank} blank lines skipped")
    late = result.totals.get("late_events", 0)
    if late and result.totals.get("late_dropped", 0):
        parts.append(f"  {late} late events (below the watermark) dead-lettered to "
                     f"{dead_path}")
    elif late:
        parts.append(f"  {late} late events (below the watermark) processed as they came; "
                     "declare how far the input may run out of order with LATENESS on its "
                     "schema's TIMESTAMP, or drop them with --late drop")
    return "\n".join(parts)


def balance_text(strategy: str, metrics: list[dict]) -> str | None:
    """The engines' balance of a Spark run in a line (the load RSTD that the strategies
    act on, what the DLB paper's Table 1 compares), and for a key-moving strategy whose
    run ended before its first key map could apply, why the balance stayed KG's (keys
    handed over at the end of the last batch never arrive): a user who asked for DLB and
    sees nothing change should learn why from the run, not from the docs."""
    from cep.verify import batch_rstds
    from splitter.balancer import FIRST_DECIDED_BATCH  # a Spark run has a balance

    if not metrics:
        return None
    rstds = batch_rstds(metrics).tolist()
    moved = sum(m.get("exported_keys", 0) for m in metrics)
    text = (f"  engines' load RSTD {statistics.fmean(rstds):.1f}% on average over "
            f"{len(rstds)} batch{'es' if len(rstds) != 1 else ''}, {moved:,} keys handed "
            f"over ({strategy})")
    if strategy != "kg" and strategy in KEY_PRESERVING and max(
            m["batch"] for m in metrics) < FIRST_DECIDED_BATCH:
        text += (f"\n  the run ended before batch {FIRST_DECIDED_BATCH}, where the "
                 "Balancer's first key map applies, so its balance is KG's; a smaller "
                 "--batch-size gives it batches to act between")
    return text


def quality_lines(quality: dict | None) -> list[str]:
    """Each rule's precision and recall against the input's ground truth, if it has one."""
    return [f"  {rule} vs ground truth: precision {q['precision']:.3f}, recall "
            f"{q['recall']:.3f} ({q['detected']:,} detected, {q['truth']:,} true)"
            for rule, q in (quality or {}).items()]
