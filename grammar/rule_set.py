"""A running job's rule set as changes make it: deploy a file, undeploy rules by name.

Version 0 is the rule file the job started with (``ir.RuleSource``); change n (a
``Change``, numbered from 1) makes version n. A version is composed at the level of
statements, never of text:

* a deployed ``CREATE SCHEMA`` must repeat a running schema unchanged (a rule file is
  written that way); a new or changed schema is refused, since the job's inputs and how
  they are read are fixed when it starts;
* a deployed ``CREATE VARIABLE`` replaces the running one of its name (its value wins over
  the start's ``--set``), or is added;
* a deployed rule (it needs ``@Name``) replaces the running rule of its name, in its place
  (so the order of events between rules stays), or is added after the others;
* undeploy removes rules by name.

The composed statements are checked as one module, each statement's errors located in the
file it came from (``file:line:column``). A version is then compared with the one before
(``check_change``): a change that the running job cannot take (another number of INSERT
INTO stages, another partition key for a stage whose keys are placed) is refused with
one line. Which rules keep their state across a change is ``carried_rules``'s: a rule
whose IR is unchanged, or changed only in its SELECT list and the constants of its HAVING
(a threshold, written or through a variable): none of those parts decides what its state
holds, so long as a window rule's new form reads no field its window did not keep (a
window keeps only the fields its rule reads: ``grammar.field_reads``).

The unnamed rules of the start file are named ``rule<n>`` by their place in it, once,
so that removing a rule never renames the rules after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from grammar import ast, ir
from grammar.errors import Pos, RuleError
from grammar.field_reads import fields_read


class ChangeRefused(Exception):
    """A change the running job cannot take; the message says why in one line."""


@dataclass(frozen=True)
class Change:
    """One entry of a job's change log: ``deploy`` a file's text, or ``undeploy`` rules."""

    number: int  # the rule set version it makes, from 1
    kind: str  # "deploy" or "undeploy"
    source_name: str = ""
    text: str = ""
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Version:
    """A rule set version: its module, or why its change was refused (then its module is
    the version before's)."""

    number: int
    module: ir.CompiledModule
    refused: str | None = None


Placed = list[tuple[ast.Statement, ast.Module]]  # a statement and the file it came from


def compose(base: ir.RuleSource, changes: Sequence[Change]) -> ir.CompiledModule:
    """The module of the start file with ``changes`` applied in order; a
    :class:`RuleError` located in the file it is about, or :class:`ChangeRefused`.

    The parser and checker are imported here, not with the module: Spark's planning
    processes (the input source's creation, its streaming runner, the read planner)
    import this module for the running rules' names and order, and only a job whose
    rules changed composes a version (Lark and the checker: about 0.08 s a process)."""
    from grammar.check import compile_module
    from grammar.parser import parse

    start = parse(base.text, base.source_name)
    placed: Placed = [(_named(stmt, i), start) for i, stmt in _numbered(start.statements)]
    overrides = dict(base.overrides)
    for change in changes:
        if change.kind == "deploy":
            placed = _deploy(placed, overrides, parse(change.text, change.source_name))
        elif change.kind == "undeploy":
            placed = _undeploy(placed, change.names)
        else:
            raise ChangeRefused(f"change {change.number} is of unknown kind {change.kind!r}")
    module = ast.Module(tuple(s for s, _ in placed), base.source_name, base.text)
    return compile_module(module, overrides, base.state_ttl_us,
                          origins=[origin for _, origin in placed])


def versions(start: ir.CompiledModule, changes: Sequence[Change]) -> list[Version]:
    """Every version from 0: each change applied onto the versions it follows, a change
    that cannot apply refused (the rule set stays as it was). Deterministic in the
    changes' texts, so every process that composes them finds the same versions."""
    assert start.origin is not None, "a module compiled from text knows its origin"
    out = [Version(0, start)]
    applied: list[Change] = []
    for change in changes:
        try:
            module = compose(start.origin, [*applied, change])
            check_change(out[-1].module, module)
        except RuleError as err:
            out.append(Version(change.number, out[-1].module, err.render().splitlines()[0]))
            continue
        except ChangeRefused as err:
            out.append(Version(change.number, out[-1].module, str(err)))
            continue
        applied.append(change)
        out.append(Version(change.number, module))
    return out


def check_change(old: ir.CompiledModule, new: ir.CompiledModule) -> None:
    """Refuse what a running job cannot change: its input streams, its number of INSERT
    INTO stages (each stage's engines are fixed when it starts) and the partition key of
    a stage whose keys are placed."""
    if new.input_streams != old.input_streams:
        raise ChangeRefused(f"the job's input streams are {', '.join(old.input_streams)}; "
                            f"the change would read {', '.join(new.input_streams)}")
    before, after = old.stage_modules(), new.stage_modules()
    if len(before) != len(after):
        raise ChangeRefused(f"the change makes {len(after)} INSERT INTO stages of the "
                            f"running job's {len(before)}: stages are fixed when a job starts")
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if a.key is not None and b.key is not None and a.key != b.key:
            rule = b.stateful[0].name if b.stateful else "?"
            raise ChangeRefused(
                f"rule '{rule}' partitions stage {i} by '{b.key}', but the running job "
                f"places that stage's keys by '{a.key}'")


def carried_rules(old: ir.CompiledModule, new: ir.CompiledModule) -> dict[str, str]:
    """How each stateful rule of ``new`` (one stage's module) starts: ``kept`` (same
    IR), ``compatible`` (only its SELECT list or HAVING's constants changed: it keeps
    its state), ``replaced`` (removal plus addition) or ``added``."""
    running = {rule.name: rule for rule in old.stateful}
    return {rule.name: _started(running.get(rule.name), rule) for rule in new.stateful}


def rule_changes(old: ir.CompiledModule, new: ir.CompiledModule) -> dict[str, str]:
    """What a change did to every rule, stateless and stateful, of every stage: as
    :func:`carried_rules` says (a rule that moved to another stage is ``replaced``), and
    ``removed`` for the rules that are gone."""
    before = _rules_by_name(old)
    after = _rules_by_name(new)
    out = {}
    for name, (stage, rule) in after.items():
        was = before.get(name)
        out[name] = _started(was[1] if was is not None and was[0] == stage else None, rule)
        if was is not None and was[0] != stage:
            out[name] = "replaced"
    out.update({name: "removed" for name in before if name not in after})
    return out


def _rules_by_name(module: ir.CompiledModule) -> dict[str, tuple[int, object]]:
    return {rule.name: (i, rule) for i, stage in enumerate(module.stage_modules())
            for rule in (*stage.derived, *stage.stateful)}


def _started(was: object, rule: object) -> str:
    if was is None:
        return "added"
    if was == rule:
        return "kept"
    if (type(was) is type(rule) and not isinstance(rule, ir.DerivedRule)
            and _blanked(was) == _blanked(rule)  # type: ignore[arg-type]
            and _keeps_what_it_reads(was, rule)):
        return "compatible"
    return "replaced"


def output_order(modules: Sequence[ir.CompiledModule]) -> dict[str, int]:
    """The place of every rule that ever emitted, over versions: the start's rules in
    their order, then each version's new rules in theirs (a removed rule keeps its
    place). The reference order of events between rules, in every runner."""
    order: dict[str, int] = {}
    for module in modules:
        for name in module.outputs:
            order.setdefault(name, len(order))
    return order


def rule_names(module: ir.CompiledModule) -> list[str]:
    """Every rule of a module, stateless and stateful, of every stage, in file order of
    stages."""
    rules = [*module.derived, *module.stateful,
             *(r for stage in module.stages for r in (*stage.derived, *stage.stateful))]
    return [rule.name for rule in rules]


# ---------------------------------------------------------------- composing statements

def _numbered(statements: Sequence[ast.Statement]) -> list[tuple[int, ast.Statement]]:
    """Each statement with its rule number (the checker's ``rule<n>``; 0 for others)."""
    out, n = [], 0
    for stmt in statements:
        if isinstance(stmt, ast.SelectStatement):
            n += 1
            out.append((n, stmt))
        else:
            out.append((0, stmt))
    return out


def _named(stmt: ast.Statement, index: int) -> ast.Statement:
    """An unnamed rule of the start file with its name ``rule<index>`` written out."""
    if not isinstance(stmt, ast.SelectStatement) or _rule_name(stmt) is not None:
        return stmt
    name = ast.Annotation("Name", f"rule{index}", stmt.pos)
    return dataclasses.replace(stmt, annotations=(*stmt.annotations, name))


def _rule_name(stmt: ast.SelectStatement) -> str | None:
    names = [a.value for a in stmt.annotations if a.name.lower() == "name"]
    return str(names[-1]) if names else None


def _deploy(placed: Placed, overrides: dict[str, str], file: ast.Module) -> Placed:
    out = list(placed)
    for stmt in file.statements:
        try:
            if isinstance(stmt, ast.CreateSchema):
                _repeat_schema(out, stmt)
            elif isinstance(stmt, ast.CreateVariable):
                overrides.pop(stmt.name, None)  # the deployed value wins over --set
                at = _find(out, ast.CreateVariable, stmt.name)
                if at is None:
                    out.insert(0, (stmt, file))
                else:
                    out[at] = (stmt, file)
            else:
                name = _rule_name(stmt)
                if name is None:
                    raise RuleError("a deployed rule needs a name, @Name('…'): the name is "
                                    "what replaces it or undeploys it later", stmt.pos)
                at = _find(out, ast.SelectStatement, name)
                if at is None:
                    out.append((stmt, file))
                else:
                    out[at] = (stmt, file)
        except RuleError as err:
            raise err.located(file.source_name, file.source) from None
    return out


def _repeat_schema(placed: Placed, stmt: ast.CreateSchema) -> None:
    at = _find(placed, ast.CreateSchema, stmt.name)
    if at is None:
        raise RuleError(f"stream '{stmt.name}' is not one of the running job's: its input "
                        "streams are fixed when it starts", stmt.pos)
    if _plain(placed[at][0]) != _plain(stmt):
        raise RuleError(f"schema '{stmt.name}' differs from the running job's: a running "
                        "job's schemas cannot change (repeat it unchanged, or leave it out)",
                        stmt.pos)


def _undeploy(placed: Placed, names: Sequence[str]) -> Placed:
    out = list(placed)
    for name in names:
        at = _find(out, ast.SelectStatement, name)
        if at is None:
            running = [_rule_name(s) for s, _ in out if isinstance(s, ast.SelectStatement)]
            raise ChangeRefused(f"no running rule is named '{name}' (running: "
                                f"{', '.join(n for n in running if n)})")
        del out[at]
    return out


def _find(placed: Placed, kind: type, name: str) -> int | None:
    for i, (stmt, _) in enumerate(placed):
        if not isinstance(stmt, kind):
            continue
        here = _rule_name(stmt) if isinstance(stmt, ast.SelectStatement) else stmt.name
        if here == name:
            return i
    return None


def _plain(node: object) -> object:
    """A node as comparable data without its positions in the text."""
    if isinstance(node, Pos):
        return None
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return (type(node).__name__,
                *(_plain(getattr(node, f.name)) for f in dataclasses.fields(node)))
    if isinstance(node, tuple | list):
        return tuple(_plain(item) for item in node)
    return node


# ---------------------------------------------------------------- state compatibility

def _keeps_what_it_reads(was: object, rule: object) -> bool:
    """A window keeps only the fields its rule reads (``grammar.field_reads``): a new
    form of the rule that reads a field the old one did not keep cannot take its state."""
    if not isinstance(rule, ir.WindowRule) or not isinstance(was, ir.WindowRule):
        return True
    return fields_read(rule) <= fields_read(was)


def _blanked(rule: ir.StatefulRule) -> ir.StatefulRule:
    """The rule with the parts that decide no state blanked out: its SELECT list (unless
    OUTPUT rate limiting holds rows made of it) and the constants of its HAVING."""
    changes: dict[str, object] = {}
    if rule.output is None:
        changes["columns"] = ()
    having = getattr(rule, "having", None)
    if having is not None:
        changes["having"] = _without_constants(having)
    return dataclasses.replace(rule, **changes)  # type: ignore[arg-type]


def _without_constants(node: object) -> object:
    if isinstance(node, ir.Const):
        return ir.Const(None, node.type)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.replace(node, **{  # type: ignore[arg-type]
            f.name: _without_constants(getattr(node, f.name))
            for f in dataclasses.fields(node) if f.init})
    if isinstance(node, tuple):
        return tuple(_without_constants(item) for item in node)
    return node
