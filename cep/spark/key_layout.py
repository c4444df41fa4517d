"""A key's state in Spark's state store: a small head and append-only row segments.

Why: a window keeps a key's last rows (FSD: up to 500 per key), and a batch adds a few
(FSD: about 25 per key in a 100k-tweet batch) and drops as many from the front. Written
whole, every touched key cost its whole window every batch, re-encoding and re-writing
rows that had not changed. So the store holds, per key:

* the **head** (``keys`` map: key → codec ``head`` blob): every part of the key's state
  that is not window rows, whole, and the layout of its rows: which batches' segments
  are live, how many rows each holds per table, and how many rows at the front of the
  tables are no longer in the window (``skip``); or, when the rows are mostly new, the
  rows themselves (one write, as good as it gets for a window that turned over);
* one **segment** per batch that appended rows (``segments`` map: (key, batch) → codec
  ``segment`` blob): the rows that batch appended to each of the key's tables.

A batch writes the key's head, its own segment, and removes the segments whose rows have
all left the window. The window tables are the ``list`` of Tables a
``WindowState`` operator exports per key. Their rows are sorted by (seq, sub) and only
leave from the front and arrive at the back; :func:`plan` checks that against the rows
the batch started with, and a key whose tables changed any other way (a ``#unique``
window drops rows in the middle), or changed shape, is written whole in its head. So the
layout is an optimisation that cannot change a state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from cep.engine import codec
from cep.engine.table import SEQ, SUB, Table, concat, nrows

Slots = list[tuple[str, int]]  # (rule, number of tables) of each rule whose part is tables


@dataclass
class Layout:
    """Where a key's window rows are: live segments (batches, oldest first), the rows
    each holds per table, and the rows at the front no longer in the window."""

    slots: Slots
    segments: list[int] = field(default_factory=list)
    counts: list[list[int]] = field(default_factory=list)
    skip: list[int] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"slots": [list(s) for s in self.slots], "segments": self.segments,
                "counts": self.counts, "skip": self.skip}

    @classmethod
    def from_json(cls, value: object) -> Layout:
        """A layout from :meth:`as_json`'s form, checked: it comes from a state store or
        a file, and a wrong one must fail here, not rebuild a wrong window."""
        try:
            slots = [(str(rule), int(n)) for rule, n in value["slots"]]  # type: ignore[index]
            segments = [int(b) for b in value["segments"]]  # type: ignore[index]
            counts = [[int(c) for c in row] for row in value["counts"]]  # type: ignore[index]
            skip = [int(s) for s in value["skip"]]  # type: ignore[index]
        except (TypeError, KeyError, ValueError) as error:
            raise codec.StateFormatError(f"not a key layout: {error}") from None
        width = sum(n for _, n in slots)
        if (len(counts) != len(segments) or len(skip) != width
                or any(len(row) != width for row in counts)):
            raise codec.StateFormatError("a key layout whose counts do not fit its tables")
        return cls(slots, segments, counts, skip)


@dataclass
class Plan:
    """What one key's save writes: its new layout, head and segment (None when the
    batch appended no rows), and the batches whose segments to remove."""

    layout: Layout
    head: bytes
    segment: bytes | None
    dropped: list[int]


def _is_tables(part: object) -> bool:
    return (type(part) is list and bool(part) and all(
        type(t) is dict and (not t or (isinstance(t.get(SEQ), np.ndarray)
                                       and isinstance(t.get(SUB), np.ndarray)))
        for t in part))


def split_state(state: dict[str, object]) -> tuple[dict[str, object], Slots, list[Table]]:
    """A key's state as (the parts that are not window tables, the slots, the tables)."""
    rest: dict[str, object] = {}
    slots: Slots = []
    tables: list[Table] = []
    for rule, part in state.items():
        if _is_tables(part):
            slots.append((rule, len(part)))  # type: ignore[arg-type]
            tables.extend(part)  # type: ignore[arg-type]
        else:
            rest[rule] = part
    return rest, slots, tables


def plan(state: dict[str, object], before: Layout | None, before_tables: list[Table] | None,
         batch: int) -> Plan:
    """The writes that bring a key's stored state from ``before`` (its layout, and its
    tables as the batch found them) to ``state`` after ``batch``.

    Three ways, the cheapest that is right: rows mostly new (a short window that turned
    over, a new key, tables changed other than at their ends) go whole into the head, one
    write; rows mostly kept go as this batch's segment beside the live ones; and when the
    kept rows are not in segments yet (they were in the head), all rows become one
    segment, once."""
    rest, slots, tables = split_state(state)
    change = _change(tables, before_tables, slots, before)
    dropped = list(before.segments) if before else []
    layout = Layout(slots, [], [], [0] * len(tables))
    appended = tables
    if change is None or sum(map(_rows, tables)) <= 2 * sum(map(_rows, change[1])):
        head = codec.encode({"rest": rest, "layout": layout.as_json(), "rows": tables}, "head")
        return Plan(layout, head, None, dropped)
    if before is not None and _holds(before, before_tables):
        gone, appended = change
        layout = Layout(slots, list(before.segments), [list(c) for c in before.counts],
                        [s + g for s, g in zip(before.skip, gone, strict=True)])
        dropped = []
    counts = [_rows(t) for t in appended]
    segment = None
    if any(counts):
        layout.segments.append(batch)
        layout.counts.append(counts)
        segment = codec.encode([t if _rows(t) else {} for t in appended], "segment")
    while layout.segments and all(s >= c for s, c in zip(layout.skip, layout.counts[0],
                                                          strict=True)):
        layout.skip = [s - c for s, c in zip(layout.skip, layout.counts[0], strict=True)]
        layout.counts.pop(0)
        dropped.append(layout.segments.pop(0))
    head = codec.encode({"rest": rest, "layout": layout.as_json(), "rows": None}, "head")
    return Plan(layout, head, segment, dropped)


def _rows(table: Table) -> int:
    return nrows(table) if table else 0


def _holds(layout: Layout, tables: list[Table] | None) -> bool:
    """The layout's live segment rows are ``tables``' rows (not rows kept in the head)."""
    if tables is None or not layout.segments:
        return False
    live = (np.sum(layout.counts, axis=0, dtype=np.int64) - layout.skip).tolist()
    return live == [_rows(t) for t in tables]


def _change(tables: list[Table], before_tables: list[Table] | None, slots: Slots,
            before: Layout | None) -> tuple[list[int], list[Table]] | None:
    """Per table, the rows it lost at its front and the rows it gained at its back since
    the batch began (``before_tables``), if every table changed only so; else None."""
    if before is None or before_tables is None or before.slots != slots:
        return None
    gone, appended = [], []
    for table, old in zip(tables, before_tables, strict=True):
        n_old, n = _rows(old), _rows(table)
        if n_old == 0 or n == 0:
            gone.append(n_old)
            appended.append(table)
            continue
        seq, sub = table[SEQ], table[SUB]
        last_seq, last_sub = old[SEQ][-1], old[SUB][-1]
        kept = int(np.count_nonzero((seq < last_seq) | ((seq == last_seq) & (sub <= last_sub))))
        if kept > n_old or not _same_rows(table, old, kept, n_old - kept):
            return None
        gone.append(n_old - kept)
        appended.append({name: column[kept:] for name, column in table.items()})
    return gone, appended


def _same_rows(table: Table, old: Table, kept: int, gone: int) -> bool:
    """The first ``kept`` rows of ``table`` are the last ``kept`` rows of ``old``: same
    columns, same (seq, sub), the same numbers bit for bit (a NaN is itself, -0.0 is not
    0.0; object columns are the same events' values)."""
    if table.keys() != old.keys():
        return False
    for name, column in table.items():
        before = old[name]
        if column.dtype != object and (column.dtype != before.dtype or column[:kept].tobytes()
                                       != before[gone:].tobytes()):
            return False
    return True


def read_head(blob: bytes, key: str) -> tuple[dict[str, object], Layout, list[Table] | None]:
    """A stored head as (the parts that are not window rows, the layout, the rows when
    the head holds them itself)."""
    head = codec.decode(blob, "head", f"state head of key {key}")
    if (type(head) is not dict or set(head) != {"rest", "layout", "rows"}
            or type(head["rest"]) is not dict):
        raise codec.StateFormatError(f"state head of key {key}: not a head")
    layout, rows = Layout.from_json(head["layout"]), head["rows"]
    if rows is not None and (type(rows) is not list or layout.segments
                             or len(rows) != len(layout.skip)):
        raise codec.StateFormatError(f"state head of key {key}: rows beside segments")
    return head["rest"], layout, rows


def rebuild(rest: dict[str, object], layout: Layout, rows: list[Table] | None,
            segments: list[bytes], key: str) -> dict[str, object]:
    """A key's state from its head (as :func:`read_head` gives it) and its live
    segments' blobs (none when the head holds the rows itself)."""
    if rows is not None:
        return assemble(rest, layout.slots, rows)
    width = len(layout.skip)
    pieces: list[list[Table]] = [[] for _ in range(width)]
    for batch, blob in zip(layout.segments, segments, strict=True):
        tables = codec.decode(blob, "segment", f"rows of key {key} of batch {batch}")
        if type(tables) is not list or len(tables) != width:
            raise codec.StateFormatError(f"rows of key {key} of batch {batch}: not a segment")
        for piece, table in zip(pieces, tables, strict=True):
            if table:
                piece.append(table)
    tables = []
    for piece, skip in zip(pieces, layout.skip, strict=True):
        whole = concat(piece) if piece else {}
        tables.append({c: v[skip:] for c, v in whole.items()} if whole and nrows(whole) > skip
                      else {})
    return assemble(rest, layout.slots, tables)


def assemble(rest: dict[str, object], slots: Slots, tables: list[Table]) -> dict[str, object]:
    """The inverse of :func:`split_state`."""
    state = dict(rest)
    at = 0
    for rule, n in slots:
        state[rule] = tables[at:at + n]
        at += n
    if at != len(tables):
        raise codec.StateFormatError(f"{len(tables)} tables for slots of {at}")
    return state


def pack(keys: list[str], states: list[dict[str, object]], layouts: list[Layout]) -> dict:
    """Many keys' states and layouts as one value, for one codec encode: the window tables
    of all keys concatenated, one array per column and column signature rather than one
    per key (per-array work dominated encoding key by key), where each key's rows are and
    its layout as one JSON text, and the other parts of the keys that have any."""
    group_of: dict[tuple, int] = {}
    groups: list[list[Table]] = []
    entries = []
    rests = {}
    for i, (key, state, layout) in enumerate(zip(keys, states, layouts, strict=True)):
        rest, slots, tables = split_state(state)
        if rest:
            rests[i] = rest
        refs: list[list[int] | None] = []
        for table in tables:
            if not table:
                refs.append(None)
                continue
            signature = tuple((name, column.dtype.str) for name, column in table.items())
            number = group_of.setdefault(signature, len(groups))
            if number == len(groups):
                groups.append([])
            refs.append([number, len(groups[number])])
            groups[number].append(table)
        entries.append([key, slots, refs, layout.as_json()])
    columns = [[{name: np.concatenate([t[name] for t in group]) for name in group[0]},
                np.array([nrows(t) for t in group], dtype=np.int64)] for group in groups]
    return {"keys": json.dumps(entries), "rests": rests, "groups": columns}


def unpack(value: object) -> dict[str, tuple[dict[str, object], Layout]]:
    """:func:`pack`'s keys: key → (state, layout). Raises StateFormatError on a value of
    any other shape (it was read from a file)."""
    try:
        starts = [(table, np.concatenate(([0], np.cumsum(counts))))
                  for table, counts in value["groups"]]  # type: ignore[index]
        rests = value["rests"]  # type: ignore[index]
        out = {}
        for i, (key, slots, refs, layout) in enumerate(json.loads(value["keys"])):  # type: ignore[index]
            tables = []
            for ref in refs:
                if ref is None:
                    tables.append({})
                    continue
                table, offsets = starts[ref[0]]
                lo, hi = int(offsets[ref[1]]), int(offsets[ref[1] + 1])
                tables.append({name: column[lo:hi] for name, column in table.items()})
            out[str(key)] = (assemble(dict(rests.get(i, {})),
                                      [(str(r), int(n)) for r, n in slots], tables),
                             Layout.from_json(layout))
        return out
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
        raise codec.StateFormatError(f"not packed key states: {error}") from None
