"""A compiled module described in its author's terms, as data: what ``cep check`` prints
(``cep.cli.check`` lays it out as text) and ``cep check --json`` writes.

The IR keeps durations in microseconds and sizes as plain numbers; a rule author wrote
``#time(10 min)`` and ``WITHIN 24 hours``. Every duration here is written in the
largest unit that divides it exactly, in the EPL's own unit words (``1 day``, ``10 min``,
``30 sec``, ``250 msec``), next to its microseconds for tools. Filters, DEFINE conditions
and SELECT lists are not repeated: a description says what state a rule keeps, what
makes it emit, and when time alone makes it act (its *timers*, see
docs/semantics-event-time.md#timers).
"""

from __future__ import annotations

from typing import Any

from grammar import ir

#: (microseconds, singular, plural): the units a description writes, largest first
_UNITS = (
    (86_400_000_000, "day", "days"),
    (3_600_000_000, "hour", "hours"),
    (60_000_000, "min", "min"),
    (1_000_000, "sec", "sec"),
    (1_000, "msec", "msec"),
    (1, "usec", "usec"),
)


def duration_text(us: int) -> str:
    """``us`` microseconds as the rule wrote them (``24 hours``, a
    :class:`~grammar.types.WrittenDuration`), or else in the largest unit that divides
    them exactly: ``10 min``, ``1 day``, ``90 sec``, ``0 sec``."""
    written = getattr(us, "written", None)
    if written is not None:
        return written
    if us == 0:
        return "0 sec"
    for size, one, many in _UNITS:
        if us % size == 0:
            n = us // size
            return f"{n} {one if n == 1 else many}"
    raise AssertionError("every whole number of microseconds is whole in usec")


def _duration(us: int) -> dict[str, object]:
    return {"text": duration_text(us), "us": us}


# ---------------------------------------------------------------- windows


def window_text(window: ir.WindowSpec) -> str:
    """A data window as the rule writes it, sizes in the author's units."""
    if window.kind == "keepall":
        return "#keepall"
    if window.kind == "unique":
        return f"#unique({', '.join(expr_text(e) for e in window.unique_by)})"
    size = duration_text(window.size) if window.is_time else str(window.size)
    if window.kind == "time_length_batch":
        return f"#time_length_batch({size}, {window.limit})"
    return f"#{window.kind}({size})"


def _window_timer(window: ir.WindowSpec) -> str | None:
    """What time alone does to a window (docs/semantics-event-time.md's timer table)."""
    if window.kind == "keepall" and window.ttl_us is not None:
        return f"a row is freed {duration_text(window.ttl_us)} after its time (state TTL)"
    size = duration_text(window.size)
    return {
        "time": f"a row leaves the window {size} after its time",
        "time_batch": f"each {size} bucket is emitted at its end",
        "time_length_batch": (f"a batch is emitted {size} after its first event, or at "
                              f"{window.limit} events"),
        "firsttime": f"the window closes {size} after the key's first event",
    }.get(window.kind)


def _window_data(stream: str, window: ir.WindowSpec) -> dict[str, object]:
    data: dict[str, object] = {"stream": stream, "text": window_text(window),
                               "kind": window.kind}
    if window.is_time:
        data["size_us"] = window.size
    elif window.kind not in ("keepall", "unique"):
        data["size"] = window.size
    if window.limit:
        data["limit"] = window.limit
    if window.ttl_us is not None:
        data["ttl_us"] = window.ttl_us
    return data


# ---------------------------------------------------------------- patterns

# binding strength, weakest first: a child weaker than its parent gets parentheses
_FOLLOWED_BY, _OR, _AND, _UNTIL, _UNARY, _ATOM = range(6)


def pattern_text(node: ir.PNode) -> str:
    """An event pattern in one line, in Esper's syntax: tags, streams, ``every``,
    ``->``, ``and``, ``or``, ``not``, ``[n:m] … until …`` and ``timer:interval``, each
    atom with its filter (``b=Flight((dep_delay > a.dep_delay))``), so that two rules
    that differ only in a filter read differently."""
    return _pattern(node)[0]


def _pattern(node: ir.PNode) -> tuple[str, int]:
    if isinstance(node, ir.PAtom):
        return f"{node.tag}={node.stream}{_atom_filter(node)}", _ATOM
    if isinstance(node, ir.PTimer):
        return f"timer:interval({duration_text(node.us)})", _ATOM
    if isinstance(node, ir.PFollowedBy | ir.PAnd | ir.POr):
        word, strength = {ir.PFollowedBy: ("->", _FOLLOWED_BY), ir.PAnd: ("and", _AND),
                          ir.POr: ("or", _OR)}[type(node)]
        return (f"{_operand(node.left, strength)} {word} "
                f"{_operand(node.right, strength)}"), strength
    if isinstance(node, ir.PEvery | ir.PNot):
        word = "every" if isinstance(node, ir.PEvery) else "not"
        return f"{word} {_operand(node.operand, _UNARY)}", _UNARY
    return _repeat(node)


def _atom_filter(atom: ir.PAtom) -> str:
    """``(filter)`` of an atom, its local and bound parts joined by ``and`` (the checker
    split one filter in two), or nothing for an atom without one."""
    filters = [f for f in (atom.local_filter, atom.bound_filter) if f is not None]
    if not filters:
        return ""
    if len(filters) == 1 and isinstance(filters[0], ir.Op) and filters[0].op in _INFIX:
        return expr_text(filters[0])  # already in parentheses
    return f"({' and '.join(expr_text(f) for f in filters)})"


def _repeat(node: ir.PRepeat) -> tuple[str, int]:
    if node.high == node.count:
        bound = f"[{node.count}] "
    elif node.count == 0 and node.high is None:
        bound = ""  # `x until u`: any number of x
    else:
        bound = f"[{node.count or ''}:{'' if node.high is None else node.high}] "
    body = f"{bound}{_operand(node.operand, _UNARY)}"
    if node.until is None:
        return body, _UNARY
    return f"{body} until {_operand(node.until, _UNARY)}", _UNTIL


def _operand(node: ir.PNode, strength: int) -> str:
    """An operand, in parentheses where it binds more weakly than its operator, and
    where it is another binary operator (``a -> (b and c)``: Esper's precedence would
    do without, a reader would not)."""
    text, own = _pattern(node)
    binary = _FOLLOWED_BY <= own <= _AND
    return f"({text})" if own < strength or (binary and own != strength) else text


def _pattern_timers(node: ir.PNode) -> list[str]:
    """The ``timer:interval`` atoms of a pattern, in pattern order."""
    if isinstance(node, ir.PTimer):
        return [f"timer:interval({duration_text(node.us)}) completes {duration_text(node.us)}"
                " after its sub-pattern starts"]
    if isinstance(node, ir.PFollowedBy | ir.PAnd | ir.POr):
        return _pattern_timers(node.left) + _pattern_timers(node.right)
    if isinstance(node, ir.PEvery | ir.PNot):
        return _pattern_timers(node.operand)
    if isinstance(node, ir.PRepeat):
        until = _pattern_timers(node.until) if node.until is not None else []
        return _pattern_timers(node.operand) + until
    return []


def row_pattern_text(node: ir.RPattern) -> str:
    """A MATCH_RECOGNIZE pattern in one line: its variables and quantifiers."""
    if node.kind == "var":
        return str(node.name)
    if node.kind in ("start", "end"):
        return "^" if node.kind == "start" else "$"
    if node.kind == "exclude":
        return f"{{- {row_pattern_text(node.items[0])} -}}"
    if node.kind == "seq":
        if not node.items:
            return "()"  # the empty pattern
        return " ".join(_row_item(i, "seq") for i in node.items)
    if node.kind == "alt":
        return " | ".join(_row_item(i, "alt") for i in node.items)
    return f"{_row_item(node.items[0], 'repeat')}{_quantifier(node)}"


def _row_item(node: ir.RPattern, parent: str) -> str:
    text = row_pattern_text(node)
    weaker = {"seq": ("alt",), "alt": (), "repeat": ("seq", "alt", "repeat")}[parent]
    return f"({text})" if node.kind in weaker else text


def _quantifier(node: ir.RPattern) -> str:
    low, high = node.low, node.high
    text = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((low, high))
    if text is None:
        if high is None:
            text = f"{{{low},}}"
        elif low == high:
            text = f"{{{low}}}"
        else:
            text = f"{{{low or ''},{high}}}"
    return text if node.greedy else f"{text}?"


# ---------------------------------------------------------------- expressions

_INFIX = frozenset({"and", "or", "=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%",
                    "||"})


def expr_text(expr: ir.TExpr) -> str:
    """A checked expression written back in the rule language (variables already
    replaced by their values); for ``#unique(...)``'s arguments."""
    if isinstance(expr, ir.FieldRef):
        name = f"{expr.qualifier}.{expr.name}" if expr.qualifier else expr.name
        return name if expr.index is None else f"{expr.qualifier}[{expr.index}].{expr.name}"
    if isinstance(expr, ir.Const):
        return _const_text(expr)
    if isinstance(expr, ir.Func | ir.Coalesce):
        name = expr.name if isinstance(expr, ir.Func) else "coalesce"
        return f"{name}({', '.join(expr_text(a) for a in expr.args)})"
    if isinstance(expr, ir.Agg):
        args = "*" if expr.arg is None else expr_text(expr.arg)
        return f"{expr.name}({args}{'' if expr.by is None else ', ' + expr_text(expr.by)})"
    if isinstance(expr, ir.Prev):
        if expr.kind == "prevcount":
            return f"prevcount({expr_text(expr.arg)})"
        return f"{expr.kind}({expr.n}, {expr_text(expr.arg)})"
    if isinstance(expr, ir.Op):
        return _op_text(expr)
    return _predicate_text(expr)


def _const_text(expr: ir.Const) -> str:
    if expr.value is None:
        return "null"
    if isinstance(expr.value, bool):
        return "true" if expr.value else "false"
    if isinstance(expr.value, str):
        return "'" + expr.value.replace("'", "''") + "'"
    if expr.type == "duration" and isinstance(expr.value, int):
        return duration_text(expr.value)
    return repr(expr.value)


def _op_text(expr: ir.Op) -> str:
    parts = [expr_text(a) for a in expr.args]
    if expr.op == "neg":
        return f"-({parts[0]})"
    if expr.op == "not":
        return f"not ({parts[0]})"
    if expr.op in _INFIX:
        return f"({parts[0]} {expr.op} {parts[1]})"
    return f"{expr.op}({', '.join(parts)})"


def _predicate_text(expr: ir.TExpr) -> str:
    not_ = "not " if getattr(expr, "negated", False) else ""
    if isinstance(expr, ir.InList):
        items = ", ".join(expr_text(i) for i in expr.items)
        return f"{expr_text(expr.operand)} {not_}in ({items})"
    if isinstance(expr, ir.Between):
        return (f"{expr_text(expr.operand)} {not_}between {expr_text(expr.low)} and "
                f"{expr_text(expr.high)}")
    if isinstance(expr, ir.Like):
        pattern = _const_text(ir.Const(expr.pattern, "string"))
        return f"{expr_text(expr.operand)} {not_}like {pattern}"
    if isinstance(expr, ir.IsNull):
        return f"{expr_text(expr.operand)} is {not_}null"
    assert isinstance(expr, ir.CaseWhen)
    whens = " ".join(f"when {expr_text(c)} then {expr_text(v)}" for c, v in expr.whens)
    default = f" else {expr_text(expr.default)}" if expr.default is not None else ""
    return f"case {whens}{default} end"


# ---------------------------------------------------------------- rules


def output_text(limit: ir.OutputLimit) -> str:
    """``OUTPUT LAST EVERY 30 sec``, ``OUTPUT ALL EVERY 5 EVENTS``."""
    every = (f"{limit.events} EVENTS" if limit.period_us is None
             else duration_text(limit.period_us))
    return f"OUTPUT {limit.kind.upper()} EVERY {every}"


def _output_timer(limit: ir.OutputLimit) -> str | None:
    if limit.period_us is None:
        return None
    what = "repeats the latest rows" if limit.kind == "snapshot" else "releases its rows"
    return f"each key's {duration_text(limit.period_us)} interval {what} at its end"


def describe_rule(rule: ir.Rule, stage: int) -> dict[str, Any]:
    """One rule as data: kind, streams, window(s), pattern, output rate limiting, key,
    stage, where its rows go, and its timers."""
    data: dict[str, Any] = {"name": rule.name, "stage": stage}
    timers: list[str | None] = []  # None: a construct that sets no timer
    if isinstance(rule, ir.DerivedRule):
        data.update(kind="stateless", streams=[rule.stream], key=None)
    elif isinstance(rule, ir.WindowRule):
        data.update(kind="window", streams=[rule.stream], key=rule.key,
                    windows=[_window_data(rule.stream, rule.window)])
        timers.append(_window_timer(rule.window))
    elif isinstance(rule, ir.JoinRule):
        data.update(kind="join", streams=list(dict.fromkeys(
            (rule.trigger_stream, rule.window_stream))), key=rule.key,
            trigger={"stream": rule.trigger_stream, "alias": rule.trigger_alias},
            windows=[{**_window_data(rule.window_stream, rule.window),
                      "alias": rule.window_alias}])
        timers.append(_window_timer(rule.window))
    elif isinstance(rule, ir.PatternRule):
        data.update(kind="pattern", streams=list(rule.streams), key=rule.key,
                    pattern=pattern_text(rule.pattern))
        timers += _pattern_timers(rule.pattern)
        if rule.within_us is not None:
            data["within"] = _duration(rule.within_us)
            timers.append(f"WITHIN {duration_text(rule.within_us)} discards a partial "
                          "match that long after its first event")
        elif rule.ttl_us is not None:
            data["state_ttl"] = _duration(rule.ttl_us)
            timers.append(f"a partial match is freed {duration_text(rule.ttl_us)} after "
                          "its first event (state TTL)")
    else:
        data.update(kind="match_recognize", streams=[rule.stream], key=rule.key,
                    pattern=row_pattern_text(rule.pattern), variables=list(rule.variables),
                    skip=f"AFTER MATCH SKIP {rule.skip.upper()}"
                    + (f" {rule.skip_var}" if rule.skip_var else ""),
                    rows=("ONE ROW PER MATCH" if rule.rows == "one" else
                          "ALL ROWS PER MATCH" + {"show": "", "omit": " OMIT EMPTY MATCHES",
                                                  "unmatched": " WITH UNMATCHED ROWS"}
                          .get(rule.empty, "")),
                    subsets={name: list(names) for name, names in rule.unions})
        if rule.within_us is not None:
            data["within"] = _duration(rule.within_us)
            timers.append(f"WITHIN {duration_text(rule.within_us)} drops a start that "
                          "long after its row")
    output = getattr(rule, "output", None)
    if output is not None:
        data["output"] = {"text": output_text(output), "kind": output.kind,
                          "events": output.events, "period_us": output.period_us}
        timers.append(_output_timer(output))
    data["into"] = rule.target
    data["timers"] = [t for t in timers if t is not None]
    return data


def describe_event_time(module: ir.CompiledModule, late: str) -> dict[str, Any]:
    """The rule file's clock: which streams carry event time, its one lateness (the
    largest LATENESS, and whose), and what becomes of a late event under ``late``
    (``cep run --late``)."""
    timed = [s for s in module.input_streams if module.streams[s].timestamp is not None]
    lateness = module.lateness_us
    declaring = [s for s in module.input_streams
                 if (module.streams[s].lateness_us or 0) == lateness and lateness]
    return {"streams": {s: module.streams[s].timestamp for s in timed},
            "lateness": _duration(lateness), "lateness_from": declaring,
            "late": late if timed else None}


def describe_module(module: ir.CompiledModule, late: str = "process") -> dict[str, Any]:
    """The whole module as data: streams, variables, key(s), event time and rules in
    stage order."""
    streams = []
    for stream in module.streams.values():
        streams.append({
            "name": stream.name, "derived": stream.derived,
            "fields": [{"name": n, "type": t} for n, t in stream.fields],
            "timestamp": stream.timestamp,
            "lateness": (_duration(stream.lateness_us) if stream.lateness_us is not None
                         else None)})
    stages = module.stage_modules()
    rules = [describe_rule(rule, number) for number, stage in enumerate(stages)
             for rule in (*stage.derived, *stage.stateful)]
    return {
        "file": module.source_name,
        "key": module.key,
        "stage_keys": [stage.key for stage in stages],
        "streams": streams,
        "variables": [{"name": v.name, "type": v.type, "value": v.value}
                      for v in module.variables.values()],
        "event_time": describe_event_time(module, late),
        "rules": rules,
    }
