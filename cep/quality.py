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
