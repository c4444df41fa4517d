"""Built-in workloads by name: ``--input tweets`` or ``--input tweets:n=…,mode=…,seed=…``.

A generator returns a typed frame in the reader's format plus the ground truth it
knows (for tweets: the first tweet of every story), so a run can score its detections.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cep.io import tweets


@dataclass
class Generated:
    frame: pd.DataFrame
    truth_ids: np.ndarray | None  # ids of the events a perfect detector reports


def _tweets(spec: str) -> Generated:
    generated = tweets.generate_tweets(**tweets.parse_spec(spec))
    return Generated(generated.frame, generated.first_story_ids)


GENERATORS = {"tweets": _tweets}


def generator_name(source: str) -> str | None:
    """The generator a source names (``tweets`` or ``tweets:...``), or None for a path."""
    name = source.split(":", 1)[0]
    return name if name in GENERATORS else None


def generate(source: str) -> Generated:
    return GENERATORS[generator_name(source)](source)  # type: ignore[index]
