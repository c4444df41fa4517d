"""A balancing strategy for tests: keys move at random every batch."""

from __future__ import annotations

import numpy as np


def chaos(snapshot):
    """Move about half the keys to random engines (seeded by the inputs, so a replayed
    batch decides the same)."""
    rng = np.random.default_rng([len(snapshot.key_map), int(snapshot.load.sum())])
    new = snapshot.current()
    flip = rng.random(len(new)) < 0.5
    new[flip] = rng.integers(0, snapshot.n_engines, int(flip.sum()))
    return new
