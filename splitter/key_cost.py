"""What a key cost its engine in a batch, in seconds: the Balancer's ``--load cost``.

The DLB paper balances events: a key's load is its tuples. An engine's work does not
follow its events alone, though: every key a batch touches is read from the state store
before the batch and written back after it, whatever its events (in a 5-engine FSD run
at the paper's scale the engines spent 62 task seconds restoring and saving key state
against 34 processing tweets), so an even split of events can be an uneven split of
work. ``--load cost`` balances the work as the engines measured it.

Each engine's stats row (``engine_batch``) carries its busy seconds, the seconds of
each stage of its batch and its events per key. Those are split over the keys the batch
touched: the stages that run over the batch's rows (``EVENT_STAGES``) in proportion to
each key's events, all the other engine seconds (reading, writing and handing over key
state) in equal parts, since each touched key costs one restore and one save. A key's
cost is thus ``fixed_e + per_event_e · events``, with the engine's own two rates: a key
on a slower or busier engine costs more there, which is what its engine's batch length
feels. The stages the input tasks ran before the shuffle (read, derive, route) are not
the engine's and are left out.
"""

from __future__ import annotations

EVENT_STAGES = ("unpack", "process", "output")  # seconds that follow the batch's rows


def key_costs(stats: list[dict]) -> dict[str, float]:
    """Seconds per key (JSON text) over the engines' stats rows of one batch; a key that
    more than one engine reported (a later stage's) adds up."""
    costs: dict[str, float] = {}
    for info in stats:
        loads = info.get("key_load", {})
        events = sum(loads.values())
        if not events:
            continue
        stages = info.get("stages", {})
        per_rows = sum(stages.get(name, 0.0) for name in EVENT_STAGES)
        per_key = max(info.get("busy_s", 0.0) - per_rows, 0.0) / len(loads)
        per_event = per_rows / events
        for text, n in loads.items():
            costs[text] = costs.get(text, 0.0) + per_key + per_event * n
    return costs
