"""``cep check FILE``: compile a rule file and describe what it declares in its author's
terms (``grammar.describe``), as text or, with ``--json``, as data; or say where it is
wrong."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cep.cli.options import add_set_option, add_state_options, add_udf_option, overrides
from cep.run_config import LATE_POLICIES
from grammar import ir
from grammar.compile import compile_file
from grammar.describe import describe_module

_LATE = {"process": "processed as they come", "drop": "dropped to the dead letters"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .epl rule file")
    add_set_option(parser, "override a variable (repeatable)")
    add_state_options(parser)
    add_udf_option(parser)
    parser.add_argument("--late", choices=LATE_POLICIES, default="process",
                        help="the late policy to describe, as cep run --late would apply "
                        "it (default process)")
    parser.add_argument("--json", action="store_true",
                        help="print the description as one JSON document")
    parser.set_defaults(handler=check)


def check(args: argparse.Namespace) -> int:
    if args.udf:  # first: the checker must know the functions' signatures
        from cep.engine.udf.files import load_udf_files  # numpy: only when asked

        load_udf_files(args.udf)
    module = compile_file(args.file, overrides(args.set), state_ttl_us=args.state_ttl)
    data = describe_data(module, args.late)
    print(json.dumps(data, indent=2, default=str) if args.json else describe_text(data))
    return 0


def describe_data(module: ir.CompiledModule, late: str = "process") -> dict[str, Any]:
    """The module's description (``grammar.describe``) and, for an INSERT INTO chain,
    whether the Spark runner takes it."""
    data = describe_module(module, late)
    data["spark"] = _chain_on_spark(module) if module.stages else None
    return data


def describe(module: ir.CompiledModule, late: str = "process") -> str:
    """A human summary of a compiled module: streams, key, event time, rules."""
    return describe_text(describe_data(module, late))


def describe_text(data: dict[str, Any]) -> str:
    """The description laid out as ``cep check`` prints it."""
    lines = [f"{data['file']}: ok", f"key: {_keys(data['stage_keys'])}", "streams:"]
    for stream in data["streams"]:
        kind = "derived" if stream["derived"] else "input"
        fields = ", ".join(f"{f['name']} {f['type']}" for f in stream["fields"])
        ts = f" TIMESTAMP {stream['timestamp']}" if stream["timestamp"] else ""
        if stream["lateness"] is not None:
            ts += f" LATENESS {stream['lateness']['text']}"
        lines.append(f"  {stream['name']} ({kind}): {fields}{ts}")
    if data["variables"]:
        lines.append("variables:")
        lines += [f"  {v['type']} {v['name']} = {v['value']!r}" for v in data["variables"]]
    lines += _event_time(data["event_time"])
    lines.append("rules:")
    for rule in data["rules"]:
        lines.append(f"  {rule['name']}: {_headline(rule)}")
        if "output" in rule:
            lines.append(f"    output: {rule['output']['text']}")
        lines += [f"    timer: {timer}" for timer in rule["timers"]]
    if data["spark"] is not None:
        lines.append(f"spark: {data['spark']}")
    return "\n".join(lines)


def _keys(stage_keys: list[str | None]) -> str:
    """The partition key, and each later stage's of an INSERT INTO chain."""
    text = stage_keys[0] or "(none: one global group)"
    return text + "".join(f"; stage {n}: {key or '(none)'}"
                          for n, key in enumerate(stage_keys[1:], start=1))


def _event_time(clock: dict[str, Any]) -> list[str]:
    """The watermark and what becomes of a late event, in two lines."""
    if not clock["streams"]:
        return ["event time: none (no input stream has a TIMESTAMP)"]
    if clock["lateness_from"]:
        watermark = (f"the largest timestamp so far - {clock['lateness']['text']} "
                     f"(LATENESS of {', '.join(clock['lateness_from'])})")
    else:
        watermark = "the largest timestamp so far (no LATENESS declared)"
    return [f"event time: watermark = {watermark}",
            f"late events: {_LATE[clock['late']]} (--late {clock['late']})"]


def _headline(rule: dict[str, Any]) -> str:
    """What the rule is, its key, stage and where its rows go, in one line."""
    kind = rule["kind"]
    streams = ", ".join(rule["streams"])
    if kind == "stateless":
        what = f"stateless on {streams}"
    elif kind == "window":
        [window] = rule["windows"]
        what = f"window {window['text']} on {window['stream']}"
    elif kind == "join":
        [window] = rule["windows"]
        what = (f"#lastevent join of {rule['trigger']['stream']} with {window['text']} on "
                f"{window['stream']}")
    elif kind == "pattern":
        within = f" WITHIN {rule['within']['text']}" if "within" in rule else ""
        what = f"pattern [{rule['pattern']}{within}]"
    else:
        within = f" WITHIN {rule['within']['text']}" if "within" in rule else ""
        subsets = "".join(f" SUBSET {name} = ({', '.join(names)})"
                          for name, names in rule["subsets"].items())
        rows = f", {rule['rows']}" if rule["rows"] != "ONE ROW PER MATCH" else ""
        what = (f"MATCH_RECOGNIZE PATTERN ({rule['pattern']}){subsets}{within} on "
                f"{streams}{rows}, {rule['skip']}")
    if kind != "stateless":
        what += f", key {rule['key']}" if rule["key"] else ", no key (one global group)"
    if rule["stage"]:
        what += f", stage {rule['stage']} (reads complex events)"
    target = f"INSERT INTO {rule['into']}" if rule["into"] else "output"
    return f"{what} -> {target}"


def _chain_on_spark(module: ir.CompiledModule) -> str:
    """Whether the Spark runner takes this INSERT INTO chain, in one line (its check is
    loaded only for a module that has a chain, and loads no data library)."""
    from cep.spark.chains.check import ChainError, check_chain

    try:
        check_chain(module)
    except ChainError as err:
        return f"refused: {err}"
    return (f"{len(module.stages) + 1} stages, each later stage one micro-batch behind the "
            "one before it (its keys by key grouping)")
