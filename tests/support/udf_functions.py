"""Functions a test registers in its own process (not at this module's top level):
Spark's workers find them by module and name (``cep.engine.udf.shipment``)."""

from __future__ import annotations

import numpy as np


def spaced(text: str) -> str:
    return " ".join(text)


def halved(values: np.ndarray) -> np.ndarray:
    return values / 2
