"""INSERT INTO from stateful rules: a stage's output rows become the next stage's events.

A stateful rule with a target (``ir.Stage``) emits output rows like any rule, and those
rows are the events of its target stream: ``__seq`` is the row's seq (the input event
at which it was made), ``__sub`` orders the rows of one seq (1 + their rank in the
reference order, ``output.sort_output``, so that they follow the input event itself,
whose ``__sub`` is 0, and come in the same order whichever engines made them),
and the fields are the row's values, decoded from the output row's JSON text (which
holds every value exactly: floats as their shortest repr, timestamps to the µs).

The texts of a batch are decoded together, as JSON lines, by Arrow's JSON reader into
typed columns (the target stream's types), with no Python step per row: on
``insert_into_chain`` of ``bench/bench_reference.py`` (210,260 inserted rows) that
took the decoding from about a third of the rule's time to a tenth of it (see the
commit that brought it). What Arrow refuses (timestamps outside years 1 to 9999,
text that is not UTF-8) is decoded row by row as before.
The same function serves the reference evaluator and any runtime that routes a stage's
output to the next stage's engines.
"""

from __future__ import annotations

import io
import json

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.json as pa_json

from cep.engine.keyed import SUB_RANGE
from cep.engine.output import sort_output
from cep.engine.table import DTYPES, NULL_SUFFIX, PLACEHOLDERS, SEQ, SUB, Table, take
from grammar import ir


def complex_events(module: ir.CompiledModule, rows: Table) -> dict[str, Table]:
    """The events that ``rows`` (output rows of any stage, in (seq, rule) order as engines
    return them) hold for each target stream of an inserting rule."""
    targets = module.inserting_rules()
    if not targets or not rows or not len(rows["seq"]):
        return {}
    rule_of = rows["rule"]
    out: dict[str, Table] = {}
    for stream in dict.fromkeys(targets.values()):
        rules = [r for r, t in targets.items() if t == stream]
        mine = take(rows, np.isin(rule_of, np.array(rules, dtype=object)))
        if len(mine["seq"]):
            out[stream] = _decode(module.streams[stream], mine, rules)
    return out


def output_only(module: ir.CompiledModule, rows: Table) -> Table:
    """``rows`` without those of inserting rules (which are events, not output)."""
    targets = module.inserting_rules()
    if not targets or not rows or not len(rows["seq"]):
        return rows
    return take(rows, ~np.isin(rows["rule"], np.array(list(targets), dtype=object)))


def _load(text: str) -> dict:
    """An inserted row's values from their JSON text: orjson (3.5x faster than
    ``json.loads`` on 210,260 rows of ``insert_into_chain`` in
    ``bench/bench_reference.py``, where ``json.loads`` took a third of the rule's time),
    and ``json.loads`` for what orjson refuses and the row texts may hold (NaN and the
    infinities). The rows' fields are typed, so no integer passes 64 bits (orjson would
    read one as a float)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _decode(stream: ir.StreamDef, rows: Table, rules: list[str]) -> Table:
    rows = sort_output(rows, {r: i for i, r in enumerate(rules)})
    seq = rows["seq"].astype(np.int64)
    first = np.r_[True, seq[1:] != seq[:-1]]
    starts = np.maximum.accumulate(np.where(first, np.arange(len(seq)), 0))
    sub = np.arange(len(seq)) - starts + 1
    if len(sub) and sub.max() >= SUB_RANGE:
        raise ValueError(f"one event produced {int(sub.max())} rows into stream "
                         f"'{stream.name}'; at most {SUB_RANGE - 1} are supported")
    table: Table = {SEQ: seq, SUB: sub.astype(np.int64)}
    texts = rows["values"].tolist()
    for name, (values, nulls) in (_arrow_fields(stream, texts)
                                  or _row_fields(stream, texts)).items():
        table[name] = values
        if nulls.any():
            table[name + NULL_SUFFIX] = nulls
    return table


ARROW_TYPES = {"int": pa.int64(), "long": pa.int64(), "duration": pa.int64(),
               "timestamp": pa.timestamp("us"), "double": pa.float64(),
               "boolean": pa.bool_(), "string": pa.string()}
Fields = dict[str, tuple[np.ndarray, np.ndarray]]  # per field: its values and NULL mask


def _arrow_fields(stream: ir.StreamDef, texts: list[str]) -> Fields | None:
    """The stream's fields of the rows whose values ``texts`` are, read as JSON lines by
    Arrow (one core), with their NULL masks; None where Arrow cannot read them all as
    the rows hold them (:func:`_row_fields` then does)."""
    if not texts or any(t not in ARROW_TYPES for _, t in stream.fields):
        return None
    schema = pa.schema([(name, ARROW_TYPES[t]) for name, t in stream.fields])
    try:
        data = "\n".join(texts).encode()
        if len(data) >= 2**31 - 1:
            return None
        read = pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pa_json.ParseOptions(explicit_schema=schema,
                                               unexpected_field_behavior="ignore"))
    except (pa.ArrowException, UnicodeEncodeError):
        return None
    if read.num_rows != len(texts):
        return None
    out: Fields = {}
    for name, type_name in stream.fields:
        column = read.column(name).combine_chunks()
        if type_name == "timestamp":
            column = column.cast(pa.int64())
        nulls = column.is_null().to_numpy(zero_copy_only=False)
        values = column.fill_null(PLACEHOLDERS[type_name]).to_numpy(zero_copy_only=False)
        out[name] = (np.asarray(values, dtype=DTYPES[type_name]), np.asarray(nulls, bool))
    return out


def _row_fields(stream: ir.StreamDef, texts: list[str]) -> Fields:
    """The stream's fields of the rows whose values ``texts`` are, each text read on its
    own (:func:`_load`), with their NULL masks."""
    records = [_load(text) for text in texts]
    out: Fields = {}
    for name, type_name in stream.fields:
        values = [rec.get(name) for rec in records]
        nulls = np.array([v is None for v in values], dtype=bool)
        filled = [PLACEHOLDERS[type_name] if v is None else v for v in values]
        if type_name == "timestamp":
            column = np.array([np.datetime64(v.rstrip("Z"), "us") if isinstance(v, str)
                               else np.datetime64(0, "us") for v in filled])
            column = column.astype(np.int64)
        else:
            column = np.array(filled, dtype=DTYPES[type_name]) if filled else np.empty(
                0, dtype=DTYPES[type_name])
        out[name] = (column, nulls)
    return out
