"""``cep check FILE``: compile a rule file and describe what it declares, or say where
it is wrong."""

from __future__ import annotations

import argparse

from cep.cli.options import add_set_option, add_state_options, overrides
from grammar import ir
from grammar.compile import compile_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .epl rule file")
    add_set_option(parser, "override a variable (repeatable)")
    add_state_options(parser)
    parser.set_defaults(handler=check)


def check(args: argparse.Namespace) -> int:
    module = compile_file(args.file, overrides(args.set), state_ttl_us=args.state_ttl)
    print(describe(module))
    return 0


def describe(module: ir.CompiledModule) -> str:
    """A human summary of a compiled module: streams, key, rules."""
    lines = [f"{module.source_name}: ok"]
    lines.append(f"key: {module.key or '(none: one global group)'}")
    lines.append("streams:")
    for stream in module.streams.values():
        kind = "derived" if stream.derived else "input"
        fields = ", ".join(f"{n} {t}" for n, t in stream.fields)
        ts = f" TIMESTAMP {stream.timestamp}" if stream.timestamp else ""
        if stream.lateness_us is not None:
            ts += f" LATENESS {stream.lateness_us / 1e6:g} sec"
        lines.append(f"  {stream.name} ({kind}): {fields}{ts}")
    if module.variables:
        lines.append("variables:")
        for var in module.variables.values():
            lines.append(f"  {var.type} {var.name} = {var.value!r}")
    lines.append("rules:")
    for rule in module.derived:
        target = f" -> INSERT INTO {rule.target}" if rule.target else " -> output"
        lines.append(f"  {rule.name}: stateless on {rule.stream}{target}")
    for rule in module.stateful:
        lines.append(f"  {rule.name}: {_rule_kind(rule)}, key {rule.key or '-'}")
    for number, stage in enumerate(module.stages, start=1):
        for rule in stage.stateful:
            lines.append(f"  {rule.name}: {_rule_kind(rule)}, key {rule.key or '-'} "
                         f"(stage {number}: reads complex events)")
    if module.stages:
        lines.append(f"spark: {_chain_on_spark(module)}")
    return "\n".join(lines)


def _chain_on_spark(module: ir.CompiledModule) -> str:
    """Whether the Spark runner takes this INSERT INTO chain, in one line (its check is
    loaded only for a module that has a chain)."""
    from cep.spark.chain_stages import ChainError, check_chain

    try:
        check_chain(module)
    except ChainError as err:
        return f"refused: {err}"
    return (f"{len(module.stages) + 1} stages, each later stage one micro-batch behind the "
            "one before it (its keys by key grouping)")


def _rule_kind(rule: ir.StatefulRule) -> str:
    if isinstance(rule, ir.WindowRule):
        return f"window #{rule.window.kind}({rule.window.size}) on {rule.stream}"
    if isinstance(rule, ir.JoinRule):
        return (f"#lastevent join of {rule.trigger_stream} with "
                f"#{rule.window.kind}({rule.window.size}) on {rule.window_stream}")
    within = f" within {rule.within_us / 1e6:g}s" if rule.within_us else ""
    return f"pattern over {', '.join(rule.streams)}{within}"
