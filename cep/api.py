"""The Python API, for notebooks and scripts.

    import cep
    rules = cep.compile_rules("rules/busy_topic.epl", set={"threshold": 4})
    events = rules.run("tweets.jsonl")                  # on Spark, 5 engines
    events = rules.run(frame, runner="local")           # a pandas DataFrame of events

``run`` returns the complex events as a pandas DataFrame: ``rule``, ``key``, ``seq``,
``ts`` (UTC timestamps), then the rules' columns. DataFrames go through the same reader
as files, so types are checked the same way and bad rows are counted, never silently
dropped (``rules.last_run`` has the counts).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cep.engine.output import output_records
from cep.io.inputs import LoadedInputs, load_inputs
from cep.io.sources import write_events_jsonl
from cep.lang import ir
from cep.lang.compile import compile_file, compile_text
from cep.reference import run_reference
from cep.spark.runtime import DEFAULT_BATCH_SIZE, run_on_spark

Source = str | Path | pd.DataFrame | Mapping[str, "str | Path | pd.DataFrame"]


@dataclass
class RunCounts:
    events: int
    dead_lettered: int
    outputs: int


class Rules:
    """A compiled rule file, ready to run over events."""

    def __init__(self, module: ir.CompiledModule) -> None:
        self.module = module
        self.last_run: RunCounts | None = None

    @property
    def key(self) -> str | None:
        return self.module.key

    def run(self, source: Source, *, runner: str = "spark", engines: int = 5,
            batch_size: int | None = None, master: str = "local[*]",
            dead_letter: str | None = None) -> pd.DataFrame:
        """Every complex event of the rules over ``source``, as a DataFrame."""
        with tempfile.TemporaryDirectory(prefix="cep-api-") as tmp:
            loaded = self._load(source, Path(tmp), dead_letter)
            if runner == "local":
                records = output_records(run_reference(self.module, loaded.tables,
                                                       batch_size))
            elif runner == "spark":
                records = run_on_spark(self.module, loaded.tables, engines=engines,
                                       batch_size=batch_size or DEFAULT_BATCH_SIZE,
                                       master=master, progress=False).records
            else:
                raise ValueError(f"runner must be 'spark' or 'local', not {runner!r}")
        self.last_run = RunCounts(loaded.accepted, loaded.rejected, len(records))
        return events_frame(records)

    def _load(self, source: Source, tmp: Path, dead_letter: str | None) -> LoadedInputs:
        items = source.items() if isinstance(source, Mapping) else [(None, source)]
        specs = []
        for i, (stream, item) in enumerate(items):
            if isinstance(item, pd.DataFrame):
                path = tmp / f"input-{i}.jsonl"
                ts = self.module.streams[stream or self.module.input_streams[0]].timestamp
                write_events_jsonl(item, path, [ts] if ts and item[ts].dtype.kind == "i"
                                   else [])
                item = path
            specs.append(f"{stream}={item}" if stream else str(item))
        return load_inputs(self.module, specs, dead_letter)


def compile_rules(rules: str | Path, set: Mapping[str, object] | None = None) -> Rules:
    """Compile a rule file (a path) or rule text (anything containing a newline or ';')."""
    overrides = {k: str(v) for k, v in (set or {}).items()}
    text = str(rules)
    if isinstance(rules, str) and ("\n" in text or ";" in text):
        return Rules(compile_text(text, "<rules>", overrides))
    return Rules(compile_file(rules, overrides))


def events_frame(records: list[dict]) -> pd.DataFrame:
    """Output records as a DataFrame with real timestamps in ``ts``."""
    if not records:
        return pd.DataFrame(columns=["rule", "key", "seq", "ts"])
    frame = pd.DataFrame.from_records(records)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True, format="ISO8601")
    return frame
