"""Columnar event tables: the engine's unit of data.

A table is a ``dict`` of equal-length numpy arrays. A field ``f`` whose values can be NULL
carries a boolean mask ``f__null`` beside it (the value slot then holds a placeholder).
Internal columns start with ``__``: ``__seq`` (the global arrival order of the input event
a row came from), ``__sub`` (orders rows of one input event fed into one stream by several
INSERT INTO rules), ``__key`` (the partition key value), ``__time`` (effective event
time) and ``__release`` (the seq of the input event at which the row is processed), the
last two given by the engine from the watermark (``cep.engine.clock``).

Dtypes by language type: int/long/timestamp/duration → int64 (timestamps and durations in
microseconds), double → float64, boolean → bool, string → object (Python ``str``).
"""

from __future__ import annotations

import numpy as np

SEQ = "__seq"
SUB = "__sub"
KEY = "__key"
TIME = "__time"
RELEASE = "__release"
NULL_SUFFIX = "__null"

Table = dict[str, np.ndarray]

DTYPES: dict[str, type | str] = {
    "int": np.int64,
    "long": np.int64,
    "timestamp": np.int64,
    "duration": np.int64,
    "double": np.float64,
    "boolean": np.bool_,
    "string": object,
    "null": object,
}

PLACEHOLDERS: dict[str, object] = {
    "int": 0, "long": 0, "timestamp": 0, "duration": 0, "double": 0.0,
    "boolean": False, "string": "", "null": None,
}


def nrows(table: Table) -> int:
    """Number of rows (every table has ``__seq``, or at least one column)."""
    if SEQ in table:
        return len(table[SEQ])
    return len(next(iter(table.values()))) if table else 0


def take(table: Table, index: np.ndarray) -> Table:
    """Rows at ``index`` (an int array or a boolean mask), every column; columns that
    are one array (a string key is its field's array, ``cep.engine.derive.add_keys``)
    are gathered once and stay one array, so a window's key and its field cost one
    gather of objects, not two (an object column's gather is ~35x an int32 one's)."""
    out: Table = {}
    done: dict[int, np.ndarray] = {}
    for name, values in table.items():
        got = done.get(id(values))
        if got is None:
            got = done[id(values)] = values[index]
        out[name] = got
    return out


def concat(tables: list[Table]) -> Table:
    """Row-wise concatenation; a null mask missing from some parts is filled with False."""
    tables = [t for t in tables if t]
    if not tables:
        return {}
    if len(tables) == 1:
        return dict(tables[0])
    names: dict[str, None] = {}
    for t in tables:
        names.update(dict.fromkeys(t))
    out: Table = {}
    # columns that are one array in every part; the parts are kept with their result so
    # that no id is reused by an array made here (a null mask of False) while it counts
    done: dict[tuple[int, ...], tuple[list[np.ndarray], np.ndarray]] = {}
    for name in names:
        parts = []
        for t in tables:
            if name in t:
                parts.append(t[name])
            elif name.endswith(NULL_SUFFIX):
                parts.append(np.zeros(nrows(t), dtype=bool))
            else:
                raise KeyError(f"column {name} missing from a table part")
        same = tuple(id(p) for p in parts)
        if same not in done:
            done[same] = (parts, np.concatenate(parts) if parts[0].dtype != object
                          else _concat_objects(parts))
        out[name] = done[same][1]
    return out


def _concat_objects(parts: list[np.ndarray]) -> np.ndarray:
    out = np.empty(sum(len(p) for p in parts), dtype=object)
    i = 0
    for p in parts:
        out[i : i + len(p)] = p
        i += len(p)
    return out


def empty(fields: list[tuple[str, str]], extra: tuple[str, ...] = (SEQ, SUB, KEY)) -> Table:
    """A table with no rows and the given fields plus internal columns."""
    out: Table = {}
    for name in extra:
        out[name] = np.empty(0, dtype=object if name == KEY else np.int64)
    for name, t in fields:
        out[name] = np.empty(0, dtype=DTYPES[t])
    return out


def with_null_fields(table: Table, fields: tuple[tuple[str, str], ...]) -> Table:
    """``table`` with each of ``fields`` it lacks as a NULL column (a placeholder value
    and a null mask, one mask shared by them all). On Spark the input tasks leave out the
    input fields no rule reads (``cep.spark.inputs.tasks.read_input``), while a pattern
    engine binds every field of its stream: a field no rule reads is never looked at, so
    NULL stands for it at the cost of one array per field, not its transfer."""
    missing = [(name, t) for name, t in fields if name not in table]
    if not missing or not table:
        return table
    n = nrows(table)
    out = dict(table)
    nulls = np.ones(n, dtype=bool)
    for name, t in missing:
        out[name] = (repeated(PLACEHOLDERS[t], n) if DTYPES[t] is object
                     else np.full(n, PLACEHOLDERS[t], dtype=DTYPES[t]))
        out[name + NULL_SUFFIX] = nulls
    return out


def object_array(values: list[object]) -> np.ndarray:
    """A 1-d object array that never turns a list of tuples into a 2-d array."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def repeated(value: object, n: int) -> np.ndarray:
    """An object array of ``n`` references to one value. ``np.full(n, "name",
    dtype=object)`` makes a new ``str`` per element (it converts through a numpy
    string), which costs its making, and every comparison and hash of the column after
    (1M rule names: 127 ms to compare with one, 247 ms to factorize, against a few ms
    for one shared object)."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out


def factorize(keys: np.ndarray) -> np.ndarray:
    """Dense int codes for key values (equal keys → equal codes; None is a key too)."""
    import pandas as pd

    if keys.dtype.kind in "iu" and keys.dtype != np.uint64 and len(keys):  # fit int64
        codes = _dense_codes(keys)
        if codes is not None:
            return codes
    if keys.dtype != object:
        codes, _ = pd.factorize(keys)
        return codes.astype(np.int64)
    # pandas treats None/NaN as missing (-1); give it its own code
    codes, uniques = pd.factorize(keys, use_na_sentinel=True)
    codes = codes.astype(np.int64)
    missing = codes < 0
    if missing.any():
        codes[missing] = len(uniques)
    return codes


def _dense_codes(values: np.ndarray) -> np.ndarray | None:
    """``pd.factorize``'s codes (numbered in order of first appearance) of integer keys
    whose values span at most about twice their count, by a lookup table over that
    span instead of a hash table: an engine's keys are often small ints (ids), and the
    stages of a batch each number them. 140k int64 keys of 4,096 values: 0.45 ms
    against pandas' 2.65 ms; None where the span is too wide for a table."""
    n = len(values)
    lo, hi = int(values.min()), int(values.max())
    span = hi - lo + 1
    if span > 2 * n + 65_536:
        return None
    offset = values.astype(np.int64) - lo
    first = first_rows(offset, span)
    present = np.flatnonzero(first < n)
    rank = np.empty(span, dtype=np.int64)
    rank[present[np.argsort(first[present], kind="stable")]] = np.arange(len(present))
    return rank[offset]


def first_rows(codes: np.ndarray, n_codes: int | None = None) -> np.ndarray:
    """The index of the first row of each code ``0 .. n_codes - 1`` (by default up to
    the largest code), ``len(codes)`` for a code no row has: one scatter over the rows
    in reverse, whose last write to a code is its first row."""
    n = len(codes)
    size = (int(codes.max()) + 1 if n else 0) if n_codes is None else n_codes
    first = np.full(size, n, dtype=np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)
    return first


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a numeric array by one sort: numpy 2's ``np.unique`` hashes
    first, and on int64 takes 2 s for 1M values where a sort takes 20 ms."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def group_starts(codes: np.ndarray) -> np.ndarray:
    """For rows sorted by key code, the index of the first row of each row's group."""
    n = len(codes)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    boundary = np.empty(n, dtype=bool)
    boundary[0] = True
    np.not_equal(codes[1:], codes[:-1], out=boundary[1:])
    starts = np.flatnonzero(boundary)
    return np.repeat(starts, np.diff(np.append(starts, n)))


def group_ends(codes: np.ndarray) -> np.ndarray:
    """For rows sorted by key code, one past the last row of each row's group."""
    n = len(codes)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    boundary = np.empty(n, dtype=bool)
    boundary[-1] = True
    np.not_equal(codes[:-1], codes[1:], out=boundary[:-1])
    ends = np.flatnonzero(boundary) + 1
    return np.repeat(ends, np.diff(np.concatenate(([0], ends))))


def lexsorted(keys: tuple[np.ndarray, ...], candidate: np.ndarray | None = None,
              by_primary: bool = False) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key primary, stable), but ``candidate`` (by default
    the rows as they are) without sorting when it is that order: the check is one pass
    over the keys, where a lexsort is a stable sort per key (rate limiting's rows come
    grouped by key and in time order: 100k rows, five keys, 20 ms of sorting for
    nothing). ``by_primary``: else try a plain argsort of the primary key, which is
    the order wherever rows rarely tie on it (one rule's rows by seq: 100k rows,
    1.1 ms against 6.4 ms for a lexsort of four keys)."""
    n = len(keys[0]) if keys else 0
    order = np.arange(n) if candidate is None else candidate
    if n < 2 or _in_order(keys, order, candidate is None):
        return order
    if by_primary:
        order = np.argsort(keys[-1])
        if _in_order(keys, order, False):
            return order
    return np.lexsort(keys)


def _in_order(keys: tuple[np.ndarray, ...], order: np.ndarray, identity: bool) -> bool:
    """Whether ``order`` is the stable lexicographic order of ``keys`` (rows equal on
    every key in increasing index order)."""
    undecided = np.ones(len(order) - 1, dtype=bool)  # pairs equal on the keys so far
    for key in keys[::-1]:
        ordered = key if identity else key[order]
        before, after = ordered[:-1], ordered[1:]
        if (undecided & (after < before)).any():
            return False
        undecided &= after == before
        if not undecided.any():
            return True
    return identity or not (undecided & (order[1:] < order[:-1])).any()


def code_order(codes: np.ndarray) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of non-negative int codes (``factorize``'s),
    as 16-bit values where they fit: numpy sorts those by radix, int64 by timsort
    (140k random codes: 2.6 ms against 24 ms)."""
    if len(codes) and codes.min() >= 0 and codes.max() < 2**16:
        return np.argsort(codes.astype(np.uint16), kind="stable")
    return np.argsort(codes, kind="stable")


def narrowest_unsigned(most: int) -> np.dtype:
    """The narrowest of uint8, uint16 and uint32 that holds 0..``most`` (uint32 for any
    more: callers keep ``most`` under 2**32)."""
    return np.dtype(np.uint8 if most < 1 << 8 else np.uint16 if most < 1 << 16 else np.uint32)


def offsets_from_least(column: np.ndarray, *, narrower: bool = False
                       ) -> tuple[int, np.ndarray] | None:
    """``(least, column - least)`` in :func:`narrowest_unsigned` of the span, for a
    non-empty 1-d integer column whose values span less than 2**32; else None. With
    ``narrower``, also None where that dtype is no narrower than the column's. Why:
    sequence numbers, keys and microsecond times span far less than 64 bits, and each
    byte of them is copied again on its way through Spark (``splitter/payload.py``) and
    into the engines' state (``cep/engine/codec.py``)."""
    if column.dtype.kind not in "iu":
        return None
    least, most = int(column.min()), int(column.max())
    if most - least >= 1 << 32:
        return None
    small = narrowest_unsigned(most - least)
    if narrower and small.itemsize >= column.dtype.itemsize:
        return None
    # each difference lies in 0..most-least, so the column's own dtype holds it
    return least, (column - column.dtype.type(least)).astype(small)
