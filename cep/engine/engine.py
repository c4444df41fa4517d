"""One CEP engine: the operators of every stateful rule, for the keys it owns.

This is the single home of rule semantics. The reference evaluator runs one Engine over
the whole input; the Spark runtime runs one Engine per engine group and per batch. Either
way an Engine receives, per batch, the rows of each stream it needs (already keyed, in any
order) and how the watermark moves through the batch (:class:`~cep.engine.clock.Watermark`)
and returns output rows, in the reference order (``output.sort_output``).

Event time (``cep.engine.clock``): each row gets its effective time and the seq at which
it is processed. A row the watermark has not reached yet (the input may still bring
earlier events, up to the lateness) waits in the engine, as state of its key, for the
batch that reaches it. Every operator then processes its keys' rows and fires their
timers in event-time order, also for keys that get no row: a deadline the watermark
passes changes a key's state (and may complete a match) at the first input event that
moves the watermark past it, whichever key that event belongs to.

Keys' state can leave the engine as one blob (``export_keys``, a *parcel*) and enter
another (``import_keys``): the blob holds each key's part of every rule's state (window
rows, pattern partial matches), so the receiving engine continues exactly where the
sender stopped.

Both travel in :mod:`cep.engine.codec`'s data-only format (kinds ``engine`` and ``keys``):
they rest in Spark's state store and in MongoDB, so bytes in any other form, a pickle
above all, are refused with :class:`~cep.engine.codec.StateFormatError`, never run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from cep.engine import codec
from cep.engine.clock import Watermark, effective_times, release_seqs
from cep.engine.keyed import key_positions
from cep.engine.output import empty_output, sort_output
from cep.engine.patterns.chain import chain_shape
from cep.engine.patterns.chain_rule import ChainPatternOperator
from cep.engine.patterns.group_rule import GroupPatternOperator, group_shape
from cep.engine.patterns.rule import InterpretedPatternOperator
from cep.engine.patterns.until_rule import UntilPatternOperator, until_shape
from cep.engine.rate.limit import RateLimited, clock_tables
from cep.engine.table import KEY, RELEASE, SEQ, TIME, Table, concat, factorize, take
from cep.engine.windows.join import JoinOperator
from cep.engine.windows.keyed_window import KeyedWindow, apply_window_changes, window_changes
from cep.engine.windows.rule import WindowOperator
from grammar import ir
from grammar.rule_set import carried_rules

if TYPE_CHECKING:  # MATCH_RECOGNIZE's kernels load numba (about 1 s): only where used
    from cep.engine.patterns.rule import PatternOperator
    from cep.engine.row_patterns.rule import MatchRecognizeOperator

    Operator = (WindowOperator | JoinOperator | PatternOperator | MatchRecognizeOperator
                | RateLimited)

PARCEL = "keys"  # the codec kind of :meth:`Engine.export_keys`'s blob


@dataclasses.dataclass(frozen=True)
class Parcel:
    """Keys handed over by another engine, opened: the keys the parcel names, and an
    engine holding their state and nothing else."""

    keys: list
    engine: Engine



class Engine:
    """All stateful rules of a module, evaluated together for one engine's keys."""

    def __init__(self, module: ir.CompiledModule, version: int = 0) -> None:
        self.module = module
        # the rule set version ``module`` is (``grammar.rule_set``): a snapshot or parcel
        # says which version's rules its state belongs to
        self.version = version
        self.operators: list[tuple[ir.StatefulRule, Operator]] = []
        for rule in module.stateful:
            self.operators.append((rule, _operator(rule, module)))
        self.rule_order = {rule.name: i for i, rule in enumerate(module.stateful)}
        # per stream, rows the watermark has not reached yet (with their keys and times)
        self.waiting: dict[str, Table] = {}
        # a work engine's window rows at its split, with their keys' places in its keys
        self.began: list[tuple[Table, np.ndarray]] = []
        # the watermark's clock as plain data (``cep.io.event_time.EventClock.state``),
        # for a runtime whose engines each follow the input log's time (Spark): it is
        # part of the engine's snapshot and of each change
        self.clock: dict = {}

    def process(self, streams: dict[str, Table], clock: Watermark) -> Table:
        """Run one batch. ``streams`` maps each needed stream to its rows, with ``__key``;
        ``clock`` is the watermark through the batch. Output rows come in the reference
        order (``output.sort_output``), each stamped with where it sits in it."""
        ready = {name: self._released(name, table, clock) for name, table in streams.items()}
        outputs = []
        for rule, op in self.operators:
            if isinstance(rule, ir.WindowRule):
                outputs.append(op.process(ready[rule.stream], clock))  # type: ignore[call-arg]
            elif isinstance(rule, ir.JoinRule):
                outputs.append(op.process(  # type: ignore[call-arg]
                    ready[rule.trigger_stream], ready[rule.window_stream], clock))
            else:
                outputs.append(op.process(  # type: ignore[call-arg]
                    {s: ready[s] for s in rule.streams}, clock))
        return sort_output(concat(outputs) or empty_output(), self.rule_order)

    def _released(self, name: str, table: Table, clock: Watermark) -> Table:
        """The stream's rows (those waiting from earlier batches and the batch's own)
        that the watermark reaches in this batch, each with its effective time and the
        seq at which it is processed; the others wait on in :attr:`waiting`."""
        stream = self.module.streams[name]
        if len(table[SEQ]):
            times = table[stream.timestamp] if stream.timestamp is not None else None
            table = {**table, TIME: effective_times(table[SEQ], times, clock)}
        else:
            table = {**table, TIME: np.empty(0, dtype=np.int64)}
        waiting = self.waiting.pop(name, None)
        rows = concat([waiting, table]) if waiting is not None else table
        release, now = release_seqs(rows[SEQ], rows[TIME], clock)
        if not now.all():
            self.waiting[name] = take(rows, ~now)
        return {**take(rows, now), RELEASE: release[now]}

    def due_keys(self, until: int) -> list:
        """Keys with something the watermark ``until`` makes happen: a timer due, or a
        row waiting for it (what a batch must touch besides the keys its rows reach)."""
        found: dict = {}
        for _, op in self.operators:
            found.update(dict.fromkeys(op.due_keys(until)))
        for rows in self.waiting.values():
            found.update(dict.fromkeys(rows[KEY][rows[TIME] <= until].tolist()))
        # an int64 key column's scalars as Python ints: callers write keys as JSON
        return [k.item() if isinstance(k, np.generic) else k for k in found]

    def snapshot(self) -> bytes:
        """The whole engine's state in one blob (every key at once: far cheaper per batch
        than exporting keys one by one)."""
        return codec.encode(self.state_value(), "engine")

    def state_value(self) -> dict[str, object]:
        """The engine's state as values: what :meth:`snapshot` encodes."""
        value = {"rules": list(self.rule_order),
                 "parts": [op.snapshot() for _, op in self.operators],
                 "waiting": dict(self.waiting), "clock": self.clock}
        if self.version:  # a job whose rules never changed writes what it always wrote
            value["version"] = self.version
        return value

    def restore(self, blob: bytes) -> None:
        """Continue from a :meth:`snapshot` of an engine running the same module."""
        self.restore_value(codec.decode(blob, "engine", "engine snapshot"), "engine snapshot")

    def restore_value(self, state: object, what: str) -> None:
        """Continue from :meth:`state_value` decoded from ``what`` (data someone may
        have written: checked to be of this module before any of it is used)."""
        parts = state.get("parts") if type(state) is dict else None
        if type(state) is dict and state.get("version", 0) != self.version:
            raise ValueError(f"the {what} holds the state of rule set version "
                             f"{state.get('version', 0)}, not {self.version}")
        if (type(parts) is not list or len(parts) != len(self.operators)
                or state.get("rules") != list(self.rule_order)
                or type(state.get("waiting")) is not dict
                or type(state.get("clock", {})) is not dict):
            raise ValueError(f"the {what} does not belong to this rule file")
        for (_, op), part in zip(self.operators, parts, strict=True):
            op.restore(part)
        self.waiting = self._checked_waiting(state["waiting"])
        self.clock = state.get("clock", {})

    def _checked_waiting(self, waiting: dict) -> dict[str, Table]:
        """Waiting rows decoded from data someone may have written: of this module's
        streams only."""
        return {name: rows for name, rows in waiting.items()
                if name in self.module.streams and type(rows) is dict and KEY in rows}

    def keys(self) -> set:
        """Keys with any retained state."""
        out: set = set()
        for _, op in self.operators:
            out |= op.keys()
        for rows in self.waiting.values():
            out |= set(rows[KEY].tolist())
        return out

    def export_keys(self, keys: Iterable, clock: dict | None = None) -> bytes:
        """Remove the keys' state from this engine and return it as one parcel: the keys
        named (the importer checks it received exactly the ones it expects) and their
        state as a snapshot of the work engine :meth:`split_off` makes of them.
        ``clock``: the sender's watermark clock (:attr:`clock`), sent across a scale
        change so that an engine that starts there follows the input's time from where
        every other engine is, not from nothing.

        Why one blob for all the keys, in the snapshot's shape: the hand-over cost what
        it was made of per key. A MongoDB document per key: 1,000 FSD keys of 4.9 MB
        took 0.7 s to write as documents, 0.035 s as one. Then a table per key and
        window: those keys cost 0.25 s to export and 0.30 s to import that way, and
        0.08–0.11 s and 0.04 s as one mask and whole columns (measured on one core;
        on the emulated cluster: ``bench/bench_handoff.py``)."""
        keys = list(keys)
        value = self.split_off(keys).state_value()
        if clock is not None:  # see the argument's note
            value["clock"] = clock
        return codec.encode({"keys": keys, **value}, PARCEL)

    def import_keys(self, parcel: bytes) -> list:
        """Adopt the keys of a parcel that :meth:`export_keys` wrote (in another engine,
        or a previous run); returns them."""
        opened = self.open_parcel(parcel)
        self.adopt(opened)
        return opened.keys

    def open_parcel(self, parcel: bytes,
                    rules_of: Callable[[int], ir.CompiledModule] | None = None) -> Parcel:
        """A parcel's keys and state, checked to belong to this engine's rules and to
        hold no key it does not name (its bytes may come from anyone). A parcel written
        under another rule set version (the rules changed while its keys were in
        transit) is opened with that version's rules, ``rules_of(version)``, and its
        state carried onto this engine's as :meth:`evolved` carries an engine's."""
        value = codec.decode(parcel, PARCEL, "key state parcel")
        keys = value.get("keys") if type(value) is dict else None
        if type(keys) is not list:
            raise ValueError("the key state parcel does not belong to this rule file")
        version = value.get("version", 0)
        if version != self.version and rules_of is not None and type(version) is int:
            held = Engine(rules_of(version), version)
            held.restore_value(value, "key state parcel")
            held = held.evolved(self.module, self.version)[0]
        else:
            held = Engine(self.module, self.version)
            held.restore_value(value, "key state parcel")
        holds = list(held.keys())
        if holds and (key_positions(_key_array(keys), _key_array(holds)) < 0).any():
            raise ValueError("the key state parcel holds the state of keys it does not name")
        return Parcel(keys, held)

    def adopt(self, parcel: Parcel) -> None:
        """Take in an opened parcel's keys (after the caller checked they are the ones
        it expects)."""
        self._take_back(parcel.engine, parcel.keys)

    # ---- bulk key moves: a resident engine (all of an engine's keys, kept from batch to
    # batch) and the work engine that runs a batch's keys (``cep.spark.engines.resident``)

    def windows(self) -> list[KeyedWindow]:
        """Every window of every rule, in a fixed order (the order of a change's parts)."""
        return [w for _, op in self.operators for w in op.state_windows()]

    def split_off(self, keys: list) -> Engine:
        """A work engine holding the state of ``keys``, removed from this engine.

        Why a batch runs there and not here: a window merges a batch into all its rows
        and sorts them, so processing against the resident engine would cost what it
        holds, not what the batch touches. One mask per window, dict pops for the
        per-key states; the work engine remembers the rows it began with, for
        :meth:`merge_in`'s change."""
        work = Engine(self.module, self.version)
        values = _key_array(keys)
        for (_, mine), (_, theirs) in zip(self.operators, work.operators, strict=True):
            for window, into in zip(mine.state_windows(), theirs.state_windows(),
                                    strict=True):
                into.rows, at = window.split_off(values)
                work.began.append((into.rows, at))
            theirs.import_keyed(mine.export_keyed(keys))
        work.waiting = self._split_waiting(values)
        return work

    def _split_waiting(self, keys: np.ndarray) -> dict[str, Table]:
        """The waiting rows of ``keys``, per stream, removed from this engine."""
        out: dict[str, Table] = {}
        for name, rows in list(self.waiting.items()):
            mine = key_positions(keys, rows[KEY]) >= 0
            if mine.any():
                out[name] = take(rows, mine)
                self.waiting[name] = take(rows, ~mine)
        return out

    def merge_in(self, work: Engine, keys: list) -> dict[str, object]:
        """Take back a work engine's state after its batch; ``keys`` are all the keys
        its state may hold (those it was split off with, and any it imported). Returns
        the change of those keys since the split, as :meth:`apply_change` replays it:
        per window the rows kept and the rows added (``windows.window_changes``), per
        rule the keys' other state whole. A key in ``keys`` without state is thereby
        removed."""
        values = _key_array(keys)
        windows = [list(window_changes(began, at, window.rows, values))
                   for window, (began, at) in zip(work.windows(), work.began, strict=True)]
        keyed = self._take_back(work, keys)
        return {"rules": list(self.rule_order), "keys": list(keys), "windows": windows,
                "keyed": keyed, "waiting": dict(work.waiting), "clock": self.clock}

    def _take_back(self, work: Engine, keys: list) -> list[dict]:
        """Move a work engine's state of ``keys`` back into this engine; returns each
        operator's keyed state as it went."""
        for window, into in zip(work.windows(), self.windows(), strict=True):
            into.import_rows([window.rows])
        keyed = []
        for (_, mine), (_, theirs) in zip(self.operators, work.operators, strict=True):
            part = theirs.export_keyed(keys)
            keyed.append(part)
            mine.import_keyed(part)
        for name, rows in work.waiting.items():
            self.waiting[name] = concat([self.waiting.get(name, {}), rows])
        return keyed

    def apply_changes(self, changes: list) -> None:
        """Replay :meth:`merge_in`'s changes, oldest first (a resident engine catching up
        on the batches it missed, or one rebuilt from its base).

        Why not :meth:`apply_change` one by one: each costs a pass over all the rows of
        every window, so catching up on k batches cost k passes over the whole engine.
        Here the keys the changes name are split off once, the changes replayed on that
        work engine (cost: those keys' rows), and the result taken back."""
        if len(changes) < 2:
            for change in changes:
                self.apply_change(change)
            return
        if any(type(c) is not dict or type(c.get("keys")) is not list for c in changes):
            raise codec.StateFormatError("not a change of this rule file's engine")
        named = _key_array([key for change in changes for key in change["keys"]])
        first = np.unique(factorize(named), return_index=True)[1]  # each key once
        keys = named[np.sort(first)].tolist()
        work = self.split_off(keys)
        for change in changes:
            work.apply_change(change)
        self._take_back(work, keys)
        self.clock = work.clock

    def apply_change(self, change: object) -> None:
        """Replay a change that :meth:`merge_in` returned (decoded from data someone may
        have written: its shape is checked before it is applied)."""
        operators = len(self.operators)
        windows = self.windows()
        if (type(change) is not dict or change.get("rules") != list(self.rule_order)
                or type(change.get("keys")) is not list
                or type(change.get("windows")) is not list
                or len(change["windows"]) != len(windows)
                or type(change.get("keyed")) is not list or len(change["keyed"]) != operators
                # a dict, or an operator's keys in one piece (row_patterns' KeyStores)
                or any(not isinstance(part, Mapping) for part in change["keyed"])
                or type(change.get("waiting")) is not dict
                or type(change.get("clock")) is not dict):
            raise codec.StateFormatError("not a change of this rule file's engine")
        keys = change["keys"]
        values = _key_array(keys)
        for window, part in zip(windows, change["windows"], strict=True):
            kept, appended = part if type(part) is list and len(part) == 2 else (None, None)
            if (not isinstance(kept, np.ndarray) or kept.shape != (len(keys),)
                    or kept.dtype != np.int64 or type(appended) is not dict):
                raise codec.StateFormatError("a window change of the wrong shape")
            window.rows = apply_window_changes(window.rows, values, kept, appended)
        for (_, op), part in zip(self.operators, change["keyed"], strict=True):
            op.export_keyed(keys)
            op.import_keyed(part)
        self._split_waiting(values)
        for name, rows in self._checked_waiting(change["waiting"]).items():
            self.waiting[name] = concat([self.waiting.get(name, {}), rows])
        self.clock = change["clock"]


    def evolved(self, module: ir.CompiledModule, version: int
                ) -> tuple[Engine, dict[str, str]]:
        """This engine's state carried onto another rule set (a running job's rules
        changed: ``grammar.rule_set``), and how each of its rules started
        (``carried_rules``: kept, compatible, replaced or added). A kept or compatible
        rule takes its operator's state whole, so its keys, windows, partial matches and
        timers go on as if nothing had changed; a replaced or added rule starts empty; a
        removed rule's state is left behind with this engine. Rows waiting for the
        watermark stay for the streams the new rules read; the clock stays."""
        kinds = carried_rules(self.module, module)
        new = Engine(module, version)
        old = {rule.name: op for rule, op in self.operators}
        for rule, op in new.operators:
            if kinds[rule.name] not in ("kept", "compatible"):
                continue
            was = old[rule.name]
            if len(was.state_windows()) != len(op.state_windows()):
                kinds[rule.name] = "replaced"  # e.g. prior() added: another state's shape
                continue
            op.restore(was.snapshot())
        needed = set(module.stateful_streams())
        new.waiting = {name: rows for name, rows in self.waiting.items() if name in needed}
        new.clock = self.clock
        return new, kinds


#: Whether pattern rules of the kernels' shapes run on them (:mod:`cep.engine.patterns.chain_rule`,
#: :mod:`cep.engine.patterns.until_rule`); the differential tests turn it off to run the
#: interpreter, the kernels' oracle, on the same rules.
PATTERN_KERNEL = True
#: The environment variable that forces every rule onto the interpreters (event patterns
#: and MATCH_RECOGNIZE), so that a rule set can be run on both paths from the command
#: line and the outputs compared (docs/guide.md#environment-variables)
INTERPRET_ENV = "CEP_INTERPRET"


def kernels_on() -> bool:
    """Whether rules the kernels take run on them: read each time an engine builds an
    operator (never cached), so a test or a run's process can switch it; set
    ``CEP_INTERPRET`` to anything but ``0`` or empty to turn them off."""
    return PATTERN_KERNEL and os.environ.get(INTERPRET_ENV, "") in ("", "0")


def _key_array(keys: list) -> np.ndarray:
    out = np.empty(len(keys), dtype=object)
    out[:] = keys
    return out


def _operator(rule: ir.StatefulRule, module: ir.CompiledModule) -> Operator:
    if rule.output is not None:  # OUTPUT ... EVERY: the rule's operator, rate-limited
        inner = _operator(dataclasses.replace(rule, output=None), module)
        return RateLimited(inner, rule.name, rule.output, clock_tables(rule))
    if isinstance(rule, ir.WindowRule):
        return WindowOperator(rule, module.streams[rule.stream])
    if isinstance(rule, ir.JoinRule):
        return JoinOperator(rule, module.streams[rule.trigger_stream],
                            module.streams[rule.window_stream])
    if isinstance(rule, ir.MatchRecognizeRule):
        from cep.engine.row_patterns.rule import MatchRecognizeOperator

        return MatchRecognizeOperator(rule, module.streams[rule.stream], kernels_on())
    if kernels_on():
        shape = chain_shape(rule.pattern)
        if shape is not None:
            return ChainPatternOperator(rule, module.streams, shape)
        repeat = until_shape(rule.pattern)
        if repeat is not None:
            return UntilPatternOperator(rule, module.streams, repeat)
        group = group_shape(rule.pattern)
        if group is not None:
            return GroupPatternOperator(rule, module.streams, group)
    return InterpretedPatternOperator(rule, module.streams)

