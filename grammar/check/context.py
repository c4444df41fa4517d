"""What the checker knows while it walks a module, shared by its passes.

The statements are checked in file order, and each sees what the ones before it declared:
the streams (input schemas and INSERT INTO targets), the variables, the rule names, and
per stage the rules and the partition key (see ``ir.Stage``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grammar import ast, ir
from grammar.check.expressions import ExpressionTyper
from grammar.errors import Pos, RuleError, did_you_mean


@dataclass
class Stage:
    """The rules and the partition key of one stage while checking."""

    derived: list[ir.DerivedRule] = field(default_factory=list)
    stateful: list[ir.StatefulRule] = field(default_factory=list)
    key: str | None = None
    key_owner: tuple[str, Pos] | None = None
    unkeyed_owner: tuple[str, Pos] | None = None


class Context:
    """The module being checked, its options, and what its statements declared so far.

    ``stage`` is the stage of the rule being checked (stage 0 is the module itself; a
    rule reading a stateful rule's INSERT INTO stream is in a later one).
    """

    def __init__(self, module: ast.Module, overrides: dict[str, str],
                 state_ttl_us: int | None = None) -> None:
        self.module = module
        self.overrides = overrides
        self.state_ttl_us = state_ttl_us
        self.streams: dict[str, ir.StreamDef] = {}
        self.input_streams: list[str] = []
        self.variables: dict[str, ir.Variable] = {}
        self.outputs: list[str] = []
        self.rule_names: set[str] = set()
        # INSERT INTO from a stateful rule makes a stream of the next stage (see ir.Stage):
        # each stream's stage, and per stage its rules and key
        self.stream_stage: dict[str, int] = {}
        self.stages: dict[int, Stage] = {0: Stage()}
        self.stage_index = 0
        self.types = ExpressionTyper(self.variables)

    @property
    def stage(self) -> Stage:
        """The rules and key of the stage being checked."""
        return self.stages[self.stage_index]

    def stream(self, name: str, pos: Pos) -> ir.StreamDef:
        """The stream called ``name``, declared before this statement."""
        stream = self.streams.get(name)
        if stream is None:
            raise RuleError(
                f"unknown stream '{name}'", pos, hint=did_you_mean(name, self.streams)
            )
        return stream


def refuse_clause(exprs: tuple[ast.Expr, ...], clause: str, where: str) -> None:
    """A clause that this kind of rule does not take (``where`` names the kind)."""
    if exprs:
        raise RuleError(f"{clause} is not allowed in {where}", exprs[0].pos)


def ttl_needs_time(streams: list[ir.StreamDef], pos: Pos, what: str) -> None:
    """The state time-to-live counts event time, so the state it bounds needs it."""
    for stream in streams:
        if stream.timestamp is None:
            raise RuleError(
                f"the state time-to-live needs event time, but stream '{stream.name}' "
                f"({what}) has no TIMESTAMP",
                pos,
                hint=f"declare it: CREATE SCHEMA {stream.name} (...) TIMESTAMP field, "
                "or run without the state time-to-live",
            )
