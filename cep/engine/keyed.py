"""What every operator that keeps state per key shares: placing keys among held keys,
splitting a table's rows by key, and the key-state plumbing of an operator whose state
is a dict per key.

The windows, the pattern kernels, MATCH_RECOGNIZE and rate limiting all name a batch's
keys by their place among the keys an operator holds; this is the one way they do it, at
the engine's core so that no operator family imports another.
"""

from __future__ import annotations

import numpy as np

from cep.engine.table import KEY, Table, factorize, first_rows, take

SUB_RANGE = 1 << 10  # rows of one input event in one stream (INSERT INTO rules) stay < this


def key_positions(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each of ``values``, the index in ``keys`` of its key (equal as ``factorize``
    compares keys), or -1: one hash pass over both."""
    codes = factorize(concat_keys(keys, values))
    first = first_rows(codes[:len(keys)], int(codes.max()) + 1 if len(codes) else 0)
    return np.where(first < len(keys), first, -1)[codes[len(keys):]]


def split_by_key(rows: Table, keys: list) -> tuple[dict[object, Table], Table]:
    """The rows of each of ``keys`` that has any, and the rows of the other keys.

    One stable sort of the leaving rows by key, then a slice per key: linear in the rows,
    where a mask per key would cost keys × rows (thousands of keys per batch)."""
    codes = factorize(concat_keys(rows[KEY], np.array(keys, dtype=object)))
    n = len(rows[KEY])
    row_codes, key_codes = codes[:n], codes[n:]
    leaving = np.isin(row_codes, key_codes)
    gone = take(rows, leaving)
    gone_codes = row_codes[leaving]
    order = np.argsort(gone_codes, kind="stable")
    gone = take(gone, order)
    gone_codes = gone_codes[order]
    lo = np.searchsorted(gone_codes, key_codes, side="left")
    hi = np.searchsorted(gone_codes, key_codes, side="right")
    parts = {key: {name: column[a:b] for name, column in gone.items()}
             for key, a, b in zip(keys, lo.tolist(), hi.tolist(), strict=True) if b > a}
    return parts, take(rows, ~leaving)


def concat_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` then ``b``, as integers where both are (``factorize`` numbers those by a
    table, not a hash), else as objects."""
    if not len(b):
        return a
    if a.dtype.kind == "i" and b.dtype.kind == "i":  # (with a uint64, numpy gives floats)
        return np.concatenate((a, b))
    out = np.empty(len(a) + len(b), dtype=object)
    out[: len(a)] = a
    out[len(a):] = b
    return out


class PerKeyState:
    """Key-state plumbing of an operator whose whole state is a dict per key (patterns,
    MATCH_RECOGNIZE), for ``Engine.split_off``: no windows, the keys' states moved by
    the operator's own ``export`` and ``import_states``."""

    def state_windows(self) -> list:
        return []

    def export_keyed(self, keys: list) -> dict[object, object]:
        return self.export(keys)  # type: ignore[attr-defined]

    def import_keyed(self, states: dict[object, object]) -> None:
        self.import_states(states)  # type: ignore[attr-defined]
