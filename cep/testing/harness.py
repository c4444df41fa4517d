"""A test harness for rules: feed events, move event time by hand, read what each step
produced, on the reference evaluator; replay the same input on Spark with one argument.

What a user of Flink's operator test harnesses expects, for cep's rules:

    h = RuleHarness("rules/alerts.epl", set={"limit": 30})
    h.send([s.at("0s", sensor="s1", temp=31.0)])      # the events this step produced
    h.advance_watermark(by="10 min")                  # time passes with no event
    h.end_input()                                     # all time passes, as a file ends
    h.events                                          # everything so far
    h.replay(runner="spark")                          # the same input, one run on Spark

How it stays faithful to a real run. Each ``send`` appends the events to its stream's
JSON-lines file in the harness's directory and reads the new bytes back through the
readers of ``cep run`` (``cep.io.inputs.read_segment``): the same typing, the same dead
letters, and the same ``seq`` (the byte offset of the line) that a run over that file
gives. Each step is one micro-batch of the reference evaluator (its engines kept
between steps, :func:`cep.reference.batch_records`), with the watermark the events move
(``cep.io.event_time``). ``advance_watermark`` is a batch without events in which the
watermark rises to the given time (:func:`cep.reference.time_passes`): the timers due
fire there and carry the seq of the place in the input after the events so far, which
is the seq a run gives them when the next event sent reaches their deadline (at the end
of the input, a run fires them at its end instead: ``ignore=("seq",)`` compares without
it). ``end_input`` is the batch in which a bounded input ends.

``replay`` runs the whole input the steps wrote, as one bounded run, on the runner asked
(``spark`` by default, any ``Rules.run`` options): the events must equal the harness's
(``assert_events_equal(h.replay(), h.events)``). A run reads each input stream's file
whole before the next, so with several input streams a replay has the harness's event
order only when every event was sent in one step; ``replay`` refuses otherwise.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from cep.api import Rules, compile_rules, events_frame, write_input
from cep.io.deadletter import DeadLetter
from cep.io.event_time import ClockPiece, EventClock, end_of_log
from cep.io.inputlog import SEQ_SHIFT, Segment
from cep.io.inputs import frame_to_table, read_segment
from cep.reference import batch_records, input_ends, stage_engines, time_passes
from cep.run import rule_order
from cep.testing.compare import Events, records_of
from cep.testing.streams import Offset, duration, instant

NO_WATERMARK = -(1 << 62)  # the watermark before any timestamped event (cep.engine.clock)


class BadEvents(ValueError):
    """Events a step sent that the stream's reader refused (each one's reason)."""


class RuleHarness:
    """Rules under test, fed step by step on the reference evaluator (module notes).

    ``rules``: a rule file, rule text or compiled :class:`cep.api.Rules`; ``set`` and
    ``udf`` as :func:`cep.compile_rules` takes them. ``workdir``: where the input files
    go (default a temporary directory, removed by :meth:`close`). ``dead_letters``:
    ``"raise"`` (default) fails a step whose events the reader refuses, naming why;
    ``"keep"`` leaves them in :attr:`dead_letters`, as a run would."""

    def __init__(self, rules: str | Path | Rules, *, set: dict[str, object] | None = None,
                 udf: tuple[str | Path, ...] | list[str | Path] = (),
                 workdir: str | Path | None = None, dead_letters: str = "raise") -> None:
        if dead_letters not in ("raise", "keep"):
            raise ValueError(f"dead_letters must be 'raise' or 'keep', not {dead_letters!r}")
        self.rules = rules if isinstance(rules, Rules) else compile_rules(rules, set=set,
                                                                         udf=udf)
        self.module = self.rules.module
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="cep-harness-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._dead_policy = dead_letters
        self._dead_path = self.workdir / "dead-letters.jsonl"
        self.files = {name: self.workdir / f"{name}.jsonl" for name in self.module.input_streams}
        for path in self.files.values():
            path.write_bytes(b"")
        self._engines = stage_engines(self.module)
        self._order = rule_order(self.module)
        self._clock = EventClock(self.module.lateness_us)
        self._steps_sending: list[int] = []  # the steps that sent events
        self.steps: list[pd.DataFrame] = []  # the events of each step, in order
        self.ended = False

    # ------------------------------------------------------------------ steps

    def send(self, events: Events, stream: str | None = None) -> pd.DataFrame:
        """One micro-batch of input events (dicts or a DataFrame) of ``stream`` (needed
        when the rules read several): the complex events it produced."""
        self._check_open()
        name = self._stream(stream)
        frame = events.copy() if isinstance(events, pd.DataFrame) else pd.DataFrame.from_records(
            records_of(events))
        path = self.files[name]
        start = path.stat().st_size
        step_file = self.workdir / f".step-{len(self.steps)}.jsonl"
        write_input(self.module, name, frame, step_file)
        with path.open("ab") as out:
            out.write(step_file.read_bytes())
        step_file.unlink()
        end = path.stat().st_size
        definition = self.module.streams[name]
        segment = self._segment(name, end)
        before = self._dead_count()
        with DeadLetter(str(self._dead_path), append=True) as dead:
            read, _ = read_segment(segment, start, end, definition, dead)
        table = frame_to_table(read, definition)
        refused = self.dead_letters[before:]
        if refused and self._dead_policy == "raise":
            reasons = "; ".join(f"{d['kind']}: {d['reason']}" for d in refused[:5])
            raise BadEvents(f"{len(refused)} of the {len(frame)} events sent to {name} were "
                            f"refused by its reader ({reasons})")
        clock = self._clock.advance([ClockPiece.of(segment, start, table, definition)],
                                    final=False, end_seq=self._end_seq())
        self._steps_sending.append(len(self.steps))
        return self._step({**self._empty_inputs(), name: table}, clock)

    def advance_watermark(self, to: str | pd.Timestamp | None = None, *,
                          by: Offset | None = None) -> pd.DataFrame:
        """Move event time to ``to`` (an instant), or ``by`` a duration past the
        watermark, with no event: a micro-batch in which what time alone does happens
        (windows' batches close, ``OUTPUT … EVERY`` intervals, timers and pattern
        deadlines up to that time). Returns the complex events it produced. Time never
        goes back: a time at or below the watermark changes nothing."""
        self._check_open()
        if (to is None) == (by is None):
            raise ValueError("give the time to advance to, or by how much")
        if to is not None:
            target = instant(to)
        else:
            if self._clock.wm == NO_WATERMARK:
                raise ValueError("no watermark yet (no timestamped event sent): "
                                 "advance_watermark(to=...) names a time")
            target = pd.Timestamp(self._clock.wm, unit="us", tz="UTC") + duration(by)
        clock = time_passes(self._clock, _micros(target), self._next_seq(), self._end_seq())
        return self._step(self._empty_inputs(), clock)

    def end_input(self) -> pd.DataFrame:
        """End the input, as the end of a bounded file does: all event time passes and
        every pending timer fires. Returns the complex events that produced."""
        self._check_open()
        self.ended = True
        return self._step(self._empty_inputs(), input_ends(self._clock, self._end_seq()))

    # ------------------------------------------------------------------ reading

    @property
    def events(self) -> pd.DataFrame:
        """Every complex event so far, step after step (the reference order)."""
        frames = [f for f in self.steps if len(f)]
        if not frames:
            return events_frame([])
        return pd.concat(frames, ignore_index=True)

    @property
    def watermark(self) -> pd.Timestamp | None:
        """Event time as the rules see it now (None before any timestamped event)."""
        if self._clock.wm == NO_WATERMARK:
            return None
        return pd.Timestamp(self._clock.wm, unit="us", tz="UTC")

    @property
    def dead_letters(self) -> list[dict[str, Any]]:
        """The records the readers refused so far, as dead-letter lines."""
        import json

        if not self._dead_path.exists():
            return []
        lines = self._dead_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line]

    def replay(self, runner: str = "spark", **options: Any) -> pd.DataFrame:
        """Every event of one bounded run over the input the steps wrote, on ``runner``
        (``Rules.run``'s other options too: ``engines``, ``batch_size``, …)."""
        fed = {name: path for name, path in self.files.items() if path.stat().st_size}
        if len(fed) > 1 and len(self._steps_sending) > 1:
            raise ValueError("a run reads each input stream's file whole, one after "
                             "another: with several streams fed in several steps its "
                             "event order is not the harness's (send them in one step)")
        if not fed:
            return events_frame([])
        return self.rules.run({name: str(path) for name, path in fed.items()},
                              runner=runner, **options)

    def close(self) -> None:
        """Remove the harness's temporary directory (not a ``workdir`` given to it)."""
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RuleHarness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ inside

    def _check_open(self) -> None:
        if self.ended:
            raise RuntimeError("the input has ended (end_input): a new harness starts again")

    def _stream(self, stream: str | None) -> str:
        inputs = self.module.input_streams
        if stream is None:
            if len(inputs) != 1:
                raise ValueError(f"the rules read several input streams ({', '.join(inputs)}):"
                                 " name one with stream=")
            return inputs[0]
        if stream not in inputs:
            raise ValueError(f"{stream!r} is not an input stream of the rules "
                             f"({', '.join(inputs)})")
        return stream

    def _segment(self, name: str, end: int) -> Segment:
        """The stream's file as the one segment a run logs for it (small test inputs are
        one segment: ``cep.io.inputlog.MAX_SEGMENT``), so seqs are the run's."""
        ordinal = self.module.input_streams.index(name)
        return Segment(ordinal, name, "json", str(self.files[name]), 0, end, 1.0, True)

    def _empty_inputs(self) -> dict:
        out = {}
        for name in self.module.input_streams:
            segment = self._segment(name, 0)
            with DeadLetter(None) as dead:
                read, _ = read_segment(segment, 0, 0, self.module.streams[name], dead)
            out[name] = frame_to_table(read, self.module.streams[name])
        return out

    def _fed(self) -> list[int]:
        return [i for i, path in enumerate(self.files.values()) if path.stat().st_size]

    def _next_seq(self) -> int:
        """The seq of the place after every event sent so far."""
        fed = self._fed()
        if not fed:
            return 0
        last = fed[-1]
        return (last << SEQ_SHIFT) | list(self.files.values())[last].stat().st_size

    def _end_seq(self) -> int:
        """Where a run over the files ends its input (after the last file's segment)."""
        fed = self._fed()
        return end_of_log(fed[-1] + 1) if fed else 0

    def _dead_count(self) -> int:
        return len(self.dead_letters)

    def _step(self, inputs: dict, clock: Any) -> pd.DataFrame:
        records = batch_records(self.module, self._engines, inputs, clock, self._order)
        frame = events_frame(records)
        self.steps.append(frame)
        return frame


def _micros(stamp: pd.Timestamp) -> int:
    return int(stamp.value // 1000)
