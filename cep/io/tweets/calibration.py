"""How skewed a stream's keys are under key grouping: the RSTD of engine loads per window.

The measure the generator is calibrated by (``bench/bench_tweets.py``, the tests): it
lives apart because it needs the Splitter's hash and statistics, which generating rows
does not.
"""

from __future__ import annotations

import itertools

import numpy as np

from cep.io.tweets.zipf_periodic import phase_index, zipf_exponent
from migration.hashing import kg_engine
from splitter.policies.stats import rstd


def kg_window_rstd(
    keys: np.ndarray, ts: np.ndarray, n_engines: int = 5, window: int = 10_000
) -> tuple[np.ndarray, np.ndarray]:
    """Per-window RSTD (%) of engine loads under key grouping, and each window's exponent.

    Windows are ``window`` consecutive rows inside one zipf-periodic phase (a phase's
    last, shorter remainder is left out so every figure has the same sample size). The
    load of an engine is its number of rows, the engine ``kg_engine(key, n_engines)``.
    """
    engine = kg_engine(np.asarray(keys), n_engines)
    phase = phase_index(ts)
    exponent = zipf_exponent(ts)
    starts = np.flatnonzero(np.diff(phase, prepend=-1))
    bounds = np.append(starts, len(phase))
    out_e, out_r = [], []
    for lo, hi in itertools.pairwise(bounds):
        for w in range(lo, hi - window + 1, window):
            out_r.append(rstd(np.bincount(engine[w : w + window], minlength=n_engines)))
            out_e.append(exponent[w])
    return np.array(out_e, dtype=np.float64), np.array(out_r, dtype=np.float64)
