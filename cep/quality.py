"""Detection quality against a generator's ground truth (e.g. the tweets' first stories).

A detected event counts when one of its output rows carries the ``id`` of a ground-truth
event; precision = detected true / detected, recall = detected true / truth.
"""

from __future__ import annotations

import numpy as np


def precision_recall(records: list[dict], truth_ids: np.ndarray) -> dict | None:
    """Precision and recall per rule that outputs an ``id`` column (None if none does)."""
    truth = set(truth_ids.tolist())
    detected: dict[str, set] = {}
    for record in records:
        if "id" in record:
            detected.setdefault(record["rule"], set()).add(record["id"])
    if not detected:
        return None
    out = {}
    for rule, ids in detected.items():
        hits = len(ids & truth)
        out[rule] = {
            "detected": len(ids),
            "truth": len(truth),
            "precision": round(hits / len(ids), 4) if ids else 0.0,
            "recall": round(hits / len(truth), 4) if truth else 0.0,
        }
    return out


def quality_from_metrics(metrics: list[dict], id_rules: list[str]) -> dict | None:
    """The same figures from a Spark run's per-batch metrics, where each engine scored
    its own events against the generator's first stories (a rule's event is a hit when
    its triggering tweet is a first story), so no event has to reach the driver.
    ``id_rules``: the rules that output an ``id`` (the detections to score)."""
    truth = sum(m.get("first_stories", {}).get("truth", 0) for m in metrics)
    if not truth:
        return None
    out = {}
    for rule in id_rules:
        detected = sum(m.get("outputs_per_rule", {}).get(rule, 0) for m in metrics)
        hits = sum(m["first_stories"]["hits"].get(rule, 0) for m in metrics)
        out[rule] = {
            "detected": detected,
            "truth": truth,
            "precision": round(hits / detected, 4) if detected else 0.0,
            "recall": round(hits / truth, 4),
        }
    return out or None
