"""One engine's rows of one input task, as the bytes that travel to its engine task.

Part of the Splitter (see ``splitter/__init__.py``): ``routing.py`` packs what
it routed to each engine, ``engine_batch.py`` unpacks it.

The payload crosses one shuffle inside one running job (an input task of batch B to the
engine task of batch B) and never rests anywhere a restart would read it, so it is a
pickle. Its size is what costs: on its way Spark's JVM copies every byte about ten times
(into rows, through LZ4 and the shuffle file, into Arrow, to the engine's worker), which
took about as long as reading the file. So each column travels in the narrowest form
that gives it back exactly:

- a string column with few distinct values, as codes into the distinct values the
  engine's rows use (uint8, uint16 or int32 by how many there are). Pickling an object
  array writes and reads every ``str`` on its own, which cost more CPU than reading the
  file; codes are split with an int take, and the engine task rebuilds the column with
  one gather (the rebuilt column holds equal strings, shared objects; a ``str`` subclass
  equal to a plain ``str`` may come back as that ``str``);
- an integer column whose values span less than 2**32 (sequence numbers, the all-zero
  sub-sequence), as unsigned offsets from its least value;
- a 64-bit integer column whose steps from row to row are mostly less than 2**32 (a
  column in time order: timestamps), as its first value and the steps (``_deltas``);
- a column that is the same array as an earlier one (the key, when it is a field), as a
  reference to that column;
- anything else as it is.

The arrays that ride along (how the task's pieces move the event clock, which every
engine gets, and the events an engine checks for lateness) travel the same way, each as
the narrower of offsets and steps: the clock's rises of the flights were 1.6 of an
engine's 3.9 MB before.

The pickle then goes LZ4-compressed, which halves it again.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cep.engine.table import Table, narrowest_unsigned, offsets_from_least, take

CODEC = "lz4"
_SIZE = struct.Struct("<Q")  # the pickle's size, before its compressed bytes
SAMPLE = 2048  # rows looked at to guess whether a string column repeats its values
# More distinct values than this in the sample: sent as is. A column of D equally
# frequent values shows about D * (1 - exp(-SAMPLE / D)) of them in the sample, so this
# codes columns of up to about 10,000 distinct values (4,043 aircraft of the flights
# data show about 1,600) and leaves text, whose sample is nearly all distinct.
MOST_DISTINCT = SAMPLE * 9 // 10
# A column in time order travels as steps when at most one step in this many is wider
# than 32 bits (each such step costs 16 bytes kept whole; each row saves 4 or more)
ESCAPES_PER = 32

# How one column comes back: None (as it travels), ("values", distinct) (codes into
# them), ("offset", least, dtype), ("delta", first value's 64 bits, dtype, rows of the
# wide steps, those steps) or ("same", name of an earlier column).
Decoder = tuple | None
# A table ready to be split: the columns that travel, and how every column of the
# original table (in its order) comes back from them.
Coded = tuple[Table, dict[str, Decoder]]


# An object column already factorized by whoever had to (routing, by its keys): its
# array's id() -> (codes, distinct values), as pandas.factorize gives them
Factorized = Mapping[int, tuple[np.ndarray, np.ndarray]]


def code_table(table: Table, factorized: Factorized | None = None) -> Coded:
    """``table`` with its columns in their narrowest exact form (see the module).
    ``factorized``: columns whose codes are known, so they are not factorized again."""
    columns: Table = {}
    decoders: dict[str, Decoder] = {}
    first_name: dict[int, str] = {}
    for name, column in table.items():
        if id(column) in first_name:
            decoders[name] = ("same", first_name[id(column)])
            continue
        first_name[id(column)] = name
        coded = _narrow(column, factorized.get(id(column)) if factorized else None)
        columns[name], decoders[name] = coded if coded is not None else (column, None)
    return columns, decoders


def _narrow(column: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None = None
            ) -> tuple[np.ndarray, Decoder] | None:
    if len(column) < SAMPLE:
        return None
    if column.dtype == object:
        if known is None and not _repeats(column[:SAMPLE]):
            return None  # not worth a factorize
        return _string_codes(column, known)
    found = offsets_from_least(column)
    if found is not None:
        least, offsets = found
        return offsets, ("offset", least, column.dtype.str)
    return None


def _deltas(column: np.ndarray) -> tuple[np.ndarray, Decoder] | None:
    """A 64-bit integer column that mostly rises by less than 2**32 from row to row (a
    column in time order: timestamps, the rises of the event clock), as its first value
    and its steps, unsigned, the few other steps (a night between two days' flights, a
    row that goes back in time) kept whole beside them. Steps are taken and summed back
    modulo 2**64, which gives every value back exactly whatever the column holds; a
    column with more than one such step in ``ESCAPES_PER`` rows travels as it is."""
    if column.dtype.itemsize != 8 or len(column) < 2:
        return None
    words = column.view(np.uint64)
    steps = np.diff(words)
    wide = np.flatnonzero(steps >= np.uint64(1 << 32))
    if len(wide) * ESCAPES_PER > len(steps):
        return None
    whole = steps[wide]
    steps[wide] = 0
    narrow = steps.astype(narrowest_unsigned(int(steps.max())))
    return narrow, ("delta", int(words[0]), column.dtype.str, wide, whole)


def _undelta(steps: np.ndarray, first: int, dtype: str, wide: np.ndarray,
             whole: np.ndarray) -> np.ndarray:
    words = np.empty(len(steps) + 1, dtype=np.uint64)
    words[0] = first
    full = steps.astype(np.uint64)
    full[wide] = whole
    np.cumsum(full, out=words[1:])
    words[1:] += np.uint64(first)  # modulo 2**64, as the steps were taken
    return words.view(np.dtype(dtype))


def _repeats(sample: np.ndarray) -> bool:
    """Whether a column's first rows repeat their values enough for codes to pay (no for
    unhashable values)."""
    try:
        return len(set(sample.tolist())) <= MOST_DISTINCT
    except TypeError:
        return False


def factorize_without_nulls(column: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Codes and distinct values of a column, or None when it holds NULLs (pandas would
    make a None among the distinct values NaN) or unhashable values."""
    try:
        codes, distinct = pd.factorize(column, use_na_sentinel=True)
    except TypeError:
        return None
    if len(codes) and codes.min() < 0:
        return None
    return codes, distinct


def _string_codes(column: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, Decoder] | None:
    """Codes and distinct values of a column of ``str`` that repeats them, else None
    (mostly distinct values, NULLs or anything but ``str``). ``known``: the column's
    :func:`factorize_without_nulls`, when an earlier step already took it."""
    found = known if known is not None else factorize_without_nulls(column)
    if found is None:
        return None
    codes, distinct = found
    if len(distinct) > len(column) // 2 or any(type(v) is not str for v in distinct):
        return None
    narrow = np.int32 if len(distinct) > 1 << 16 else narrowest_unsigned(len(distinct) - 1)
    return codes.astype(narrow), ("values", np.asarray(distinct, dtype=object))


def take_coded(coded: Coded, index: np.ndarray | slice) -> Coded:
    """Rows at ``index`` of a coded table (the distinct values are shared, not copied;
    a slice's columns are views)."""
    columns, decoders = coded
    return take(columns, index), decoders


def decode_table(coded: Coded) -> Table:
    columns, decoders = coded
    table: Table = {}
    for name, decoder in decoders.items():
        if decoder is None:
            table[name] = columns[name]
        elif decoder[0] == "values":
            table[name] = decoder[1][columns[name]]
        elif decoder[0] == "delta":
            table[name] = _undelta(columns[name], *decoder[1:])
        elif decoder[0] == "offset":
            _, least, dtype = decoder
            table[name] = columns[name].astype(dtype) + np.dtype(dtype).type(least)
        else:
            table[name] = table[decoder[1]]
    return table


@dataclass(frozen=True)
class _Narrowed:
    """An array of the payload's other parts in its narrow form (``_narrow``)."""

    values: np.ndarray
    decoder: Decoder


def _own_values(coded: Coded) -> Coded:
    """One engine's coded table with each coded string column's distinct values cut to
    those its rows use, the codes renumbered. Why: a split shares the task's distinct
    values among the engines (``take_coded``), so each engine's pickle carried all of
    them. On text that repeats (periodic-Zipf tweets, whose text codes), 250,000 tweets
    routed to 4 engines made 35.0 MB of payloads against 13.2 MB for one engine, and
    every byte is copied about ten times on its way (the module's docstring)."""
    columns, decoders = coded
    cut_columns, cut_decoders = dict(columns), dict(decoders)
    for name, decoder in decoders.items():
        if decoder is None or decoder[0] != "values" or name not in columns:
            continue
        codes, distinct = columns[name], decoder[1]
        used = np.zeros(len(distinct), dtype=bool)
        used[codes] = True
        kept = int(np.count_nonzero(used))
        if kept == len(distinct):
            continue
        renumbered = np.cumsum(used, dtype=np.int64) - 1
        narrow = np.int32 if kept > 1 << 16 else narrowest_unsigned(max(kept - 1, 0))
        cut_columns[name] = renumbered[codes].astype(narrow)
        cut_decoders[name] = ("values", distinct[used])
    return cut_columns, cut_decoders


def _in_steps(coded: Coded) -> Coded:
    """One engine's coded table with its 64-bit integer columns that travel as they are
    in steps where they mostly rise (``_deltas``). Only a table that is split already:
    a column in steps is no longer a column of rows to take."""
    columns, decoders = coded
    columns, decoders = dict(columns), dict(decoders)
    for name, decoder in decoders.items():
        column = columns.get(name)
        if (decoder is None and column is not None and column.dtype.kind in "iu"
                and len(column) >= SAMPLE):
            found = _deltas(column)
            if found is not None:
                columns[name], decoders[name] = found
    return columns, decoders


def _narrow_parts(value: Any) -> Any:
    """``value`` (tuples and lists of plain values and arrays) with every long integer
    array in its narrow form, where one exists."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu" or len(value) < SAMPLE:
            return value
        # the narrower of offsets and steps: the clock's rises of generated tweets (a
        # rise nearly every row) travelled as 4-byte offsets of seq and ts, 1.5 MB an
        # engine per 250,000 tweets, which every engine gets; as steps (seq mostly +1,
        # ts by about a millisecond) they are 2-3 bytes
        found = [c for c in (_narrow(value), _deltas(value)) if c is not None]
        return _Narrowed(*min(found, key=lambda c: c[0].nbytes)) if found else value
    if type(value) in (tuple, list):
        return type(value)(_narrow_parts(v) for v in value)
    return value


def _widen_parts(value: Any) -> Any:
    """What :func:`_narrow_parts` was given."""
    if isinstance(value, _Narrowed):
        return decode_table(({"a": value.values}, {"a": value.decoder}))["a"]
    if type(value) in (tuple, list):
        return type(value)(_widen_parts(v) for v in value)
    return value


def pack_payload(batch: int, tables: Mapping[str, Coded], passthrough: Table | None,
                 info: dict[str, float], truth: np.ndarray | None,
                 time_info: tuple | None = None, late: tuple | None = None,
                 maps: dict[int, bytes] | None = None) -> bytes:
    """An engine's rows per stream (coded), the task's stateless output and counts (sent
    to engine 0 only), the first-story sequence numbers of a generator with a truth and
    how the task's pieces move the watermark (``input_tasks``: every engine gets it),
    the events the engine checks for lateness (``late_rows.Candidates``), the key maps
    the engine reads in this batch as the input task read them (``routing.map_grouping``:
    version -> encoded map), LZ4-compressed (about half the bytes, for about 25 ms of CPU
    per million rows), after their uncompressed size."""
    streams = {n: _in_steps(_own_values(t)) for n, t in tables.items()}
    raw = pickle.dumps((batch, streams, passthrough, info, truth, _narrow_parts(time_info),
                        _narrow_parts(late), maps), protocol=5)
    return _SIZE.pack(len(raw)) + pa.compress(raw, codec=CODEC, asbytes=True)


def unpack_payload(payload: bytes) -> tuple[int, dict[str, Table], Table | None,
                                             dict[str, Any], np.ndarray | None, tuple | None,
                                             tuple | None, dict[int, bytes] | None]:
    """What :func:`pack_payload` packed, with the streams' tables decoded."""
    (size,) = _SIZE.unpack_from(payload)
    raw = pa.decompress(memoryview(payload)[_SIZE.size:], size, codec=CODEC, asbytes=True)
    batch, tables, passthrough, info, truth, time_info, late, maps = pickle.loads(raw)
    return (batch, {n: decode_table(t) for n, t in tables.items()}, passthrough, info, truth,
            _widen_parts(time_info), _widen_parts(late), maps)
