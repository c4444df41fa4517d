"""The checker: AST → checked IR, or a located :class:`RuleError`.

What it decides (the semantics the engine relies on, see docs/language.md#semantics):
* every name resolves: streams, fields (bare, ``alias.f``, ``tag.f``, ``tag[i].f``),
  variables (replaced by their value), functions (the signatures of
  :mod:`grammar.signatures`);
* every expression has a type, and operators/functions get the types they accept;
* aggregates appear only in SELECT/HAVING of a rule with a data window;
* each rule is classified: derived (stateless), window, ``#lastevent`` join, pattern,
  MATCH_RECOGNIZE;
* the partition key of each stateful rule comes from ``#groupwin(k)``, ``GROUP BY k`` or
  ``PARTITION BY k``, and all stateful rules of a stage share it (a stage: the rules
  reading the complex events that earlier stages' INSERT INTO rules produce, ``ir.Stage``);
* an ``every`` over a pattern that can match more than once is refused: its state grows
  without bound whatever WITHIN or the state time-to-live says.

The order of the passes. The statements are checked one at a time, in file order, so that
a statement sees what the ones before it declared (and the first error in the text is
the one reported). All passes share a :class:`~grammar.check.context.Context`.

1. Declarations (``declarations``): ``CREATE SCHEMA`` declares an input stream (field
   types, FROM paths and FORMAT by their syntax, TIMESTAMP); ``CREATE VARIABLE`` a
   constant (its ``--set`` value, else its default).
2. Each rule (``rules``), in these steps:
   a. stage (``stages``): the latest stage of the streams it reads;
   b. name: ``@Name`` or ``rule<n>``, unique;
   c. kind: its FROM clause decides, and the kind's module checks it: ``single_stream``
      (derived and window rules, with ``windows``), ``joins``, ``event_patterns``
      (PATTERN), ``row_patterns`` (MATCH_RECOGNIZE). Each builds the scopes of its
      clauses (``scope``), resolves and types their expressions (``expressions``) and
      then the SELECT list (``select``);
   d. key (``stages``): a stateful rule claims its stage's partition key;
   e. target (``stages``): INSERT INTO declares its stream, or checks the columns against
      it, in this stage (a stateless rule) or the next (a stateful one);
   f. output: ``OUTPUT ... EVERY`` of a stateful rule.
3. After the last statement: every ``--set`` names a declared variable; the IR is
   assembled, stage by stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grammar import ast, ir
from grammar.check.context import Context
from grammar.check.declarations import declare_schema, declare_variable
from grammar.check.rules import check_rule
from grammar.errors import RuleError, did_you_mean

__all__ = ["compile_module"]


def compile_module(
    module: ast.Module, overrides: Mapping[str, str] | None = None,
    state_ttl_us: int | None = None, origins: Sequence[ast.Module] | None = None,
) -> ir.CompiledModule:
    """Check a parsed rule file; ``overrides`` are ``--set name=value`` strings.

    ``origins``: for a rule set composed of several files (``grammar.rule_set``), the file
    each statement came from, so that an error names that file, line and column.

    ``state_ttl_us`` bounds the state that no rule bounds itself (``#keepall`` windows,
    patterns without WITHIN) to that much event time per key; see
    docs/language.md#state-time-to-live. Windows and patterns with a bound of their own
    are left as written.
    """
    if state_ttl_us is not None and state_ttl_us <= 0:
        raise ValueError(f"the state time-to-live must be positive, got {state_ttl_us} µs")
    ctx = Context(module, dict(overrides or {}), state_ttl_us)
    where = module
    try:
        rule_index = 0
        for i, stmt in enumerate(module.statements):
            where = origins[i] if origins is not None else module
            if isinstance(stmt, ast.CreateSchema):
                declare_schema(ctx, stmt)
            elif isinstance(stmt, ast.CreateVariable):
                declare_variable(ctx, stmt)
            else:
                rule_index += 1
                check_rule(ctx, stmt, rule_index)
        where = module
        return _assemble(ctx, ir.RuleSource(module.source_name, module.source,
                                            tuple(sorted(ctx.overrides.items())),
                                            state_ttl_us))
    except RuleError as err:
        raise err.located(where.source_name, where.source) from None


def _assemble(ctx: Context, origin: ir.RuleSource) -> ir.CompiledModule:
    """The IR of a module whose statements all checked."""
    unknown = sorted(set(ctx.overrides) - set(ctx.variables))
    if unknown:
        hint = did_you_mean(unknown[0], ctx.variables)
        raise RuleError(f"--set names unknown variable '{unknown[0]}'", hint=hint)
    first = ctx.stages[0]
    later = [ctx.stages[i] for i in sorted(ctx.stages) if i > 0]
    return ir.CompiledModule(
        source_name=ctx.module.source_name,
        streams=dict(ctx.streams),
        input_streams=tuple(ctx.input_streams),
        variables=dict(ctx.variables),
        derived=tuple(first.derived),
        stateful=tuple(first.stateful),
        key=first.key,
        outputs=tuple(ctx.outputs),
        stages=tuple(ir.Stage(s.key, tuple(s.derived), tuple(s.stateful)) for s in later),
        origin=origin,
    )
