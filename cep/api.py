"""The Python API, for notebooks and scripts.

    import cep
    rules = cep.compile_rules("rules/busy_topic.epl", set={"threshold": 4})
    events = rules.run("tweets.jsonl")                  # on Spark, 5 engines
    events = rules.run(frame, runner="local")           # a pandas DataFrame of events

    with rules.stream("incoming/", follow=True) as run:  # unbounded: batch by batch
        for batch, events in run:                       # a DataFrame per micro-batch
            ...
            run.deploy("rules/new_pattern.epl")         # as cep deploy: next batch on
            if enough:
                run.stop()                              # the batch in flight commits

``run`` returns the complex events of a bounded input as a pandas DataFrame: ``rule``,
``key``, ``seq``, ``ts`` (UTC timestamps), then the rules' columns. DataFrames go through
the same reader as files, so types are checked the same way and bad rows are counted,
never silently dropped (``rules.last_run`` has the counts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import queue
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cep.engine.udf.files import load_udf_files
from cep.io import rule_changes, scale_changes
from cep.io.jsonl_writer import write_events_jsonl
from cep.run import run
from cep.run_config import DEFAULT_UDF_TIMEOUT, Output, RunConfig, RunResult
from grammar import ir
from grammar.compile import compile_file, compile_text

Source = str | Path | pd.DataFrame | Mapping[str, "str | Path | pd.DataFrame"]


@dataclass
class RunCounts:
    events: int
    dead_lettered: int  # malformed input records
    outputs: int
    udf_failures: int = 0  # records on which a user function raised (dead letters too)


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
            dead_letter: str | None = None, late: str = "process",
            udf_timeout: float = DEFAULT_UDF_TIMEOUT) -> pd.DataFrame:
        """Every complex event of the rules over a bounded ``source``, as a DataFrame;
        ``late``: ``process`` or ``drop`` the events below the watermark;
        ``udf_timeout``: seconds a call of a user function may take (0: unguarded)."""
        with tempfile.TemporaryDirectory(prefix="cep-api-") as tmp:
            config = RunConfig(self._specs(source, Path(tmp)), runner=runner,
                               output=Output(collect=True), engines=engines,
                               batch_size=batch_size, master=master,
                               dead_letter=dead_letter, progress=False, late=late,
                               udf_timeout=udf_timeout)
            result = run(self.module, config)
        records = result.records
        assert records is not None  # collected
        self.last_run = RunCounts(result.events, result.totals.get("dead_lettered", 0),
                                  len(records), result.totals.get("udf_failures", 0))
        return events_frame(records)

    def stream(self, source: str | Path | Mapping[str, str | Path], *, follow: bool = True,
               **options: object) -> StreamingRun:
        """Start a run on Spark in the background; iterate over it for ``(batch,
        DataFrame)`` pairs as micro-batches commit, ``stop()`` to end it. ``options`` are
        :class:`cep.run_config.RunConfig`'s (``engines``, ``batch_size``, ``checkpoint``,
        ``strategy``, ``trigger_s``, …); progress lines go to standard error as
        ``cep run``'s do, from Spark's start on (``progress=False`` silences them)."""
        options.setdefault("progress", True)
        config = RunConfig(self._specs(source, None), follow=follow,
                           **options)  # type: ignore[arg-type]
        return StreamingRun(self.module, config)

    def _specs(self, source: Source, tmp: Path | None) -> list[str]:
        items = source.items() if isinstance(source, Mapping) else [(None, source)]
        specs = []
        for i, (stream, item) in enumerate(items):
            if isinstance(item, pd.DataFrame):
                if tmp is None:
                    raise ValueError("a DataFrame is a bounded input: use run(), not stream()")
                path = tmp / f"input-{i}.jsonl"
                write_input(self.module, stream or self.module.input_streams[0], item, path)
                item = path
            specs.append(f"{stream}={item}" if stream else str(item))
        return specs


class StreamingRun:
    """A run on Spark in a background thread: an iterator of per-batch event frames.

    The queue between the run and the reader holds at most ``backlog`` batches, so a
    reader that falls behind slows the run down instead of growing memory."""

    def __init__(self, module: ir.CompiledModule, config: RunConfig, backlog: int = 8) -> None:
        self._stop = threading.Event()
        self._batches: queue.Queue = queue.Queue(maxsize=backlog)
        self.result: RunResult | None = None
        self.error: BaseException | None = None
        self._workdir: Path | None = None
        self._started = threading.Event()

        def started(workdir: Path) -> None:
            self._workdir = workdir
            self._started.set()

        def deliver(batch: int, text: bytes) -> None:
            self._batches.put((batch, _frame_of_lines(text)))

        def work() -> None:
            try:
                self.result = run(module, dataclasses.replace(
                    config, output=Output(callback=deliver)), self._stop, started)
            except BaseException as err:  # handed to the reader, raised there
                self.error = err
            finally:
                self._started.set()
                self._batches.put(None)

        self._thread = threading.Thread(target=work, name="cep-stream", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[tuple[int, pd.DataFrame]]:
        while (item := self._batches.get()) is not None:
            yield item
        self._thread.join()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Plan no new batch; the one in flight finishes and commits, then the run ends."""
        self._stop.set()

    @property
    def workdir(self) -> Path:
        """The run directory (``checkpoint``, or a temporary one), once the run made it."""
        self._started.wait()
        if self._workdir is None:
            raise RuntimeError(f"the run ended before it made its run directory: {self.error}")
        return self._workdir

    def deploy(self, rules: str | Path, udf: Iterable[str | Path] = ()) -> dict[str, str]:
        """Add rules to the running job, or replace its rules of the same names, as
        ``cep deploy`` does: a rule file (a path) or rule text (anything containing a
        newline or ';'), checked first (a :class:`grammar.errors.RuleError` or
        ``ChangeRefused`` leaves the job as it is), applied at the next batch. ``udf``:
        files of functions the rules call (``cep deploy … --udf``). Returns what it does
        to each rule (``added``, ``replaced``, ``compatible``)."""
        text = str(rules)
        if isinstance(rules, str) and ("\n" in text or ";" in text):
            name = "<deployed>"
        else:
            name, text = text, Path(rules).read_text(encoding="utf-8-sig")
        files = [Path(p) for p in udf]
        load_udf_files(files)  # the rules are checked against the functions' signatures
        return rule_changes.deploy(self.workdir, name, text, files)[1]

    def undeploy(self, *names: str) -> dict[str, str]:
        """Remove rules from the running job by name, as ``cep undeploy`` does."""
        return rule_changes.undeploy(self.workdir, list(names))[1]

    def scale(self, engines: int) -> int:
        """Ask the running job for ``engines`` engines, as ``cep scale`` does: applied at
        the first key map its Balancer writes after this (two batches after the batch
        in flight), keys moving with their state; the request's number. Refused
        (``cep.io.scale_changes.ScaleError``) where the job cannot change its count."""
        return scale_changes.scale(self.workdir, engines)

    def rules(self) -> list[dict]:
        """The rules the job runs, each with its version and start batch (``cep
        rules --json``'s ``rules``)."""
        book = rule_changes.RuleBook.of_run(self.workdir)
        return rule_changes.running_rules(book,
                                          rule_changes.ChangeLog(self.workdir).applied()[0])

    def __enter__(self) -> StreamingRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        while self._thread.is_alive():  # let a blocked put go through
            with contextlib.suppress(queue.Empty):
                self._batches.get(timeout=0.2)
        self._thread.join()


def write_input(module: ir.CompiledModule, stream: str, frame: pd.DataFrame,
                path: str | Path) -> None:
    """Input events of ``stream`` as a JSON-lines file its reader reads back to the same
    values; an integer TIMESTAMP column counts microseconds since the epoch."""
    ts = module.streams[stream].timestamp
    integer = ts is not None and ts in frame and frame[ts].dtype.kind == "i"
    write_events_jsonl(frame, str(path), [ts] if integer and ts else [])


def _frame_of_lines(text: bytes) -> pd.DataFrame:
    return events_frame([json.loads(line) for line in text.decode("utf-8").splitlines()])


def compile_rules(rules: str | Path, set: Mapping[str, object] | None = None,
                  udf: Iterable[str | Path] = ()) -> Rules:
    """Compile a rule file (a path) or rule text (anything containing a newline or ';').

    ``udf``: Python files whose top level registers functions the rules call, imported
    first, as ``cep run --udf`` does (``cep.engine.udf.files``). Functions registered in
    this process from a module of yours need no file: on Spark each worker imports
    their module (not ``__main__``: a notebook's functions go in a file)."""
    load_udf_files(list(udf))
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
