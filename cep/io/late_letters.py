"""Late events as dead letters: what the ``drop`` policy does with an event below the
watermark (``cep.engine.clock.late_mask``), so that none is lost silently.

A late event is known by its seq, which names its segment and its place there; its dead
letter names the same source and offset as a malformed record's would (the file and the
byte offset of its line, a Parquet or generated row's index, a Kafka record's
``topic/partition`` and offset), kind ``late``, a reason with its timestamp, the
watermark it was below and the lateness, and the record: the line as it is in a text
file, else (Parquet, generators, Kafka) the event's fields as JSON. Whoever decided the
event was late reads it back by that offset (the reference runner; on Spark an engine
task, like the tasks that read the input): late events are few where the input is
nearly in order, and nobody has to carry every record's text in case it is late.
"""

from __future__ import annotations

import json

import numpy as np

from cep.engine.output import format_timestamps
from cep.io.deadletter import RECORD_LIMIT, DeadLetter
from cep.io.inputlog import KAFKA_KIND, SEQ_SHIFT, TEXT_KINDS, Segment
from grammar import ir

OFFSET_MASK = (1 << SEQ_SHIFT) - 1


def add_late_letters(dead: DeadLetter, module: ir.CompiledModule,
                     segments: dict[int, Segment], late: dict[str, np.ndarray]) -> None:
    """Dead-letter the late events ``late`` (their ``seq``, ``ts`` and ``watermark``),
    whose segments are among ``segments`` (by ordinal)."""
    if not len(late["seq"]):
        return
    times = format_timestamps(late["ts"]).tolist()
    marks = format_timestamps(late["watermark"]).tolist()
    lateness = module.lateness_us / 1e6
    for seq, ts, mark in zip(late["seq"].tolist(), times, marks, strict=True):
        segment = segments[seq >> SEQ_SHIFT]
        offset = segment.start + (seq & OFFSET_MASK)
        reason = (f"late: timestamp {ts} is below the watermark {mark} (the largest "
                  f"timestamp before it minus the lateness, {lateness:g} s)")
        dead.add(record_source(segment), offset, "late", reason,
                 record_text(module, segment, offset))


def record_source(segment: Segment) -> str:
    """What a dead letter of this segment names as its source (as its reader does)."""
    if segment.kind == KAFKA_KIND:
        from cep.io.kafka_input import parse_segment_path  # Kafka's client: on demand

        _, topic, partition = parse_segment_path(segment.path)
        return f"{topic}/{partition}"
    return segment.path


def record_text(module: ir.CompiledModule, segment: Segment, offset: int) -> str:
    """The record at ``offset``: its line in a text file, else its fields as JSON."""
    if segment.kind in TEXT_KINDS:
        with open(segment.path, "rb") as fh:
            fh.seek(offset)
            line = fh.read(4 * RECORD_LIMIT).split(b"\n", 1)[0]
        return line.decode("utf-8", errors="replace").rstrip("\r")
    from cep.io.inputs import frame_to_table, read_segment  # the readers: on demand

    stream = module.streams[segment.stream]
    frame, _ = read_segment(segment, offset, offset + 1, stream, DeadLetter())
    table = frame_to_table(frame, stream)
    record = {}
    for name, type_name in stream.fields:
        null = table.get(name + "__null")
        if null is not None and null[0]:
            record[name] = None
        elif type_name == "timestamp":
            record[name] = format_timestamps(table[name][:1])[0]
        else:
            record[name] = table[name][0].item() if hasattr(table[name][0], "item") \
                else table[name][0]
    return json.dumps(record, ensure_ascii=False)
