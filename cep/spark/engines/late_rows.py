"""Late events on Spark: counted once each, and under ``--late drop`` taken out before
any rule sees them and dead-lettered, as the reference runner does (``cep.reference``).

Whether an event is late depends on the batch's watermark, which only the engine tasks
know (``engine_batch.batch_watermark``: every engine of stage 0 reaches the same one), so
the input tasks send the engines what they need to decide it themselves
(``splitter.late_candidates``): the seq and timestamp of input events of streams with a
TIMESTAMP (the reference's late events are those, whatever rules they feed). Each such
event is *owned* by one engine, the one a hash of its seq names (``owners``), which counts
it and writes its dead letter, so no event counts twice however many engines, rules or
streams it reaches. Under ``drop`` an engine also gets the seq and timestamp of every
event whose rows it receives (its stateful rows; engine 0's stateless output), and
leaves the late ones out. The dead letters go where the input tasks put a malformed
record's (``dead/batch-N/``, a file per engine replaced when a task is retried), which
the driver appends to the dead-letter file once per batch
(``sink.Delivery.dead_letters``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cep.engine.clock import Watermark, late_mask
from cep.engine.table import SEQ, Table, sorted_unique, take
from cep.io.deadletter import DeadLetter
from cep.io.inputlog import Segment
from cep.io.late_letters import add_late_letters
from grammar import ir
from splitter.late_candidates import Candidates


@dataclass
class LateRows:
    """What an engine found late in its batch: every late seq it was sent (to leave
    out under ``drop``) and the late events it owns (to count and dead-letter)."""

    seq: np.ndarray  # sorted
    owned: dict[str, np.ndarray]  # seq, ts and the watermark, as reference.late_events
    segments: dict[int, Segment]

    @property
    def count(self) -> int:
        return len(self.owned["seq"])

    def drop_from(self, table: Table) -> Table:
        """``table`` without the rows of late events."""
        if not table or not len(self.seq):
            return table
        column = table[SEQ] if SEQ in table else table["seq"]
        return take(table, ~np.isin(column, self.seq))

    def write(self, module: ir.CompiledModule, path: str) -> None:
        """Dead-letter the owned late events at ``path`` (replacing what an earlier try
        of the task wrote there), as the local runner writes them."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with DeadLetter(path) as dead:
            add_late_letters(dead, module, self.segments, self.owned)


def find_late(pieces: list[Candidates], watermark: Watermark) -> LateRows:
    """The late events among what the input tasks sent this engine."""
    empty = np.empty(0, np.int64)
    seq = np.concatenate([p[0] for p in pieces]) if pieces else empty
    ts = np.concatenate([p[1] for p in pieces]) if pieces else empty
    owned = np.concatenate([p[2] for p in pieces]) if pieces else np.empty(0, bool)
    late = late_mask(seq, ts, watermark) if len(seq) else np.zeros(0, bool)
    mine = late & owned
    order = np.argsort(seq[mine], kind="stable")
    own_seq, own_ts = seq[mine][order], ts[mine][order]
    segments = {}
    if len(own_seq):
        for piece in pieces:
            for text in piece[3]:
                segment = Segment.from_json(text)
                segments[segment.ordinal] = segment
    return LateRows(sorted_unique(seq[late]),
                    {"seq": own_seq, "ts": own_ts, "watermark": watermark.just_before(own_seq)},
                    segments)


def late_path(dead_at: str, batch: int, label: int) -> str:
    """Where engine ``label`` dead-letters its late events of ``batch``: beside the input
    tasks' malformed records of the batch (``SourceConfig.dead_path``)."""
    return os.path.join(dead_at, f"batch-{batch:07d}", f"late-{label:06d}.jsonl")
