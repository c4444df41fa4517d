"""What the input source needs to know, planning and reading: the run's inputs, its
directory and its batch size (``SourceConfig``, pickled to both).

A leaf of ``source.py`` (planning) and ``input_tasks.py`` (the executors' reading), so
that neither imports the other for it: planning imports the readers only inside a task
that reads (see ``source.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cep.engine.udf.shipment import UdfShipment
    from cep.io.inputlog import Segment
    from cep.spark.chains.stages import ChainParts


@dataclass(frozen=True)
class SourceConfig:
    """What the source needs to know, planning and reading (pickled to both)."""

    sources: dict[str, str]  # input stream -> path, directory, glob or generator spec
    workdir: str
    follow: bool
    batch_size: int  # events per micro-batch (estimated for text files, from bytes)
    tasks: int  # tasks a batch is spread over
    max_record_bytes: int
    starting_offsets: str = "earliest"  # where a Kafka partition's first read begins
    late: str = "process"  # the late-event policy: "drop" sends the engines more to check
    udfs: UdfShipment | None = None  # the user functions the rules call (cep.engine.udf.shipment)

    @property
    def dead_dir(self) -> str:
        """Where the tasks leave a batch's dead letters for the driver (``sink.py``)."""
        return os.path.join(self.workdir, "dead")

    @property
    def log_dir(self) -> Path:
        return Path(self.workdir) / "input"

    @property
    def stop_file(self) -> Path:
        return Path(self.workdir) / "stop"

    @property
    def chain(self) -> ChainParts:
        from cep.spark.chains.stages import ChainParts  # only where a module has a chain

        return ChainParts(os.path.join(self.workdir, "chain"))

    def udf_dead_path(self, batch: int, task: str) -> str:
        """Where a reading task's user-function failures go (``udf_letters.py``)."""
        return os.path.join(self.dead_dir, f"batch-{batch:07d}", f"udf-{task}.jsonl")

    def dead_path(self, batch: int, segment: Segment, lo: int) -> str:
        return os.path.join(self.dead_dir, f"batch-{batch:07d}",
                            f"{segment.ordinal:012d}-{lo:015d}.jsonl")
