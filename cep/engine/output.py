"""Output rows of rules: ``rule``, ``key``, ``seq``, ``ts`` and the selected columns.

Engines return one table per batch with columns ``rule`` (str), ``key`` (object), ``seq``
(int64), ``ts`` (int64 µs, with ``ts__null``) and ``values``: the selected columns as one
JSON object text, in SELECT order. One string column keeps the table's shape fixed for
every rule, so the Spark runtime can ship it with a static schema, and two runs are
compared by comparing these rows as multisets.

Two more int64 columns, ``at`` and ``origin`` (:class:`Stamps`), place a row in the
reference order and are never written out: ``seq`` is the input event at which the row
was made, but at one such event time may pass several deadlines (timers of many keys)
and, with a lateness, release several waiting events, so rows of one seq come in the
order event time passed them (``at``: twice that time, plus one for a row an event made,
so a timer's rows come before those of an event at the same time), then the input order
of the events that made them (``origin``; -1 for a timer), then rule order, then key
(:func:`sort_output`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cep.engine.expr import Col
from cep.engine.table import Table, object_array, take

OUTPUT_COLUMNS = ("rule", "key", "seq", "ts", "ts__null", "values")
ORDER_COLUMNS = ("at", "origin")  # the reference order within a seq; never written out
TIMER = -1  # the origin of a row a timer made


@dataclass(frozen=True)
class Stamps:
    """Where output rows sit in the reference order (see the module notes), one entry
    per row: the seq of the input event at which it was made, twice the event time at
    which it was made (plus one when an event made it) and the seq of that event (-1
    for a timer)."""

    seq: np.ndarray
    at: np.ndarray
    origin: np.ndarray

    def take(self, index: np.ndarray) -> Stamps:
        return Stamps(self.seq[index], self.at[index], self.origin[index])


def event_stamps(release: np.ndarray, time: np.ndarray, seq: np.ndarray) -> Stamps:
    """Rows made by events processed at ``release`` at effective ``time``."""
    return Stamps(np.asarray(release, np.int64), 2 * np.asarray(time, np.int64) + 1,
                  np.asarray(seq, np.int64))


def timer_stamps(release: np.ndarray, deadline: np.ndarray) -> Stamps:
    """Rows made by timers with these deadlines, which fire at ``release``."""
    release = np.asarray(release, np.int64)
    return Stamps(release, 2 * np.asarray(deadline, np.int64),
                  np.full(len(release), TIMER, np.int64))


def format_timestamps(us: np.ndarray) -> np.ndarray:
    """ISO-8601 UTC text of µs timestamps (an object array of ``str``): milliseconds
    unless a value needs microseconds (per value, so the text of a timestamp never
    depends on its neighbours)."""
    us = np.asarray(us, dtype=np.int64)
    moments = us.astype("datetime64[us]")
    out = np.char.add(np.datetime_as_string(moments, unit="ms"), "Z").astype(object)
    fine = us % 1000 != 0
    if fine.any():
        out[fine] = np.char.add(np.datetime_as_string(moments[fine], unit="us"), "Z")
    return out


def python_values(col: Col, type_name: str) -> list[object]:
    """JSON-ready Python values of a column (NULL → None, timestamps → ISO text)."""
    values = (format_timestamps(col.values) if type_name == "timestamp" else col.values).tolist()
    if col.nulls is not None:
        for i in np.flatnonzero(col.nulls).tolist():
            values[i] = None
    return values


#: One encoder for every row's text: ``json.dumps`` with options builds a new encoder per
#: call, which cost half of a 100k-row output's time.
_ROW_TEXT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


#: Column types whose JSON values are numbers, true/false or null (never a comma inside)
_PLAIN_JSON = frozenset({"int", "long", "double", "boolean", "duration"})


def _row_texts(names: list[str], types: list[str], per_column: list[list]) -> list[str]:
    """Each row's JSON object text, exactly as ``json.dumps(row, ensure_ascii=False,
    separators=(",", ":"))``, built a column at a time: one encoder call per column of
    numbers (its list's text split at the commas), a C call per text value."""
    encode = _ROW_TEXT.encode
    if len(set(names)) != len(names):  # a repeated name: the dict's rule decides
        return [encode(dict(zip(names, row, strict=True)))
                for row in zip(*per_column, strict=True)]
    pieces = []
    for name, t, values in zip(names, types, per_column, strict=True):
        head = encode(name) + ":"
        if t in _PLAIN_JSON:
            texts = encode(values)[1:-1].split(",") if values else []
        else:
            texts = [encode(v) for v in values]
        pieces.append([head + text for text in texts])
    return ["{" + ",".join(row) + "}" for row in zip(*pieces, strict=True)]


def build_output(rule: str, keys: np.ndarray, stamps: Stamps | np.ndarray, ts: Col | None,
                 columns: Sequence[tuple[str, str, Col]]) -> Table:
    """An output table for one rule's rows; ``columns`` are (name, type, values).
    ``stamps`` may be bare seqs (a stateless rule's rows: :func:`stamp_stateless` gives
    them their place once the watermark is known)."""
    if not isinstance(stamps, Stamps):
        stamps = Stamps(np.asarray(stamps, np.int64), np.zeros(len(stamps), np.int64),
                        np.asarray(stamps, np.int64))
    n = len(stamps.seq)
    names = [name for name, _, _ in columns]
    per_column = [python_values(col, t) for _, t, col in columns]
    texts = _row_texts(names, [t for _, t, _ in columns], per_column) if per_column \
        else ["{}"] * n
    if ts is None:
        ts_values, ts_nulls = np.zeros(n, np.int64), np.ones(n, bool)
    else:
        ts_values, ts_nulls = ts.values.astype(np.int64), ts.null_mask()
    return {
        "rule": object_array([rule] * n),
        "key": np.asarray(keys, dtype=object),
        "seq": stamps.seq,
        "ts": ts_values,
        "ts__null": ts_nulls,
        "values": object_array(texts),
        "at": stamps.at,
        "origin": stamps.origin,
    }


def empty_output() -> Table:
    return build_output("", np.empty(0, object), np.empty(0, np.int64), None, [])


def stamp_stateless(rows: Table, after: np.ndarray) -> Table:
    """Stateless rules' rows placed where their input event is processed as it arrives:
    at the watermark just after it (``after``, per row), before nothing it made."""
    if not rows or not len(rows["seq"]):
        return rows
    return {**rows, "at": 2 * np.asarray(after, np.int64) + 1, "origin": rows["seq"]}


def sort_output(table: Table, rule_order: dict[str, int]) -> Table:
    """Output rows in the reference order: by ``seq``, then the time it passed (``at``),
    ``origin``, rule order and key (its JSON text); a key's rows that tie on all of
    those keep the order they were made in (see the module notes)."""
    if not table or len(table["seq"]) < 2:
        return table
    rank = np.array([rule_order.get(r, -1) for r in table["rule"].tolist()], dtype=np.int64)
    order = np.lexsort((rank, table["origin"], table["at"], table["seq"]))
    return take(table, by_key_within_ties(order, (table["seq"], table["at"],
                                                  table["origin"], rank), table["key"]))


def by_key_within_ties(order: np.ndarray, columns: tuple[np.ndarray, ...],
                       keys: np.ndarray) -> np.ndarray:
    """``order`` (a stable sort by ``columns``) with each run of rows equal on all the
    columns re-sorted, stably, by their key's JSON text: rows of several keys (timers
    at one deadline, later stages' events) then come in the same order whichever engine
    made them. Python only for the rows in such runs."""
    n = len(order)
    if n < 2:
        return order
    same = np.ones(n - 1, dtype=bool)
    for column in columns:
        ordered = column[order]
        same &= ordered[1:] == ordered[:-1]
    if not same.any():
        return order
    order = order.copy()
    starts = np.flatnonzero(np.r_[True, ~same])
    ends = np.append(starts[1:], n)
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        if b - a > 1:
            run = order[a:b]
            texts = [json.dumps(k) for k in keys[run].tolist()]
            if len(set(texts)) > 1:
                order[a:b] = run[sorted(range(b - a), key=texts.__getitem__)]
    return order


def output_records(table: Table) -> list[dict]:
    """Output rows as dicts in the file format: rule, key, seq, ts, then the columns."""
    records = []
    columns = {c: table[c].tolist() for c in OUTPUT_COLUMNS}
    columns["ts"] = format_timestamps(table["ts"]).tolist()
    for rule, key, seq, ts, ts_null, values in zip(*columns.values(), strict=True):
        record = {"rule": rule, "key": key, "seq": seq, "ts": None if ts_null else ts}
        record.update(json.loads(values))
        records.append(record)
    return records
