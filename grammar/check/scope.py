"""What names mean inside one expression: the :class:`Scope` every clause is checked in.

A rule kind builds the scopes of its clauses (one stream; a join's two sides; a pattern's
tags; MATCH_RECOGNIZE's variables) and the expression typer resolves names in them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grammar import ir


@dataclass
class Scope:
    """What names mean inside one expression.

    ``qualifiers`` maps each alias/tag/stream name usable before a dot to
    ``(ir qualifier, stream)``; ``bare`` lists the ir qualifiers searched for bare names.
    ``aggregate`` is the scope used inside aggregate arguments (None: not allowed).
    """

    qualifiers: dict[str, tuple[str, ir.StreamDef]]
    bare: tuple[str, ...]
    repeated: frozenset[str] = frozenset()
    aggregate: Scope | None = None
    aggregate_hint: str = "aggregate functions need a data window, e.g. #length(10)"
    outside_aggregate_only: frozenset[str] = frozenset()
    forbidden_hint: dict[str, str] = field(default_factory=dict)
    window_functions: bool = False  # prev(), prior() ...: SELECT/HAVING of a window rule
    #: MATCH_RECOGNIZE's DEFINE and MEASURES: its own aggregates (ROW_PATTERN_AGGREGATES)
    #: and min/max of strings, which only its interpreter computes
    row_pattern: bool = False

    def stream_of(self, qualifier: str) -> ir.StreamDef:
        for q, stream in self.qualifiers.values():
            if q == qualifier:
                return stream
        raise KeyError(qualifier)


def constants_only() -> Scope:
    """The scope of a constant (a window size, WITHIN, a variable's default): no fields,
    only variables."""
    return Scope({}, ())


def single_scope(stream: ir.StreamDef, alias: str | None, aggregate: bool = False) -> Scope:
    """The scope of a rule reading one stream (fields bare or as ``stream.f``/``alias.f``);
    with ``aggregate``, a data window's: aggregates and window functions allowed."""
    quals = {stream.name: ("", stream)}
    if alias:
        quals[alias] = ("", stream)
    scope = Scope(quals, ("",))
    if aggregate:
        scope.aggregate = Scope(quals, ("",))
        scope.window_functions = True
    return scope


def without_aggregates(scope: Scope, clause: str) -> Scope:
    """The same scope with aggregates forbidden, saying where (for the hint)."""
    if scope.aggregate is None and clause != "an aggregate's argument":
        return scope
    hint = f"aggregate functions are not allowed in {clause}"
    if clause == "WHERE":
        hint += "; use HAVING"
    return Scope(
        scope.qualifiers,
        scope.bare,
        scope.repeated,
        None,
        hint,
        scope.outside_aggregate_only if clause == "SELECT" else frozenset(),
        scope.forbidden_hint,
    )
