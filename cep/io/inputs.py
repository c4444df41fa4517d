"""From ``--input`` arguments to typed event tables for the module's input streams.

``--input PATH`` feeds the module's only input stream; with several input streams each
argument is ``STREAM=PATH``. Malformed records go to the dead-letter file (see
``sources.py``); the counts come back so the run summary can report them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cep.engine.table import NULL_SUFFIX, SEQ, SUB, Table
from cep.io.deadletter import DeadLetter
from cep.io.generators import generate, generator_name
from cep.io.sources import MAX_RECORD_BYTES, read_events
from cep.lang import ir
from cep.reference import merge_inputs


class InputError(Exception):
    """An input that cannot be read at all (missing path, unknown stream name)."""


@dataclass
class LoadedInputs:
    tables: dict[str, Table]
    accepted: int
    rejected: int
    skipped: int
    truth_ids: np.ndarray | None = None  # a generator's ground truth, when it has one


def parse_input_specs(module: ir.CompiledModule, specs: list[str]) -> dict[str, str]:
    """Map each input stream to its source from ``--input`` arguments."""
    inputs = module.input_streams
    if not inputs:
        raise InputError("the rule file declares no input stream (CREATE SCHEMA)")
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, source = spec.partition("=")
        if sep and name in module.streams:
            if name not in inputs:
                raise InputError(f"'{name}' is a derived stream; feed an input stream: "
                                 f"{', '.join(inputs)}")
            stream = name
        elif len(inputs) == 1:
            stream, source = inputs[0], spec
        else:
            raise InputError(f"several input streams ({', '.join(inputs)}): write "
                             f"--input STREAM=PATH")
        if stream in out:
            raise InputError(f"stream '{stream}' is given two inputs")
        out[stream] = source
    return out


def load_inputs(module: ir.CompiledModule, specs: list[str],
                dead_letter_path: str | None,
                max_record_bytes: int = MAX_RECORD_BYTES) -> LoadedInputs:
    """Read every input, dead-lettering bad records (records over ``max_record_bytes``
    among them), and number events globally."""
    sources = parse_input_specs(module, specs)
    tables: dict[str, Table] = {}
    truth = None
    with DeadLetter(dead_letter_path) as dead:
        for name, source in sources.items():
            stream = module.streams[name]
            if generator_name(source) and not Path(source).exists():
                try:
                    generated = generate(source)
                except ValueError as err:
                    raise InputError(f"--input {source}: {err}") from None
                _check_generated_fields(source, generated.frame, stream)
                frame, truth = generated.frame, generated.truth_ids
            else:
                try:
                    frame = read_events(source, list(stream.fields), stream.timestamp, dead,
                                        max_record_bytes=max_record_bytes)
                except FileNotFoundError as err:
                    raise InputError(str(err)) from None
            tables[name] = frame_to_table(frame, stream)
        rejected, skipped = dead.count, dead.skipped
    accepted = sum(len(t[SEQ]) for t in tables.values())
    return LoadedInputs(merge_inputs(tables, module.streams), accepted, rejected, skipped,
                        truth)


def _check_generated_fields(source: str, frame: pd.DataFrame, stream: ir.StreamDef) -> None:
    missing = [name for name, _ in stream.fields if name not in frame]
    if missing:
        raise InputError(f"--input {source} has no field {', '.join(missing)} for stream "
                         f"{stream.name}; it provides {', '.join(frame.columns[1:])}")


def frame_to_table(frame: pd.DataFrame, stream: ir.StreamDef) -> Table:
    """A typed DataFrame from ``read_events`` as an engine table."""
    table: Table = {SEQ: frame["seq"].to_numpy(dtype=np.int64)}
    table[SUB] = np.zeros(len(frame), dtype=np.int64)
    for name, t in stream.fields:
        column = frame[name]
        table[name] = column.to_numpy(dtype=object) if t == "string" else column.to_numpy()
        if name + NULL_SUFFIX in frame:
            table[name + NULL_SUFFIX] = frame[name + NULL_SUFFIX].to_numpy(dtype=bool)
    return table
