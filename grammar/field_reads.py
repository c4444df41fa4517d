"""Which fields of its stream a window rule reads: the fields its window keeps.

A window's retained rows are gathered and merged at every batch, and a string held as a
Python object costs a reference per row and per gather, so a window keeps only the fields
its rule reads (``cep.engine.windows.rule``): the flights job's rule reads two of its
stream's five fields. A running job's rule that changes only its SELECT list or HAVING
keeps its state (``grammar.rule_set.carried_rules``) only while its new form reads no
field the old one did not keep.

Every ``FieldRef`` anywhere in the rule's IR counts (filter, WHERE, HAVING, the SELECT
list, window functions, ``#unique`` expressions, OUTPUT), found by walking the rule's
dataclasses, so a part added to the IR later is counted without a change here; and the
partition key and the stream's timestamp, which the engine reads itself.
"""

from __future__ import annotations

import dataclasses

from grammar import ir


def window_fields(rule: ir.WindowRule, stream: ir.StreamDef) -> frozenset[str]:
    """The fields of ``stream`` that ``rule``'s window keeps: those it reads, its key
    and the stream's timestamp."""
    return fields_read(rule) | ({stream.timestamp} if stream.timestamp else set())


def fields_read(rule: ir.WindowRule) -> frozenset[str]:
    """The fields ``rule`` reads anywhere in its IR, and its partition key."""
    found: set[str] = set()
    _walk(rule, found)
    if rule.key:
        found.add(rule.key)
    return frozenset(found)


def _walk(node: object, found: set[str]) -> None:
    if isinstance(node, ir.FieldRef):
        found.add(node.name)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            _walk(getattr(node, f.name), found)
    elif isinstance(node, tuple | list):
        for item in node:
            _walk(item, found)
