"""One rule (a SELECT statement), checked in the order the package docstring states:
its stage, its name, its kind's own checks, its key, its INSERT INTO target, its OUTPUT.

The FROM clause decides the kind: MATCH_RECOGNIZE, a PATTERN, a join of two streams, or
one stream (derived without a data window, a window rule with one). Each kind's module
returns the rule's IR; here it is added to its stage, stateless (derived) or stateful.
"""

from __future__ import annotations

import dataclasses

from grammar import ast, ir
from grammar.check.context import Context
from grammar.check.event_patterns import pattern_rule
from grammar.check.joins import join_rule
from grammar.check.row_patterns import recognize_rule
from grammar.check.select import source_slice
from grammar.check.single_stream import single_stream_rule
from grammar.check.stages import (
    claim_key,
    define_stream,
    enter_stage,
    place_target,
    rule_streams,
    stream_timestamps,
)
from grammar.errors import RuleError


def check_rule(ctx: Context, stmt: ast.SelectStatement, index: int) -> None:
    """Check the ``index``-th rule of the module and add it to its stage."""
    enter_stage(ctx, stmt)
    name = _rule_name(ctx, stmt, index)
    rule = _rule_of_kind(ctx, stmt, name)
    if isinstance(rule, ir.DerivedRule):
        if rule.target is not None:
            define_stream(ctx, rule.target, stmt.insert_into_pos or stmt.pos, rule.columns,
                          stream_timestamps(ctx, (rule.stream,)))
        else:
            ctx.outputs.append(name)
        ctx.stage.derived.append(rule)
    else:
        claim_key(ctx.stage, name, rule.key, stmt.pos)
        ctx.outputs.append(name)
        ctx.stage.stateful.append(rule)
    stateful = not isinstance(rule, ir.DerivedRule)
    if stmt.insert_into is not None:
        place_target(ctx, stmt, stateful, name)
    if stmt.output is not None:
        if not stateful:
            raise RuleError(
                "OUTPUT rate limiting needs a rule with state (a data window, a join or "
                "a pattern): its intervals are counted per key",
                stmt.output.pos,
                hint="e.g. FROM S#groupwin(k)#length(1) ... OUTPUT EVERY 5 EVENTS",
            )
        added = ctx.stage.stateful[-1]
        ctx.stage.stateful[-1] = dataclasses.replace(
            added, output=_output_limit(ctx, stmt.output, added))


def _rule_name(ctx: Context, stmt: ast.SelectStatement, index: int) -> str:
    """``@Name('...')``, else ``rule<index>``; unique in the module."""
    name = f"rule{index}"
    for ann in stmt.annotations:
        if ann.name.lower() == "name":
            if not isinstance(ann.value, str) or not ann.value:
                raise RuleError("@Name needs a non-empty string", ann.pos)
            name = ann.value
    if name in ctx.rule_names:
        raise RuleError(f"two rules are named '{name}'", stmt.pos)
    ctx.rule_names.add(name)
    return name


def _rule_of_kind(ctx: Context, stmt: ast.SelectStatement,
                  name: str) -> ir.DerivedRule | ir.StatefulRule:
    """The rule checked by the module of its kind, which its FROM clause decides."""
    if stmt.stream_selector != "istream":
        raise RuleError(
            f"SELECT {stmt.stream_selector.upper()} is not supported: cep's rules output "
            "the insert stream only",
            stmt.stream_selector_pos or stmt.pos,
            hint="write SELECT or SELECT ISTREAM",
        )
    if not stmt.sources:
        raise RuleError("a rule needs a FROM clause", stmt.pos)
    recognize = [s for s in stmt.sources if isinstance(s, ast.RecognizeSource)]
    if recognize:
        if len(stmt.sources) > 1:
            raise RuleError("MATCH_RECOGNIZE cannot be joined with other sources",
                            stmt.sources[1].pos)
        return recognize_rule(ctx, stmt, name, recognize[0])
    pattern_sources = [s for s in stmt.sources if isinstance(s, ast.PatternSource)]
    if pattern_sources:
        if len(stmt.sources) > 1:
            raise RuleError(
                "a PATTERN cannot be joined with other sources", stmt.sources[1].pos
            )
        return pattern_rule(ctx, stmt, name, pattern_sources[0])
    sources = [s for s in stmt.sources if isinstance(s, ast.StreamSource)]
    if len(sources) == 2:
        return join_rule(ctx, stmt, name, sources[0], sources[1])
    if len(sources) > 2:
        raise RuleError(
            "joins of more than two streams are not supported", sources[2].pos
        )
    return single_stream_rule(ctx, stmt, name, sources[0])


def _output_limit(ctx: Context, node: ast.OutputLimit, rule: ir.StatefulRule) -> ir.OutputLimit:
    """``OUTPUT [ALL|FIRST|LAST] EVERY n EVENTS`` or ``EVERY <time period>``; a period
    counts event time, so the rule's streams need a TIMESTAMP."""
    if node.period is None:
        return ir.OutputLimit(node.kind, node.events, None)
    if isinstance(node.period, ast.Name) and node.period.name.lower() == "events":
        raise RuleError("OUTPUT EVERY ... EVENTS needs the number of events",
                        node.period.pos, hint="e.g. OUTPUT LAST EVERY 5 EVENTS")
    period = ctx.types.positive_duration_us(
        node.period, "OUTPUT EVERY", constant="a constant time period or a count of EVENTS",
        positive="a positive time period")
    for name in rule_streams(rule):
        if ctx.streams[name].timestamp is None:
            raise RuleError(
                f"OUTPUT EVERY {source_slice(ctx.module.source, node.period.pos)} "
                f"counts event time, but stream '{name}' has no TIMESTAMP",
                node.period.pos,
                hint="declare one, or count results: OUTPUT EVERY n EVENTS",
            )
    return ir.OutputLimit(node.kind, None, period)
