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

A key's state can leave the engine as bytes (``export_keys``) and enter another
(``import_keys``): the bytes hold that key's part of every rule's state (window rows,
pattern partial matches), so the receiving engine continues exactly where the sender
stopped.

Both travel in :mod:`cep.engine.codec`'s data-only format (kinds ``engine`` and ``key``):
they rest in Spark's state store and in MongoDB, so bytes in any other form, a pickle
above all, are refused with :class:`~cep.engine.codec.StateFormatError`, never run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from cep.engine import codec
from cep.engine.clock import Watermark, effective_times, release_seqs
from cep.engine.join_rule import JoinOperator
from cep.engine.match_recognize_rule import MatchRecognizeOperator
from cep.engine.output import empty_output, sort_output
from cep.engine.pattern_rule import PatternOperator
from cep.engine.rate_limit import RateLimited, clock_tables
from cep.engine.table import KEY, RELEASE, SEQ, TIME, Table, concat, take
from cep.engine.window_rule import WindowOperator
from cep.engine.windows import split_by_key
from cep.lang import ir

WAITING = ""  # a key's rows waiting for the watermark, beside its rules' parts (no rule
# can be named so)

Operator = (WindowOperator | JoinOperator | PatternOperator | MatchRecognizeOperator
            | RateLimited)


class Engine:
    """All stateful rules of a module, evaluated together for one engine's keys."""

    def __init__(self, module: ir.CompiledModule) -> None:
        self.module = module
        self.operators: list[tuple[ir.StatefulRule, Operator]] = []
        for rule in module.stateful:
            self.operators.append((rule, _operator(rule, module)))
        self.rule_order = {rule.name: i for i, rule in enumerate(module.stateful)}
        # per stream, rows the watermark has not reached yet (with their keys and times)
        self.waiting: dict[str, Table] = {}

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
        return list(found)

    def snapshot(self) -> bytes:
        """The whole engine's state in one blob (every key at once: far cheaper per batch
        than exporting keys one by one)."""
        return codec.encode({"rules": list(self.rule_order),
                             "parts": [op.snapshot() for _, op in self.operators],
                             "waiting": dict(self.waiting)}, "engine")

    def restore(self, blob: bytes) -> None:
        """Continue from a :meth:`snapshot` of an engine running the same module."""
        state = codec.decode(blob, "engine", "engine snapshot")
        parts = state.get("parts") if type(state) is dict else None
        if (type(parts) is not list or len(parts) != len(self.operators)
                or state.get("rules") != list(self.rule_order)
                or type(state.get("waiting")) is not dict):
            raise ValueError("the engine snapshot does not belong to this rule file")
        for (_, op), part in zip(self.operators, parts, strict=True):
            op.restore(part)
        self.waiting = {name: rows for name, rows in state["waiting"].items()
                        if name in self.module.streams and type(rows) is dict}

    def keys(self) -> set:
        """Keys with any retained state."""
        out: set = set()
        for _, op in self.operators:
            out |= op.keys()
        for rows in self.waiting.values():
            out |= set(rows[KEY].tolist())
        return out

    def export_keys(self, keys: Iterable) -> dict[object, bytes]:
        """Remove the keys' state from this engine and return it, one blob per key."""
        keys = list(keys)
        states = self.take_states(keys)
        return {key: codec.encode(states.get(key, {}), "key") for key in keys}

    def take_states(self, keys: list) -> dict[object, dict[str, object]]:
        """Remove the keys' state from this engine and return it as values (rule name →
        that rule's part, and under :data:`WAITING` its rows waiting for the watermark),
        for the keys that have any: what a key blob encodes."""
        per_rule = {rule.name: op.export(keys) for rule, op in self.operators}
        per_rule[WAITING] = self._take_waiting(keys)
        out: dict[object, dict[str, object]] = {}
        for name, parts in per_rule.items():
            for key, part in parts.items():
                out.setdefault(key, {})[name] = part
        return out

    def _take_waiting(self, keys: list) -> dict[object, dict[str, Table]]:
        """The keys' waiting rows per stream, removed from :attr:`waiting`."""
        out: dict[object, dict[str, Table]] = {}
        for name, rows in list(self.waiting.items()):
            parts, rest = split_by_key(rows, keys) if keys else ({}, rows)
            for key, part in parts.items():
                out.setdefault(key, {})[name] = part
            if len(rest[SEQ]):
                self.waiting[name] = rest
            else:
                del self.waiting[name]
        return out

    def import_keys(self, blobs: dict[object, bytes]) -> None:
        """Adopt keys exported by another engine (or by a previous run). Empty bytes are
        a key without state (the store allows them)."""
        self.put_states({key: self.decode_state(blob, key) for key, blob in blobs.items()
                         if blob})

    def decode_state(self, blob: bytes, key: object) -> dict[str, object]:
        """A key blob's state as values, checked to belong to this engine's rules."""
        return self.check_state(codec.decode(blob, "key", f"state document for key {key!r}"),
                                key)

    def check_state(self, state: object, key: object) -> dict[str, object]:
        """``state`` (decoded from data someone may have written), if it is a key's state
        of this engine's rules."""
        if (type(state) is not dict or not set(state) <= {*self.rule_order, WAITING}
                or type(state.get(WAITING, {})) is not dict):
            raise ValueError(f"the state of key {key!r} does not belong to this rule file")
        return state

    def put_states(self, states: dict[object, dict[str, object]]) -> None:
        """Adopt keys' state as :meth:`take_states` returns it."""
        per_rule: dict[str, dict[object, object]] = {}
        for key, state in states.items():
            for name, part in state.items():
                per_rule.setdefault(name, {})[key] = part
        for rule, op in self.operators:
            if rule.name in per_rule:
                op.import_states(per_rule[rule.name])
        arriving: dict[str, list[Table]] = {}
        for parts in per_rule.get(WAITING, {}).values():
            for name, rows in parts.items():  # type: ignore[attr-defined]
                if name in self.module.streams:
                    arriving.setdefault(name, []).append(rows)
        for name, tables in arriving.items():
            self.waiting[name] = concat([self.waiting.get(name, {}), *tables])


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
        return MatchRecognizeOperator(rule, module.streams[rule.stream])
    return PatternOperator(rule, module.streams)

