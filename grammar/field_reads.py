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

The local runner reads a whole module the same way (:func:`reading_module`): an input
field that no rule of any stage reads is checked by the reader (its value can still
make a record a dead letter) but never made into a column, so no table, gather or
chunk of the engines carries it (the flights job: ``origin`` and ``dest``).
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


def module_fields_read(module: ir.CompiledModule) -> frozenset[str]:
    """The names of the fields that some rule of ``module`` (of any stage, stateless or
    stateful) reads anywhere in its IR, and every partition key: a name read from one
    stream counts for all (a superset, never missing a field)."""
    found: set[str] = set()
    rules = [*module.derived, *module.stateful,
             *(r for stage in module.stages for r in (*stage.derived, *stage.stateful))]
    _walk(rules, found)
    keys = [module.key, *(stage.key for stage in module.stages),
            *(getattr(r, "key", None) for r in rules)]
    found.update(k for k in keys if k)
    return frozenset(found)


def reading_module(module: ir.CompiledModule) -> ir.CompiledModule:
    """``module`` with each input stream's fields cut to those some rule reads (and its
    timestamp): what the engines are given when the reader leaves the others out. The
    input streams keep their names, order of fields and sources; a stream whose every
    field is read is the same ``StreamDef``."""
    read = module_fields_read(module)
    streams = dict(module.streams)
    for name in module.input_streams:
        stream = streams[name]
        kept = tuple((f, t) for f, t in stream.fields if f in read or f == stream.timestamp)
        if kept != stream.fields:
            streams[name] = dataclasses.replace(stream, fields=kept)
    return dataclasses.replace(module, streams=streams)


def unread_fields(module: ir.CompiledModule, reading: ir.CompiledModule,
                  stream: str) -> frozenset[str]:
    """The fields of input ``stream`` that ``reading`` (:func:`reading_module`) left out."""
    kept = {name for name, _ in reading.streams[stream].fields}
    return frozenset(name for name, _ in module.streams[stream].fields if name not in kept)
