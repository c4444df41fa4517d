"""The row pattern cases cep runs from Trino's tests
(tests/semantics/test_trino_row_pattern_matching.py and
tests/semantics/test_trino_row_pattern_aggregations.py), for RUNNING / FINAL and NEXT in
MEASURES (tests/semantics/test_row_pattern_semantics.py) and for NEXT in DEFINE
(tests/semantics/test_next_in_define.py), gathered into rule files and one input so that
a few runs on Spark cover every case.

The cases are not copied: each test of those modules (with each of its parameters) is
called with a ``run_epl`` that runs the reference evaluator and records the rule text and
events it was given (those of the streams in STREAMS, without PARTITION BY or partitioned by
``part``), so a case added there is covered here too. :func:`combined` then gives each
case its own rule, reading only its own events (a filter on the case number ``cid``); a
case without PARTITION BY is partitioned by ``part``, and its rows are given twice,
under two keys of its own (``c<k>a``, ``c<k>b``), so that many keys move between
engines. Partitions are independent, so each rule gives its case's rows once per key.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from grammar.compile import compile_text
from support.spark_runs import ROOT

#: the test modules whose cases are gathered (each rule file a schema line, then one rule
#: reading that stream, one of :data:`STREAMS`; without PARTITION BY, or partitioned by
#: ``part``)
TEST_FILES = (ROOT / "tests" / "semantics" / "test_trino_row_pattern_matching.py",
              ROOT / "tests" / "semantics" / "test_trino_row_pattern_aggregations.py",
              ROOT / "tests" / "semantics" / "test_row_pattern_semantics.py",
              ROOT / "tests" / "semantics" / "test_next_in_define.py")
#: the streams whose cases are gathered (schema lines ``CREATE SCHEMA X (...) TIMESTAMP
#: ts;``): T and P, and L, whose field A is also a pattern variable's name
STREAMS = ("T", "P", "L")
#: the keys a case without PARTITION BY is given its rows under
REPLICAS = ("a", "b")
#: the fields every stream of the combined file has besides its cases' own: the key
#: each case's rows are given under, and the case's number
ADDED_FIELDS = ("part string", "cid int")


@dataclass(frozen=True)
class Case:
    """One rule text (its schema line first) and the events the Trino test gave it, with
    the reference evaluator's output for them."""

    name: str
    text: str
    events: tuple[dict, ...]
    output: tuple[dict, ...]


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"cases_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _calls(test: Callable) -> list[tuple[str, dict]]:
    """The test's parameter sets (pytest's ``parametrize`` marks), each with its id."""
    marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
    sets: list[tuple[str, dict]] = [(test.__name__, {})]
    for mark in marks:
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(
            mark.args[0], str) else list(mark.args[0])
        sets = [(f"{name}[{k}]", {**kwargs, **dict(zip(names, values if len(names) > 1
                                                         else (values,), strict=True))})
                for (name, kwargs), (k, values) in itertools.product(
                    sets, enumerate(mark.args[1]))]
    return sets


def trino_cases() -> list[Case]:
    """Every (rule text, events) pair the Trino tests run on the reference evaluator,
    once each (the batch-size reruns left out), in the tests' order."""
    cases: dict[tuple[str, str], Case] = {}
    with tempfile.TemporaryDirectory() as tmp:
        counter = itertools.count()

        def recorder(name: str) -> Callable:
            def run_epl(text: str, events: list[dict], batch_size: int | None = None
                        ) -> list[dict]:
                key = (text, json.dumps(events))
                if key in cases:  # a batch-size rerun: the semantics tests check those
                    return list(cases[key].output)
                module_ir = compile_text(text, "<trino>")
                path = Path(tmp) / f"events{next(counter)}.jsonl"
                path.write_text("".join(json.dumps(e) + "\n" for e in events))
                loaded = load_inputs(module_ir, [str(path)], None)
                out = output_records(run_reference(module_ir, loaded.tables, batch_size))
                # as tests/conftest.py's run_epl: seq as the index of the event it was
                # made at, or "end"
                starts = itertools.accumulate((len(json.dumps(e)) + 1 for e in events),
                                              initial=0)
                index: dict[int, int | str] = {o: i for i, o in enumerate(starts)}
                index[loaded.end_seq] = "end"
                out = [{**r, "seq": index[r["seq"]]} for r in out]
                if events and text.split()[2] in STREAMS and (
                        "PARTITION BY" not in text or "PARTITION BY part " in text):
                    cases[key] = Case(f"{name}#{len(cases)}", text, tuple(events),
                                      tuple(out))
                return out
            return run_epl

        for path in TEST_FILES:
            for name, test in inspect.getmembers(_module(path), inspect.isfunction):
                if not name.startswith("test_") or "run_epl" not in inspect.signature(
                        test).parameters:
                    continue
                for call, kwargs in _calls(test):
                    test(run_epl=recorder(call), **kwargs)
    return list(cases.values())


def combined(cases: list[Case]) -> tuple[str, list[dict]]:
    """One rule file with a rule per case (case k reads the events whose ``cid`` is k)
    and the events of every case, in time order (ts, then case, then key). Each stream
    has the fields its cases' schemas declare, and :data:`ADDED_FIELDS`."""
    rules, events = [], []
    fields: dict[str, dict[str, str]] = {}
    for k, case in enumerate(cases):
        schema, rule = case.text.split("\n", 1)
        stream = schema.split()[2]
        declared = schema[schema.index("(") + 1:schema.index(")")].split(",")
        own = fields.setdefault(stream, {})
        for decl in [*declared, *ADDED_FIELDS]:
            name, kind = decl.split()
            assert own.setdefault(name, kind) == kind, (case.name, name)
        partitioned = "PARTITION BY" in rule
        head = f"FROM {stream} MATCH_RECOGNIZE ("
        assert rule.count(head) == 1, case.name
        rule = rule.replace(head, f"FROM {stream}(cid = {k}) MATCH_RECOGNIZE ("
                            + ("" if partitioned else " PARTITION BY part"))
        rules.append(f"@name('case{k}') {rule}\n")
        for event in case.events:
            for part in [event["part"]] if partitioned else [f"c{k}{r}" for r in REPLICAS]:
                events.append({**event, "part": part, "cid": k, "stream": stream})
    events.sort(key=lambda e: (e["ts"], e["cid"], e["part"]))
    schemas = [f"CREATE SCHEMA {stream} ({', '.join(f'{n} {t}' for n, t in own.items())}) "
               "TIMESTAMP ts;\n" for stream, own in fields.items()]
    return "".join(schemas + rules), events
