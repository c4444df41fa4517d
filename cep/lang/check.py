"""The checker: AST → checked IR, or a located :class:`RuleError`.

What it decides (the semantics the engine relies on, see README "Rule semantics"):
* every name resolves: streams, fields (bare, ``alias.f``, ``tag.f``, ``tag[i].f``),
  variables (replaced by their value), functions (the signatures of
  :mod:`cep.lang.signatures`);
* every expression has a type, and operators/functions get the types they accept;
* aggregates appear only in SELECT/HAVING of a rule with a data window;
* each rule is classified: derived (stateless), window, ``#lastevent`` join, pattern;
* the partition key of each stateful rule comes from ``#groupwin(k)``, ``GROUP BY k`` or
  ``PARTITION BY k``, and all stateful rules of a stage share it (a stage: the rules
  reading the complex events that earlier stages' INSERT INTO rules produce, ``ir.Stage``);
* an ``every`` over a pattern that can match more than once is refused: its state grows
  without bound whatever WITHIN or the state time-to-live says.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from cep.lang import ast, ir, signatures
from cep.lang.errors import Pos, RuleError, did_you_mean
from cep.lang.format_syntax import to_strptime
from cep.lang.match_recognize import check_recognize
from cep.lang.path_syntax import split_path
from cep.lang.types import (
    INTEGRAL,
    NUMERIC,
    ORDERED,
    comparable,
    is_numeric,
    normalise,
    numeric_result,
    unify,
)

AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "stddev", "first", "last"})
# Esper's data-window functions: (fewest, most) arguments; with two the first is n.
WINDOW_FUNCTIONS = {"prev": (1, 2), "prevtail": (1, 2), "prevcount": (1, 1), "prior": (2, 2)}
SLIDING = frozenset({"length", "time", "keepall"})
WINDOW_KINDS = frozenset({"length", "length_batch", "time", "time_batch", "keepall",
                          "ext_timed", "firstlength", "firsttime", "time_length_batch",
                          "unique"})
TIME_SIZED = frozenset({"time", "time_batch", "firsttime", "time_length_batch"})
MICROS_PER_SECOND = 1_000_000
# prior(n, ...) keeps n events per key beyond the window: the index is capped
MAX_WINDOW_INDEX = 10_000
# every output row starts with these; SELECT * renames a clashing field to name_
RESERVED_COLUMNS = ("rule", "key", "seq", "ts")


def compile_module(
    module: ast.Module, overrides: Mapping[str, str] | None = None,
    state_ttl_us: int | None = None,
) -> ir.CompiledModule:
    """Check a parsed rule file; ``overrides`` are ``--set name=value`` strings.

    ``state_ttl_us`` bounds the state that no rule bounds itself (``#keepall`` windows,
    patterns without WITHIN) to that much event time per key; see README "State
    time-to-live". Windows and patterns with a bound of their own are left as written.
    """
    if state_ttl_us is not None and state_ttl_us <= 0:
        raise ValueError(f"the state time-to-live must be positive, got {state_ttl_us} µs")
    try:
        return _Checker(module, dict(overrides or {}), state_ttl_us).run()
    except RuleError as err:
        raise err.located(module.source_name, module.source) from None


# ---------------------------------------------------------------- scopes


@dataclass
class _Scope:
    """What names mean inside one expression.

    ``qualifiers`` maps each alias/tag/stream name usable before a dot to
    ``(ir qualifier, stream)``; ``bare`` lists the ir qualifiers searched for bare names.
    ``aggregate`` is the scope used inside aggregate arguments (None: not allowed).
    """

    qualifiers: dict[str, tuple[str, ir.StreamDef]]
    bare: tuple[str, ...]
    repeated: frozenset[str] = frozenset()
    aggregate: _Scope | None = None
    aggregate_hint: str = "aggregate functions need a data window, e.g. #length(10)"
    outside_aggregate_only: frozenset[str] = frozenset()
    forbidden_hint: dict[str, str] = field(default_factory=dict)
    window_functions: bool = False  # prev(), prior() ...: SELECT/HAVING of a window rule

    def stream_of(self, qualifier: str) -> ir.StreamDef:
        for q, stream in self.qualifiers.values():
            if q == qualifier:
                return stream
        raise KeyError(qualifier)


class _Checker:
    def __init__(self, module: ast.Module, overrides: dict[str, str],
                 state_ttl_us: int | None = None) -> None:
        self.module = module
        self.overrides = overrides
        self.state_ttl_us = state_ttl_us
        self.streams: dict[str, ir.StreamDef] = {}
        self.input_streams: list[str] = []
        self.variables: dict[str, ir.Variable] = {}
        self.outputs: list[str] = []
        self.rule_names: set[str] = set()
        # INSERT INTO from a stateful rule makes a stream of the next stage (see ir.Stage):
        # each stream's stage, and per stage its rules and key
        self.stream_stage: dict[str, int] = {}
        self.stages: dict[int, _Stage] = {0: _Stage()}
        self.stage = 0

    # The rules and key of the stage being checked (stage 0 is the module itself).
    derived = property(lambda self: self.stages[self.stage].derived)
    stateful = property(lambda self: self.stages[self.stage].stateful)
    key = property(lambda self: self.stages[self.stage].key,
                   lambda self, v: setattr(self.stages[self.stage], "key", v))
    key_owner = property(lambda self: self.stages[self.stage].key_owner,
                         lambda self, v: setattr(self.stages[self.stage], "key_owner", v))
    unkeyed_owner = property(lambda self: self.stages[self.stage].unkeyed_owner,
                             lambda self, v: setattr(self.stages[self.stage], "unkeyed_owner",
                                                     v))

    # ------------------------------------------------------------ driver

    def run(self) -> ir.CompiledModule:
        rule_index = 0
        for stmt in self.module.statements:
            if isinstance(stmt, ast.CreateSchema):
                self._schema(stmt)
            elif isinstance(stmt, ast.CreateVariable):
                self._variable(stmt)
            else:
                rule_index += 1
                self._rule(stmt, rule_index)
        unknown = sorted(set(self.overrides) - set(self.variables))
        if unknown:
            hint = did_you_mean(unknown[0], self.variables)
            raise RuleError(f"--set names unknown variable '{unknown[0]}'", hint=hint)
        first = self.stages[0]
        later = [self.stages[i] for i in sorted(self.stages) if i > 0]
        return ir.CompiledModule(
            source_name=self.module.source_name,
            streams=dict(self.streams),
            input_streams=tuple(self.input_streams),
            variables=dict(self.variables),
            derived=tuple(first.derived),
            stateful=tuple(first.stateful),
            key=first.key,
            outputs=tuple(self.outputs),
            stages=tuple(ir.Stage(s.key, tuple(s.derived), tuple(s.stateful)) for s in later),
        )

    # ------------------------------------------------------------ declarations

    def _schema(self, stmt: ast.CreateSchema) -> None:
        if stmt.name in self.streams:
            raise RuleError(f"stream '{stmt.name}' is already defined", stmt.pos)
        names: set[str] = set()
        fields = []
        sources: list[tuple[str, ir.FieldSource]] = []
        for f in stmt.fields:
            if f.name in names:
                raise RuleError(f"field '{f.name}' is declared twice", f.pos)
            t = normalise(f.type)
            if t is None:
                raise RuleError(
                    f"unknown type '{f.type}'",
                    f.pos,
                    hint="types are int, long, double, boolean, string, timestamp",
                )
            names.add(f.name)
            fields.append((f.name, t))
            if (source := _field_source(f, t)) is not None:
                sources.append((f.name, source))
        if stmt.timestamp is not None:
            ts_type = dict(fields).get(stmt.timestamp)
            pos = stmt.timestamp_pos or stmt.pos
            if ts_type is None:
                raise RuleError(
                    f"TIMESTAMP names unknown field '{stmt.timestamp}'",
                    pos,
                    hint=did_you_mean(stmt.timestamp, names),
                )
            if ts_type != "timestamp":
                raise RuleError(
                    f"TIMESTAMP field '{stmt.timestamp}' has type {ts_type}, not timestamp", pos
                )
        self.streams[stmt.name] = ir.StreamDef(stmt.name, tuple(fields), stmt.timestamp,
                                               sources=tuple(sources))
        self.input_streams.append(stmt.name)

    def _variable(self, stmt: ast.CreateVariable) -> None:
        if stmt.name in self.variables:
            raise RuleError(f"variable '{stmt.name}' is already defined", stmt.pos)
        t = normalise(stmt.type)
        if t is None:
            raise RuleError(f"unknown type '{stmt.type}'", stmt.pos)
        if stmt.name in self.overrides:
            value = _parse_override(stmt.name, t, self.overrides[stmt.name])
        elif stmt.default is None:
            raise RuleError(
                f"variable '{stmt.name}' has no value",
                stmt.pos,
                hint=f"give a default (= ...) or pass --set {stmt.name}=VALUE",
            )
        else:
            expr = self._expr(stmt.default, _Scope({}, ()))
            if not isinstance(expr, ir.Const):
                raise RuleError("a variable's default must be a constant", stmt.default.pos)
            fits = expr.type == t or (t in NUMERIC and expr.type in NUMERIC) or (
                t == "long" and expr.type == "duration")
            if not fits:
                raise RuleError(
                    f"variable '{stmt.name}' is {t} but its default is {expr.type}",
                    stmt.default.pos,
                )
            value = float(expr.value) if t == "double" else expr.value
        self.variables[stmt.name] = ir.Variable(stmt.name, t, value)

    # ------------------------------------------------------------ rules

    def _rule(self, stmt: ast.SelectStatement, index: int) -> None:
        self.stage = max((self.stream_stage.get(n, 0) for n in _source_streams(stmt)),
                         default=0)
        self.stages.setdefault(self.stage, _Stage())
        stateful = len(self.stateful)
        name = self._rule_name(stmt, index)
        self._classify(stmt, name)
        if stmt.insert_into is not None:
            self._stage_of_target(stmt, stateful < len(self.stateful), name)
        if stmt.output is not None:
            if len(self.stateful) == stateful:
                raise RuleError(
                    "OUTPUT rate limiting needs a rule with state (a data window, a join or "
                    "a pattern): its intervals are counted per key",
                    stmt.output.pos,
                    hint="e.g. FROM S#groupwin(k)#length(1) ... OUTPUT EVERY 5 EVENTS",
                )
            rule = self.stateful[-1]
            self.stateful[-1] = dataclasses.replace(
                rule, output=self._output_limit(stmt.output, rule))

    def _stage_of_target(self, stmt: ast.SelectStatement, stateful: bool, name: str) -> None:
        """An INSERT INTO target is a stream of this stage (fed by a stateless rule) or of
        the next one (fed by a stateful rule's output rows); it is fed from one stage."""
        target, pos = stmt.insert_into, stmt.insert_into_pos or stmt.pos
        stage = self.stage + 1 if stateful else self.stage
        if self.stream_stage.setdefault(target, stage) != stage:  # type: ignore[arg-type]
            raise RuleError(
                f"stream '{target}' is fed both by rules with state and by rules reading "
                "their results (or their inputs): its events would come from two stages",
                pos, hint="insert into two streams",
            )
        if stateful:
            rule = self.stateful[-1]
            timestamps = frozenset(self.streams[s].timestamp for s in _rule_streams(rule)
                                   if self.streams[s].timestamp)
            self._define_derived(target, pos, rule.columns, timestamps)  # type: ignore[arg-type]
            self.outputs.remove(name)
            self.stateful[-1] = dataclasses.replace(rule, target=target)

    def _output_limit(self, node: ast.OutputLimit, rule: ir.StatefulRule) -> ir.OutputLimit:
        if node.period is None:
            return ir.OutputLimit(node.kind, node.events, None)
        if isinstance(node.period, ast.Name) and node.period.name.lower() == "events":
            raise RuleError("OUTPUT EVERY ... EVENTS needs the number of events",
                            node.period.pos, hint="e.g. OUTPUT LAST EVERY 5 EVENTS")
        arg = self._expr(node.period, _Scope({}, ()))
        if not isinstance(arg, ir.Const):
            raise RuleError("OUTPUT EVERY needs a constant time period or a count of EVENTS",
                            node.period.pos)
        period = _duration_us(arg, node.period.pos)
        if period <= 0:
            raise RuleError("OUTPUT EVERY needs a positive time period", node.period.pos)
        for name in _rule_streams(rule):
            if self.streams[name].timestamp is None:
                raise RuleError(
                    f"OUTPUT EVERY {_source_slice(self.module.source, node.period.pos)} "
                    f"counts event time, but stream '{name}' has no TIMESTAMP",
                    node.period.pos,
                    hint="declare one, or count results: OUTPUT EVERY n EVENTS",
                )
        return ir.OutputLimit(node.kind, None, period)

    def _classify(self, stmt: ast.SelectStatement, name: str) -> None:
        """Check a rule and add it to the derived or stateful rules by its kind."""
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
            self.stateful.append(check_recognize(self, stmt, name, recognize[0]))
            self.outputs.append(name)
            return
        pattern_sources = [s for s in stmt.sources if isinstance(s, ast.PatternSource)]
        if pattern_sources:
            if len(stmt.sources) > 1:
                raise RuleError(
                    "a PATTERN cannot be joined with other sources", stmt.sources[1].pos
                )
            self._pattern_rule(stmt, name, pattern_sources[0])
            return
        sources = [s for s in stmt.sources if isinstance(s, ast.StreamSource)]
        if len(sources) == 2:
            self._join_rule(stmt, name, sources[0], sources[1])
            return
        if len(sources) > 2:
            raise RuleError(
                "joins of more than two streams are not supported", sources[2].pos
            )
        source = sources[0]
        stream = self._stream(source.stream, source.pos)
        windows = [w for w in source.windows if w.kind != "groupwin"]
        if not windows:
            self._derived_rule(stmt, name, source, stream)
        else:
            self._window_rule(stmt, name, source, stream)

    def _rule_name(self, stmt: ast.SelectStatement, index: int) -> str:
        name = f"rule{index}"
        for ann in stmt.annotations:
            if ann.name.lower() == "name":
                if not isinstance(ann.value, str) or not ann.value:
                    raise RuleError("@Name needs a non-empty string", ann.pos)
                name = ann.value
        if name in self.rule_names:
            raise RuleError(f"two rules are named '{name}'", stmt.pos)
        self.rule_names.add(name)
        return name

    def _stream(self, name: str, pos: Pos) -> ir.StreamDef:
        stream = self.streams.get(name)
        if stream is None:
            raise RuleError(
                f"unknown stream '{name}'", pos, hint=did_you_mean(name, self.streams)
            )
        return stream

    def _single_scope(
        self, stream: ir.StreamDef, alias: str | None, aggregate: bool = False
    ) -> _Scope:
        quals = {stream.name: ("", stream)}
        if alias:
            quals[alias] = ("", stream)
        scope = _Scope(quals, ("",))
        if aggregate:
            scope.aggregate = _Scope(quals, ("",))
            scope.window_functions = True
        return scope

    # ---- stateless

    def _derived_rule(
        self,
        stmt: ast.SelectStatement,
        name: str,
        source: ast.StreamSource,
        stream: ir.StreamDef,
    ) -> None:
        scope = self._single_scope(stream, source.alias)
        self._no_clause(stmt.group_by, "GROUP BY", "a rule without a data window")
        self._no_clause(stmt.partition_by, "PARTITION BY", "a rule without a pattern")
        if stmt.having is not None:
            raise RuleError(
                "HAVING needs aggregates over a data window",
                stmt.having.pos,
                hint="use WHERE, or add a window such as #length(10)",
            )
        filters = [
            self._condition(e, scope, clause)
            for e, clause in ((source.filter, "a stream filter"), (stmt.where, "WHERE"))
            if e is not None
        ]
        target = stmt.insert_into
        columns = self._columns(stmt.select, scope, star_qualifier="", star_stream=stream,
                                output=target is None)
        combined = _and_all(filters)
        if target is not None:
            self._define_derived(target, stmt.insert_into_pos or stmt.pos, columns,
                                 frozenset({stream.timestamp} - {None}))
        else:
            self.outputs.append(name)
        self.derived.append(ir.DerivedRule(name, stream.name, combined, columns, target))

    def _define_derived(
        self, target: str, pos: Pos, columns: tuple[ir.Column, ...], timestamps: frozenset[str]
    ) -> None:
        """Declare (or check against) an INSERT INTO stream. It has a TIMESTAMP when a
        column passes on a TIMESTAMP field of the rule's streams under its own name
        (``SELECT ts, ...`` or ``b.ts AS ts``)."""
        fields = tuple((c.name, _schema_type(c.expr.type)) for c in columns)
        ts = next((c.name for c in columns if c.name in timestamps
                   and isinstance(c.expr, ir.FieldRef) and c.expr.name == c.name), None)
        inherits_ts = ts is not None
        existing = self.streams.get(target)
        if existing is not None:
            if existing.fields != fields:
                raise RuleError(
                    f"INSERT INTO '{target}' produces columns {_fmt_fields(fields)} but the "
                    f"stream has {_fmt_fields(existing.fields)}",
                    pos,
                )
            return
        self.streams[target] = ir.StreamDef(
            target, fields, ts if inherits_ts else None, derived=True
        )

    # ---- window rules

    def _window_rule(
        self,
        stmt: ast.SelectStatement,
        name: str,
        source: ast.StreamSource,
        stream: ir.StreamDef,
    ) -> None:
        window, groupwin_key = self._windows(source, stream)
        if window is None:
            raise RuleError(
                "#lastevent alone holds no history; join it with a keyed window",
                source.pos,
            )
        scope = self._single_scope(stream, source.alias, aggregate=True)
        self._no_clause(stmt.partition_by, "PARTITION BY", "a rule without a pattern")
        key = groupwin_key
        if stmt.group_by:
            group_key = self._key_field(stmt.group_by, stream, "GROUP BY")
            if key is not None and group_key != key:
                raise RuleError(
                    f"GROUP BY {group_key} differs from #groupwin({key})",
                    stmt.group_by[0].pos,
                    hint="a rule is partitioned by one key",
                )
            if key is None and window.kind not in ("time", "keepall") and not _unique_on(
                    window, group_key):
                raise RuleError(
                    f"a #{window.kind} window shared by all keys cannot be partitioned "
                    f"by {group_key}",
                    stmt.group_by[0].pos,
                    hint=f"use #groupwin({group_key})#{window.kind}(...) for a window per key",
                )
            key = group_key
        stream_filter = self._optional_condition(source.filter, scope, "a stream filter")
        where = self._optional_condition(stmt.where, scope, "WHERE")
        having = self._optional_condition(stmt.having, scope, "HAVING", aggregates=True)
        columns = self._columns(
            stmt.select, scope, star_qualifier="", star_stream=stream, aggregates=True,
            output=stmt.insert_into is None,
        )
        self._claim_key(name, key, stmt.pos)
        self.outputs.append(name)
        self.stateful.append(
            ir.WindowRule(name, stream.name, stream_filter, window, where, having, columns, key)
        )

    def _windows(
        self, source: ast.StreamSource, stream: ir.StreamDef
    ) -> tuple[ir.WindowSpec | None, str | None]:
        """The data window of a source and its #groupwin key (either may be None)."""
        key: str | None = None
        window: ir.WindowSpec | None = None
        lastevent = False
        for w in source.windows:
            if w.kind == "groupwin":
                if window is not None or lastevent:
                    raise RuleError("#groupwin must come before the window it groups", w.pos)
                key = self._key_field(w.args, stream, "#groupwin")
            elif w.kind == "lastevent":
                if window is not None or lastevent or key is not None:
                    raise RuleError("#lastevent cannot be combined with other windows", w.pos)
                lastevent = True
            elif w.kind in WINDOW_KINDS:
                if window is not None or lastevent:
                    raise RuleError("only one data window per stream is supported", w.pos)
                window = self._window_spec(w, stream)
            else:
                raise RuleError(f"unknown window '{w.kind}'", w.pos)
        if key is not None and window is None:
            pos = source.windows[-1].pos
            raise RuleError(
                "#groupwin needs a data window after it", pos, hint="e.g. #groupwin(k)#length(10)"
            )
        return window, key

    def _window_spec(self, w: ast.Window, stream: ir.StreamDef) -> ir.WindowSpec:
        if w.kind == "ext_timed":
            return self._window_spec(self._ext_timed(w, stream), stream)
        if w.kind == "keepall":
            if w.args:
                raise RuleError("#keepall takes no arguments", w.pos)
            if self.state_ttl_us is not None:
                self._ttl_needs_time([stream], w.pos, "#keepall")
            return ir.WindowSpec("keepall", 0, self.state_ttl_us)
        if w.kind == "unique":
            scope = self._single_scope(stream, None)
            return ir.WindowSpec("unique", 0, unique_by=tuple(
                self._expr(arg, scope) for arg in w.args))
        if w.kind == "time_length_batch":
            if len(w.args) != 2:
                raise RuleError("#time_length_batch takes a time period and a count", w.pos)
            size = self._window_size(w, w.args[0], stream, time=True)
            limit = self._window_size(w, w.args[1], stream, time=False)
            return ir.WindowSpec(w.kind, size, limit=limit)
        if len(w.args) != 1:
            raise RuleError(f"#{w.kind} takes one argument", w.pos)
        return ir.WindowSpec(w.kind, self._window_size(w, w.args[0], stream,
                                                       time=w.kind in TIME_SIZED))

    def _window_size(self, w: ast.Window, expr: ast.Expr, stream: ir.StreamDef,
                     time: bool) -> int:
        """A window's size argument: a positive count, or a positive time period."""
        try:
            arg = self._expr(expr, _Scope({}, ()))
        except RuleError as err:
            if not (isinstance(expr, ast.Name) and stream.field_type(expr.name) is not None):
                raise
            raise RuleError(
                f"the size of #{w.kind} must be a constant or a variable, not a field",
                expr.pos,
            ) from err
        if not isinstance(arg, ir.Const):
            raise RuleError(
                f"the size of #{w.kind} must be a constant or a variable", expr.pos
            )
        if time:
            if stream.timestamp is None:
                raise RuleError(
                    f"#{w.kind} needs event time, but stream '{stream.name}' has no TIMESTAMP",
                    w.pos,
                    hint=f"declare it: CREATE SCHEMA {stream.name} (...) TIMESTAMP field",
                )
            size = _duration_us(arg, expr.pos)
        else:
            if arg.type not in INTEGRAL:
                raise RuleError(f"#{w.kind} needs a whole number, got {arg.type}", expr.pos)
            size = int(arg.value)  # type: ignore[call-overload]
        if size <= 0:
            raise RuleError(f"#{w.kind} needs a positive size", expr.pos)
        return size

    def _ext_timed(self, w: ast.Window, stream: ir.StreamDef) -> ast.Window:
        """Esper's ``#ext_timed(field, T)`` is ``#time(T)`` when ``field`` is the stream's
        TIMESTAMP (cep's windows always run on event time); other fields are refused."""
        ts_expr = w.args[0]
        name = ts_expr.name if isinstance(ts_expr, ast.Name | ast.Attr) else None
        if stream.timestamp is None or name != stream.timestamp:
            raise RuleError(
                "#ext_timed must name the stream's TIMESTAMP field"
                + (f" ('{stream.timestamp}')" if stream.timestamp else
                   f", but stream '{stream.name}' has none"),
                ts_expr.pos,
                hint="cep's time windows run on the TIMESTAMP field declared in CREATE SCHEMA",
            )
        return ast.Window("time", w.args[1:], w.pos)

    def _key_field(
        self, exprs: tuple[ast.Expr, ...], stream: ir.StreamDef, clause: str
    ) -> str:
        if len(exprs) != 1:
            pos = exprs[1].pos if len(exprs) > 1 else None
            raise RuleError(f"{clause} takes exactly one key field", pos)
        expr = exprs[0]
        name = expr.name if isinstance(expr, ast.Name | ast.Attr) else None
        if name is None:
            raise RuleError(f"{clause} needs a field name as the key", expr.pos)
        if stream.field_type(name) is None:
            raise RuleError(
                f"unknown field '{name}' in stream '{stream.name}'",
                expr.pos,
                hint=did_you_mean(name, dict(stream.fields)),
            )
        return name

    def _claim_key(self, rule: str, key: str | None, pos: Pos) -> None:
        """All stateful rules of a file are partitioned by the same key field."""
        if key is None:
            if self.key_owner is not None:
                owner, _ = self.key_owner
                raise RuleError(
                    f"rule '{rule}' has no key, but rule '{owner}' is keyed by {self.key}",
                    pos,
                    hint="every stateful rule in a file must be partitioned by the same key",
                )
            self.unkeyed_owner = self.unkeyed_owner or (rule, pos)
            return
        if self.unkeyed_owner is not None:
            owner, _ = self.unkeyed_owner
            raise RuleError(
                f"rule '{rule}' is keyed by {key}, but rule '{owner}' has no key",
                pos,
                hint="every stateful rule in a file must be partitioned by the same key",
            )
        if self.key is not None and self.key != key:
            owner, _ = self.key_owner  # type: ignore[misc]
            raise RuleError(
                f"rule '{rule}' is keyed by {key}, but rule '{owner}' is keyed by {self.key}",
                pos,
                hint="all keyed rules in one file must share one key",
            )
        self.key = key
        self.key_owner = self.key_owner or (rule, pos)

    # ---- joins

    def _join_rule(
        self,
        stmt: ast.SelectStatement,
        name: str,
        first: ast.StreamSource,
        second: ast.StreamSource,
    ) -> None:
        def is_last(s: ast.StreamSource) -> bool:
            return any(w.kind == "lastevent" for w in s.windows)

        if is_last(first) == is_last(second):
            raise RuleError(
                "a join needs one #lastevent stream and one keyed window",
                stmt.sources[0].pos,
                hint="e.g. FROM S#lastevent AS LE, S#groupwin(k)#length(10) AS W "
                "WHERE LE.k = W.k",
            )
        trig, win = (first, second) if is_last(first) else (second, first)
        trig_stream = self._stream(trig.stream, trig.pos)
        win_stream = self._stream(win.stream, win.pos)
        trig_window, _ = self._windows(trig, trig_stream)
        window, key = self._windows(win, win_stream)
        if trig_window is not None:
            raise RuleError("#lastevent cannot be combined with a data window", trig.pos)
        if window is None or key is None:
            raise RuleError(
                "the joined window must be keyed: #groupwin(k)#length(n) or #time(T)", win.pos
            )
        if window.is_batch:
            raise RuleError("a #lastevent join needs a sliding window, not a batch", win.pos)
        if window.kind not in SLIDING:
            raise RuleError(f"a #lastevent join supports #length, #time and #keepall windows, "
                            f"not #{window.kind}", win.pos)
        t_alias = trig.alias or trig.stream
        w_alias = win.alias or win.stream
        if t_alias == w_alias:
            raise RuleError("the two sides of a join need different aliases", win.pos)
        if trig_stream.field_type(key) is None:
            raise RuleError(
                f"the #lastevent stream '{trig_stream.name}' has no key field '{key}'", trig.pos
            )
        self._no_clause(stmt.partition_by, "PARTITION BY", "a join")
        if stmt.group_by:
            gk = self._key_field(stmt.group_by, trig_stream, "GROUP BY")
            if gk != key:
                raise RuleError(f"GROUP BY {gk} differs from #groupwin({key})",
                                stmt.group_by[0].pos)
        t_scope = self._single_scope(trig_stream, trig.alias)
        w_scope = self._single_scope(win_stream, win.alias)
        quals = {t_alias: (t_alias, trig_stream), w_alias: (w_alias, win_stream)}
        pair_scope = _Scope(quals, (t_alias, w_alias))
        outer = _Scope(
            quals,
            (t_alias, w_alias),
            aggregate=pair_scope,
            outside_aggregate_only=frozenset({w_alias}),
            forbidden_hint={
                w_alias: f"'{w_alias}' has many rows per event: use it inside an aggregate, "
                f"e.g. max({w_alias}.x)"
            },
        )
        trig_filter = self._optional_condition(trig.filter, t_scope, "a stream filter")
        win_filter = self._optional_condition(win.filter, w_scope, "a stream filter")
        trig_conds: list[ir.TExpr] = []
        pair_conds: list[ir.TExpr] = []
        has_key_equality = False
        for conj in _conjuncts(stmt.where):
            cond = self._condition(conj, pair_scope, "WHERE")
            quals_used = _qualifiers(cond)
            if _is_key_equality(cond, t_alias, w_alias, key):
                has_key_equality = True
            elif quals_used <= {t_alias}:
                trig_conds.append(cond)
            else:
                pair_conds.append(cond)
        if not has_key_equality:
            raise RuleError(
                f"a #lastevent join must match the key: add WHERE {t_alias}.{key} = "
                f"{w_alias}.{key}",
                stmt.where.pos if stmt.where is not None else stmt.pos,
            )
        having = self._optional_condition(stmt.having, outer, "HAVING", aggregates=True)
        columns = self._columns(
            stmt.select, outer, star_qualifier=t_alias, star_stream=trig_stream, aggregates=True,
            output=stmt.insert_into is None,
        )
        self._claim_key(name, key, stmt.pos)
        self.outputs.append(name)
        self.stateful.append(
            ir.JoinRule(
                name=name,
                trigger_stream=trig_stream.name,
                trigger_alias=t_alias,
                trigger_filter=trig_filter,
                trigger_where=_and_all(trig_conds),
                window_stream=win_stream.name,
                window_alias=w_alias,
                window_filter=win_filter,
                window=window,
                pair_where=_and_all(pair_conds),
                having=having,
                columns=columns,
                key=key,
            )
        )

    # ---- patterns

    def _pattern_rule(
        self, stmt: ast.SelectStatement, name: str, source: ast.PatternSource
    ) -> None:
        root = source.pattern
        within_us: int | None = None
        if isinstance(root, ast.PatWithin):
            arg = self._expr(root.duration, _Scope({}, ()))
            if not isinstance(arg, ir.Const):
                raise RuleError("WITHIN needs a constant duration", root.duration.pos)
            within_us = _duration_us(arg, root.duration.pos)
            if within_us <= 0:
                raise RuleError("WITHIN needs a positive duration", root.duration.pos)
            root = root.operand
        tags: dict[str, tuple[ir.StreamDef, bool]] = {}
        self._collect_tags(root, tags, repeated=False)
        _refuse_growing_every(root)
        self._no_clause(stmt.group_by, "GROUP BY", "a pattern rule (use PARTITION BY)")
        if stmt.having is not None:
            raise RuleError("HAVING is not allowed in a pattern rule; use WHERE", stmt.having.pos)
        streams = tuple(dict.fromkeys(s.name for s, _ in tags.values()))
        key: str | None = None
        if stmt.partition_by:
            if len(stmt.partition_by) != 1:
                raise RuleError("PARTITION BY takes exactly one key field",
                                stmt.partition_by[1].pos)
            key_expr = stmt.partition_by[0]
            key = key_expr.name if isinstance(key_expr, ast.Name) else None
            if key is None:
                raise RuleError("PARTITION BY needs a field name", key_expr.pos)
            for s in streams:
                if self.streams[s].field_type(key) is None:
                    raise RuleError(
                        f"stream '{s}' has no field '{key}' to partition by",
                        key_expr.pos,
                        hint=did_you_mean(key, dict(self.streams[s].fields)),
                    )
        timer = _first_timer(root)
        for what, needed in (("WITHIN", within_us is not None),
                             ("timer:interval", timer is not None)):
            for s in streams if needed else ():
                if self.streams[s].timestamp is None:
                    raise RuleError(
                        f"{what} needs event time, but stream '{s}' has no TIMESTAMP",
                        source.pos,
                    )
        ttl_us = self.state_ttl_us if within_us is None else None
        if ttl_us is not None:
            self._ttl_needs_time([self.streams[s] for s in streams], source.pos,
                                 "a pattern without WITHIN")
        repeated = frozenset(t for t, (_, rep) in tags.items() if rep)
        quals = {t: (t, s) for t, (s, _) in tags.items()}
        scope = _Scope(quals, tuple(quals), repeated=repeated)
        scope.aggregate_hint = "aggregate functions are not allowed in a pattern rule"
        node = self._pattern_node(root, tags, set(), repeated)
        where = self._optional_condition(stmt.where, scope, "WHERE")
        columns = self._columns(stmt.select, scope, star_qualifier=None, star_stream=None,
                                output=stmt.insert_into is None)
        self._claim_key(name, key, stmt.pos)
        self.outputs.append(name)
        self.stateful.append(
            ir.PatternRule(
                name=name,
                pattern=node,
                within_us=within_us,
                streams=streams,
                tags=tuple(tags),
                repeated_tags=tuple(sorted(repeated)),
                where=where,
                columns=columns,
                key=key,
                ttl_us=ttl_us,
            )
        )

    def _timer_us(self, node: ast.PatTimer) -> int:
        arg = self._expr(node.duration, _Scope({}, ()))
        if not isinstance(arg, ir.Const):
            raise RuleError("timer:interval needs a constant duration", node.duration.pos)
        us = _duration_us(arg, node.duration.pos)
        if us <= 0:
            raise RuleError("timer:interval needs a positive duration", node.duration.pos)
        return us

    def _ttl_needs_time(self, streams: list[ir.StreamDef], pos: Pos, what: str) -> None:
        """The state time-to-live counts event time, so the state it bounds needs it."""
        for stream in streams:
            if stream.timestamp is None:
                raise RuleError(
                    f"the state time-to-live needs event time, but stream '{stream.name}' "
                    f"({what}) has no TIMESTAMP",
                    pos,
                    hint=f"declare it: CREATE SCHEMA {stream.name} (...) TIMESTAMP field, "
                    "or run without the state time-to-live",
                )

    def _collect_tags(
        self, node: ast.Pattern, tags: dict[str, tuple[ir.StreamDef, bool]], repeated: bool
    ) -> None:
        if isinstance(node, ast.PatAtom):
            stream = self._stream(node.stream, node.pos)
            tag = node.tag or f"_{len(tags)}"
            if tag in tags:
                raise RuleError(f"pattern tag '{tag}' is used twice", node.pos)
            if tag in self.streams:
                raise RuleError(f"pattern tag '{tag}' hides the stream of that name", node.pos)
            tags[tag] = (stream, repeated)
        elif isinstance(node, ast.PatRepeat):
            if node.high is None and node.until is None:
                raise RuleError(f"[{node.count}:] has no upper bound, so it needs 'until'",
                                node.pos, hint=f"e.g. [{node.count}:] b=B until c=C")
            if node.high is not None and node.high < max(node.count, 1):
                raise RuleError(f"a repetition range [{node.count}:{node.high}] is empty",
                                node.pos)
            self._collect_tags(node.operand, tags, repeated=True)
            if node.until is not None:
                self._collect_tags(node.until, tags, repeated)
        elif isinstance(node, ast.PatWithin):
            raise RuleError(
                "WITHIN applies to the whole pattern only",
                node.pos,
                hint="write PATTERN [ ... ] with WITHIN after the whole expression",
            )
        elif isinstance(node, ast.PatTimer):
            return
        elif isinstance(node, ast.PatNot | ast.PatEvery):
            self._collect_tags(node.operand, tags, repeated)
        else:
            self._collect_tags(node.left, tags, repeated)
            self._collect_tags(node.right, tags, repeated)

    def _pattern_node(
        self,
        node: ast.Pattern,
        tags: dict[str, tuple[ir.StreamDef, bool]],
        earlier: set[str],
        repeated: frozenset[str],
    ) -> ir.PNode:
        """Compile a pattern; ``earlier`` are tags bound before this node can match."""
        if isinstance(node, ast.PatAtom):
            tag = node.tag or next(t for t, (s, _) in tags.items() if s.name == node.stream
                                   and t.startswith("_"))
            stream = tags[tag][0]
            local = bound = None
            if node.filter is not None:
                quals = {stream.name: (tag, stream), tag: (tag, stream)}
                for t in earlier:
                    quals[t] = (t, tags[t][0])
                scope = _Scope(quals, (tag,), repeated=repeated & earlier)
                scope.aggregate_hint = "aggregate functions are not allowed in a pattern"
                cond = self._condition(node.filter, scope, "a pattern filter")
                if _qualifiers(cond) <= {tag}:
                    local = cond
                else:
                    bound = cond
            return ir.PAtom(tag, stream.name, local, bound)
        if isinstance(node, ast.PatFollowedBy):
            left = self._pattern_node(node.left, tags, earlier, repeated)
            right_earlier = earlier | _tags_of(node.left)
            right = self._pattern_node(node.right, tags, right_earlier, repeated)
            return ir.PFollowedBy(left, right)
        if isinstance(node, ast.PatAnd | ast.PatOr):
            left = self._pattern_node(node.left, tags, earlier, repeated)
            right = self._pattern_node(node.right, tags, earlier, repeated)
            if isinstance(node, ast.PatOr):
                for side in (node.left, node.right):
                    if isinstance(side, ast.PatNot):
                        raise RuleError("'not' is supported only as an operand of 'and'",
                                        side.pos)
                return ir.POr(left, right)
            if isinstance(node.left, ast.PatNot) and isinstance(node.right, ast.PatNot):
                raise RuleError("'and' needs at least one operand that is not 'not'", node.pos)
            return ir.PAnd(left, right)
        if isinstance(node, ast.PatTimer):
            return ir.PTimer(self._timer_us(node))
        if isinstance(node, ast.PatNot | ast.PatRepeat):
            timer = _first_timer(node)
            if timer is not None:
                raise RuleError("timer:interval is not supported inside 'not' or a repeat",
                                timer.pos,
                                hint="for a missed follow-up write a -> (timer:interval(T) "
                                "and not b)")
        if isinstance(node, ast.PatNot):
            return ir.PNot(self._pattern_node(node.operand, tags, earlier, repeated))
        if isinstance(node, ast.PatEvery):
            if isinstance(node.operand, ast.PatNot):
                raise RuleError("'every not ...' never matches", node.pos)
            if _starts_with_timer(node.operand):
                raise RuleError(
                    "'every' over a pattern that starts with timer:interval would fire "
                    "without events (a periodic timer is not supported)", node.pos,
                    hint="start the repeated part with an event: every (a=A -> "
                    "timer:interval(10 sec))",
                )
            return ir.PEvery(self._pattern_node(node.operand, tags, earlier, repeated))
        if isinstance(node, ast.PatRepeat):
            until = (self._pattern_node(node.until, tags, earlier, repeated)
                     if node.until is not None else None)
            return ir.PRepeat(node.count, self._pattern_node(node.operand, tags, earlier,
                                                             repeated), node.high, until)
        raise RuleError("unsupported pattern expression", node.pos)

    # ------------------------------------------------------------ clauses

    def _no_clause(self, exprs: tuple[ast.Expr, ...], clause: str, where: str) -> None:
        if exprs:
            raise RuleError(f"{clause} is not allowed in {where}", exprs[0].pos)

    def _optional_condition(
        self, expr: ast.Expr | None, scope: _Scope, clause: str, aggregates: bool = False
    ) -> ir.TExpr | None:
        if expr is None:
            return None
        return self._condition(expr, scope, clause, aggregates)

    def _condition(
        self, expr: ast.Expr, scope: _Scope, clause: str, aggregates: bool = False
    ) -> ir.TExpr:
        checked = self._expr(expr, scope if aggregates else _without_aggregates(scope, clause))
        if checked.type not in ("boolean", "null"):
            raise RuleError(f"{clause} must be a condition, but this is {checked.type}", expr.pos)
        return checked

    def _columns(
        self,
        items: tuple[ast.SelectItem, ...],
        scope: _Scope,
        *,
        star_qualifier: str | None,
        star_stream: ir.StreamDef | None,
        aggregates: bool = False,
        output: bool = True,
    ) -> tuple[ir.Column, ...]:
        """The SELECT list; ``output`` rows carry rule/key/seq/ts, so those names clash
        there (not in INSERT INTO streams)."""
        columns: list[ir.Column] = []
        owners: list[ast.SelectItem] = []
        for item in items:
            if isinstance(item.expr, ast.Star):
                expanded = self._star(item.expr, scope, star_qualifier, star_stream, output)
            else:
                inner = scope if aggregates else _without_aggregates(scope, "SELECT")
                expr = self._expr(item.expr, inner)
                expanded = [ir.Column(item.alias or self._column_name(item.expr), expr)]
            columns.extend(expanded)
            owners.extend([item] * len(expanded))
        seen: set[str] = set()
        for col, item in zip(columns, owners, strict=True):
            if col.name in seen or (output and col.name in RESERVED_COLUMNS):
                raise RuleError(
                    f"output column '{col.name}' is defined twice or clashes with the "
                    "output fields rule, key, seq, ts",
                    item.pos,
                    hint="give it another name with AS",
                )
            seen.add(col.name)
        return tuple(columns)

    def _star(
        self,
        star: ast.Star,
        scope: _Scope,
        default_qualifier: str | None,
        default_stream: ir.StreamDef | None,
        output: bool,
    ) -> list[ir.Column]:
        if star.base is not None:
            if star.base not in scope.qualifiers:
                raise RuleError(
                    f"unknown alias '{star.base}'",
                    star.pos,
                    hint=did_you_mean(star.base, scope.qualifiers),
                )
            qualifier, stream = scope.qualifiers[star.base]
            if qualifier in scope.outside_aggregate_only:
                raise RuleError(
                    f"'{star.base}.*' has many rows per event", star.pos,
                    hint=scope.forbidden_hint.get(qualifier),
                )
        elif default_stream is None or default_qualifier is None:
            raise RuleError(
                "SELECT * is not available here; name the columns", star.pos,
                hint="in a pattern write tag.field, e.g. a.id",
            )
        else:
            qualifier, stream = default_qualifier, default_stream
        columns = []
        for n, t in stream.fields:
            if output and n in RESERVED_COLUMNS:
                if n == "ts" and n == stream.timestamp:
                    continue  # the output row's own ts already is this event's time
                columns.append(ir.Column(n + "_", ir.FieldRef(qualifier, n, t)))
            else:
                columns.append(ir.Column(n, ir.FieldRef(qualifier, n, t)))
        return columns

    def _column_name(self, expr: ast.Expr) -> str:
        if isinstance(expr, ast.Name | ast.Attr | ast.IndexedAttr):
            return expr.name
        return _source_slice(self.module.source, expr.pos)

    # ------------------------------------------------------------ expressions

    def _expr(self, node: ast.Expr, scope: _Scope) -> ir.TExpr:
        method: Callable[[ast.Expr, _Scope], ir.TExpr] = getattr(
            self, "_e_" + type(node).__name__
        )
        return method(node, scope)

    def _e_Literal(self, node: ast.Literal, scope: _Scope) -> ir.TExpr:
        return ir.Const(node.value, node.type)

    def _e_Star(self, node: ast.Star, scope: _Scope) -> ir.TExpr:
        raise RuleError("'*' is only allowed in SELECT and count(*)", node.pos)

    def _e_Name(self, node: ast.Name, scope: _Scope) -> ir.TExpr:
        matches = []
        for q in scope.bare:
            stream = scope.stream_of(q)
            t = stream.field_type(node.name)
            if t is not None:
                matches.append((q, t))
        if len(matches) > 1:
            raise RuleError(
                f"'{node.name}' is ambiguous: it is a field of "
                + " and ".join(q for q, _ in matches),
                node.pos,
                hint=f"qualify it, e.g. {matches[0][0]}.{node.name}",
            )
        if matches:
            q, t = matches[0]
            self._check_visible(q, node.pos, scope)
            if q in scope.repeated:
                raise RuleError(
                    f"'{node.name}' belongs to a repeated tag; write {q}[0].{node.name}", node.pos
                )
            return ir.FieldRef(q, node.name, t)
        var = self.variables.get(node.name)
        if var is not None:
            return ir.Const(var.value, var.type)
        if node.name in scope.qualifiers:
            raise RuleError(
                f"'{node.name}' is a stream or tag, not a value",
                node.pos,
                hint=f"name one of its fields, e.g. {node.name}.<field>",
            )
        candidates = set(self.variables)
        for q in scope.bare:
            candidates.update(dict(scope.stream_of(q).fields))
        what = "field or variable" if scope.bare else "variable"
        raise RuleError(
            f"unknown {what} '{node.name}'", node.pos, hint=did_you_mean(node.name, candidates)
        )

    def _qualified(self, base: str, name: str, pos: Pos, scope: _Scope) -> tuple[str, str]:
        if base not in scope.qualifiers:
            raise RuleError(
                f"unknown stream, alias or tag '{base}'",
                pos,
                hint=did_you_mean(base, scope.qualifiers),
            )
        qualifier, stream = scope.qualifiers[base]
        t = stream.field_type(name)
        if t is None:
            raise RuleError(
                f"stream '{stream.name}' has no field '{name}'",
                pos,
                hint=did_you_mean(name, dict(stream.fields)),
            )
        self._check_visible(qualifier, pos, scope)
        return qualifier, t

    def _e_Attr(self, node: ast.Attr, scope: _Scope) -> ir.TExpr:
        qualifier, t = self._qualified(node.base, node.name, node.pos, scope)
        if qualifier in scope.repeated:
            raise RuleError(
                f"'{node.base}' is a repeated tag; write {node.base}[0].{node.name}", node.pos
            )
        return ir.FieldRef(qualifier, node.name, t)

    def _e_IndexedAttr(self, node: ast.IndexedAttr, scope: _Scope) -> ir.TExpr:
        qualifier, t = self._qualified(node.base, node.name, node.pos, scope)
        if qualifier not in scope.repeated:
            raise RuleError(f"'{node.base}' is not a repeated tag; write {node.base}.{node.name}",
                            node.pos)
        if node.index < 0:
            raise RuleError("an index must not be negative", node.pos)
        return ir.FieldRef(qualifier, node.name, t, node.index)

    def _check_visible(self, qualifier: str, pos: Pos, scope: _Scope) -> None:
        if qualifier in scope.outside_aggregate_only:
            raise RuleError(
                f"'{qualifier}' fields need an aggregate here",
                pos,
                hint=scope.forbidden_hint.get(qualifier),
            )

    def _e_Unary(self, node: ast.Unary, scope: _Scope) -> ir.TExpr:
        operand = self._expr(node.operand, scope)
        if node.op == "not":
            _expect(operand, ("boolean",), node.operand.pos, "NOT")
            return ir.Op("not", (operand,), "boolean")
        if not (is_numeric(operand.type) or operand.type == "duration"):
            raise RuleError(f"cannot negate a {operand.type}", node.pos)
        if isinstance(operand, ir.Const) and operand.value is not None:
            return ir.Const(-operand.value, operand.type)  # type: ignore[operator]
        return ir.Op("neg", (operand,), operand.type)

    def _e_Binary(self, node: ast.Binary, scope: _Scope) -> ir.TExpr:
        left = self._expr(node.left, scope)
        right = self._expr(node.right, scope)
        op = node.op
        if op in ("and", "or"):
            _expect(left, ("boolean",), node.left.pos, op.upper())
            _expect(right, ("boolean",), node.right.pos, op.upper())
            return ir.Op(op, (left, right), "boolean")
        if op in ("=", "!=", "<", "<=", ">", ">="):
            if not comparable(left.type, right.type):
                raise RuleError(f"cannot compare {left.type} with {right.type}", node.pos)
            if op not in ("=", "!=") and left.type not in ORDERED | {"null"}:
                raise RuleError(f"'{op}' needs ordered values, not {left.type}", node.pos)
            return ir.Op(op, (left, right), "boolean")
        if op == "||":
            _expect(left, ("string",), node.left.pos, "||")
            _expect(right, ("string",), node.right.pos, "||")
            return _fold(ir.Op("||", (left, right), "string"))
        return _fold(ir.Op(op, (left, right), _arith_type(op, left, right, node)))

    def _e_InList(self, node: ast.InList, scope: _Scope) -> ir.TExpr:
        operand = self._expr(node.operand, scope)
        items = tuple(self._expr(i, scope) for i in node.items)
        for item, src in zip(items, node.items, strict=True):
            if not comparable(operand.type, item.type):
                raise RuleError(f"IN list item is {item.type}, not {operand.type}", src.pos)
        return ir.InList(operand, items, node.negated)

    def _e_Between(self, node: ast.Between, scope: _Scope) -> ir.TExpr:
        operand = self._expr(node.operand, scope)
        low, high = self._expr(node.low, scope), self._expr(node.high, scope)
        for bound, src in ((low, node.low), (high, node.high)):
            if not comparable(operand.type, bound.type):
                raise RuleError(f"BETWEEN bound is {bound.type}, not {operand.type}", src.pos)
        return ir.Between(operand, low, high, node.negated)

    def _e_Like(self, node: ast.Like, scope: _Scope) -> ir.TExpr:
        operand = self._expr(node.operand, scope)
        _expect(operand, ("string",), node.operand.pos, "LIKE")
        pattern = self._expr(node.pattern, scope)
        if not (isinstance(pattern, ir.Const) and isinstance(pattern.value, str)):
            raise RuleError("LIKE needs a constant string pattern", node.pattern.pos)
        return ir.Like(operand, _like_regex(pattern.value), node.negated)

    def _e_IsNull(self, node: ast.IsNull, scope: _Scope) -> ir.TExpr:
        return ir.IsNull(self._expr(node.operand, scope), node.negated)

    def _e_Case(self, node: ast.Case, scope: _Scope) -> ir.TExpr:
        whens = []
        result_type = "null"
        for cond, value in node.whens:
            c = self._expr(cond, scope)
            _expect(c, ("boolean",), cond.pos, "WHEN")
            v = self._expr(value, scope)
            unified = unify(result_type, v.type)
            if unified is None:
                raise RuleError(f"CASE branches mix {result_type} and {v.type}", value.pos)
            result_type = unified
            whens.append((c, v))
        default = None
        if node.default is not None:
            default = self._expr(node.default, scope)
            unified = unify(result_type, default.type)
            if unified is None:
                raise RuleError(
                    f"CASE branches mix {result_type} and {default.type}", node.default.pos
                )
            result_type = unified
        return ir.CaseWhen(tuple(whens), default, result_type)

    def _e_Call(self, node: ast.Call, scope: _Scope) -> ir.TExpr:
        name = node.name
        if name in AGGREGATES:
            return self._aggregate(node, scope)
        if name in WINDOW_FUNCTIONS:
            return self._window_function(node, scope)
        if node.distinct:
            raise RuleError(f"DISTINCT is only meaningful in aggregates, not {name}()", node.pos)
        args = tuple(self._expr(a, scope) for a in node.args)
        if name == "coalesce":
            if not args:
                raise RuleError("coalesce() needs at least one argument", node.pos)
            t = "null"
            for a, src in zip(args, node.args, strict=True):
                unified = unify(t, a.type)
                if unified is None:
                    raise RuleError(f"coalesce() mixes {t} and {a.type}", src.pos)
                t = unified
            return ir.Coalesce(args, t)
        spec = signatures.lookup(name)
        if spec is None:
            known = set(signatures.SIGNATURES) | AGGREGATES | {"coalesce"}
            raise RuleError(
                f"unknown function '{name}'", node.pos, hint=did_you_mean(name, known)
            )
        if not spec.min_args <= len(args) <= spec.max_args:
            expected = (
                str(spec.min_args)
                if spec.min_args == spec.max_args
                else f"{spec.min_args} to {spec.max_args}"
            )
            raise RuleError(f"{name}() takes {expected} arguments, got {len(args)}", node.pos)
        try:
            result = spec.result_type([a.type for a in args])
        except TypeError as err:
            raise RuleError(f"{name}(): {err}", node.pos) from None
        return ir.Func(name, args, result)

    def _window_function(self, node: ast.Call, scope: _Scope) -> ir.TExpr:
        """``prev(n, e)``, ``prevtail(n, e)``, ``prevcount(e)``, ``prior(n, e)`` (Esper):
        values read off the trigger's data window, so only where aggregates are."""
        name = node.name
        if not scope.window_functions or scope.aggregate is None:
            raise RuleError(
                f"{name}() reads a data window: it is allowed only in SELECT and HAVING of a "
                "rule with a data window", node.pos,
                hint="e.g. SELECT prev(1, price) FROM S#groupwin(k)#length(5)",
            )
        fewest, most = WINDOW_FUNCTIONS[name]
        if not fewest <= len(node.args) <= most or node.distinct:
            usage = {"prev": "prev([n,] expr)", "prevtail": "prevtail([n,] expr)",
                     "prevcount": "prevcount(expr)", "prior": "prior(n, expr)"}[name]
            raise RuleError(f"wrong arguments for {name}()", node.pos, hint=f"write {usage}")
        n = 0 if name in ("prevtail", "prevcount") else 1
        if len(node.args) == 2:
            n = self._window_index(node.args[0], name)
        inner = _without_aggregates(scope.aggregate, "an aggregate's argument")
        arg = self._expr(node.args[-1], inner)
        return ir.Prev(name, n, arg, "long" if name == "prevcount" else arg.type)

    def _window_index(self, node: ast.Expr, name: str) -> int:
        """The constant index ``n`` of ``prev(n, e)`` and friends."""
        message = (f"the index of {name}() must be a whole-number constant from 0 to "
                   f"{MAX_WINDOW_INDEX}")
        try:
            index = self._expr(node, _Scope({}, ()))
        except RuleError:
            raise RuleError(message, node.pos) from None
        value = index.value if isinstance(index, ir.Const) else None
        if not (index.type in INTEGRAL and isinstance(value, int)
                and 0 <= value <= MAX_WINDOW_INDEX):
            raise RuleError(message, node.pos)
        return value

    def _aggregate(self, node: ast.Call, scope: _Scope) -> ir.TExpr:
        name = node.name
        if scope.aggregate is None:
            raise RuleError(
                f"aggregate function {name}() is not allowed here", node.pos,
                hint=scope.aggregate_hint,
            )
        if node.distinct:
            raise RuleError(f"{name}(DISTINCT ...) is not supported", node.pos)
        inner = _without_aggregates(scope.aggregate, "an aggregate's argument")
        if name == "count" and len(node.args) == 1 and isinstance(node.args[0], ast.Star):
            return ir.Agg("count", None, "long")
        if len(node.args) != 1:
            raise RuleError(f"{name}() takes one argument", node.pos)
        arg = self._expr(node.args[0], inner)
        t = arg.type
        if name == "count":
            return ir.Agg("count", arg, "long")
        if name in ("sum", "avg", "stddev"):
            if not is_numeric(t):
                raise RuleError(f"{name}() needs a number, not {t}", node.args[0].pos)
            if name == "sum":
                return ir.Agg("sum", arg, "long" if t in INTEGRAL else "double")
            return ir.Agg(name, arg, "double")
        if name in ("min", "max") and t not in NUMERIC | {"timestamp", "null"}:
            raise RuleError(f"{name}() needs a number or timestamp, not {t}", node.args[0].pos)
        return ir.Agg(name, arg, t)


# ---------------------------------------------------------------- helpers


def _without_aggregates(scope: _Scope, clause: str) -> _Scope:
    """The same scope with aggregates forbidden, saying where (for the hint)."""
    if scope.aggregate is None and clause != "an aggregate's argument":
        return scope
    hint = f"aggregate functions are not allowed in {clause}"
    if clause == "WHERE":
        hint += "; use HAVING"
    return _Scope(
        scope.qualifiers,
        scope.bare,
        scope.repeated,
        None,
        hint,
        scope.outside_aggregate_only if clause == "SELECT" else frozenset(),
        scope.forbidden_hint,
    )


@dataclass
class _Stage:
    """The rules and the partition key of one stage while checking."""

    derived: list[ir.DerivedRule] = field(default_factory=list)
    stateful: list[ir.StatefulRule] = field(default_factory=list)
    key: str | None = None
    key_owner: tuple[str, Pos] | None = None
    unkeyed_owner: tuple[str, Pos] | None = None


def _source_streams(stmt: ast.SelectStatement) -> list[str]:
    """The streams named in a rule's FROM clause (pattern atoms included)."""
    names: list[str] = []
    todo: list[object] = list(stmt.sources)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.StreamSource | ast.PatAtom | ast.RecognizeSource):
            names.append(node.stream)
        elif isinstance(node, ast.PatTimer):
            continue
        elif isinstance(node, ast.PatternSource):
            todo.append(node.pattern)
        elif hasattr(node, "operand"):
            todo.append(node.operand)
            if getattr(node, "until", None) is not None:
                todo.append(node.until)
        else:
            todo.extend((node.left, node.right))  # type: ignore[attr-defined]
    return names


def _rule_streams(rule: ir.StatefulRule) -> tuple[str, ...]:
    """The streams a stateful rule reads."""
    if isinstance(rule, ir.WindowRule):
        return (rule.stream,)
    if isinstance(rule, ir.JoinRule):
        return (rule.trigger_stream, rule.window_stream)
    return rule.streams


def _unique_on(window: ir.WindowSpec, key: str) -> bool:
    """Whether a shared ``#unique`` window splits by ``key`` anyway (it is one of its
    expressions), so that GROUP BY key gives each key its own window."""
    return window.kind == "unique" and any(
        isinstance(e, ir.FieldRef) and e.name == key for e in window.unique_by)


def _expect(expr: ir.TExpr, types: tuple[str, ...], pos: Pos, what: str) -> None:
    if expr.type not in types and expr.type != "null":
        raise RuleError(f"{what} needs {' or '.join(types)}, not {expr.type}", pos)


def _arith_type(op: str, left: ir.TExpr, right: ir.TExpr, node: ast.Binary) -> str:
    lt, rt = left.type, right.type
    if lt == "timestamp" or rt == "timestamp":
        if op == "-" and lt == rt == "timestamp":
            return "duration"
        if op in ("+", "-") and lt == "timestamp" and rt in ("duration", "null"):
            return "timestamp"
        raise RuleError(f"cannot apply '{op}' to {lt} and {rt}", node.pos)
    if "duration" in (lt, rt):
        if op in ("+", "-") and {lt, rt} <= {"duration", "null"}:
            return "duration"
        if op in ("*", "/") and (lt in INTEGRAL or rt in INTEGRAL):
            return "duration"
        raise RuleError(f"cannot apply '{op}' to {lt} and {rt}", node.pos)
    if not (is_numeric(lt) and is_numeric(rt)):
        bad = lt if not is_numeric(lt) else rt
        raise RuleError(f"'{op}' needs numbers, not {bad}", node.pos)
    if op == "/":
        return "double"
    return numeric_result(lt, rt) if "null" not in (lt, rt) else (lt if rt == "null" else rt)


def _fold(expr: ir.Op) -> ir.TExpr:
    """Fold arithmetic on constants (window sizes like ``2 * H`` need it)."""
    if not all(isinstance(a, ir.Const) for a in expr.args):
        return expr
    values = [a.value for a in expr.args]  # type: ignore[union-attr]
    if any(v is None for v in values):
        return ir.Const(None, expr.type)
    a, b = values
    try:
        result = {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: a / b,
            "%": lambda: a % b,
            "||": lambda: a + b,
        }[expr.op]()
    except (ZeroDivisionError, TypeError, OverflowError):
        return expr
    if expr.type in INTEGRAL or expr.type == "duration":
        if isinstance(result, float):
            return expr
        result = int(result)
    return ir.Const(result, expr.type)


def _duration_us(arg: ir.Const, pos: Pos) -> int:
    """A duration literal, or a number of seconds (Esper's convention)."""
    if arg.type == "duration":
        return int(arg.value)  # type: ignore[call-overload]
    if arg.type in NUMERIC:
        return round(float(arg.value) * MICROS_PER_SECOND)  # type: ignore[arg-type]
    raise RuleError(f"expected a time period such as 10 min, not {arg.type}", pos)


def _like_regex(pattern: str) -> str:
    """A LIKE pattern as a regular expression for ``fullmatch`` that never backtracks
    more than linearly.

    The plain translation (``%`` → ``.*``) lets ``'%a%a%a%a%a%b'`` take minutes on an
    80-character text. Between two ``%`` a piece has a fixed length, so its leftmost
    occurrence is as good as any later one: each middle piece is found with a lazy scan
    in an atomic group, which commits to that occurrence. Only the last ``.*`` backtracks.
    """
    pieces = ["".join("." if ch == "_" else re.escape(ch) for ch in piece)
              for piece in pattern.split("%")]
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>.*?{piece})" for piece in pieces[1:-1] if piece)
    return f"{pieces[0]}{middle}.*{pieces[-1]}"


def _conjuncts(expr: ast.Expr | None) -> Iterable[ast.Expr]:
    if expr is None:
        return
    if isinstance(expr, ast.Binary) and expr.op == "and":
        yield from _conjuncts(expr.left)
        yield from _conjuncts(expr.right)
    else:
        yield expr


def _and_all(conds: list[ir.TExpr]) -> ir.TExpr | None:
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = ir.Op("and", (out, c), "boolean")
    return out


def _qualifiers(expr: ir.TExpr) -> set[str]:
    """The qualifiers an expression reads."""
    if isinstance(expr, ir.FieldRef):
        return {expr.qualifier}
    out: set[str] = set()
    for child in ir.children(expr):
        out |= _qualifiers(child)
    return out


def _is_key_equality(cond: ir.TExpr, a: str, b: str, key: str) -> bool:
    if not (isinstance(cond, ir.Op) and cond.op == "="):
        return False
    left, right = cond.args
    if not (isinstance(left, ir.FieldRef) and isinstance(right, ir.FieldRef)):
        return False
    return {left.qualifier, right.qualifier} == {a, b} and left.name == right.name == key


def _tags_of(node: ast.Pattern) -> set[str]:
    if isinstance(node, ast.PatAtom):
        return {node.tag} if node.tag else set()
    if isinstance(node, ast.PatTimer):
        return set()
    if isinstance(node, ast.PatNot):
        return set()  # a 'not' binds nothing usable later
    if isinstance(node, ast.PatRepeat) and node.until is not None:
        return _tags_of(node.operand) | _tags_of(node.until)
    if isinstance(node, ast.PatEvery | ast.PatRepeat | ast.PatWithin):
        return _tags_of(node.operand)
    return _tags_of(node.left) | _tags_of(node.right)


def _first_timer(node: ast.Pattern) -> ast.PatTimer | None:
    """The first ``timer:interval`` inside a pattern, if any."""
    if isinstance(node, ast.PatTimer):
        return node
    if isinstance(node, ast.PatAtom):
        return None
    parts = [node.operand] if hasattr(node, "operand") else [node.left, node.right]  # type: ignore[union-attr]
    if getattr(node, "until", None) is not None:
        parts.append(node.until)  # type: ignore[union-attr]
    return next((t for t in map(_first_timer, parts) if t is not None), None)


def _starts_with_timer(node: ast.Pattern) -> bool:
    """Whether a pattern can complete before any event: it starts with a timer."""
    if isinstance(node, ast.PatTimer):
        return True
    if isinstance(node, ast.PatFollowedBy):
        return _starts_with_timer(node.left)
    if isinstance(node, ast.PatAnd | ast.PatOr):
        return _starts_with_timer(node.left) or _starts_with_timer(node.right)
    return isinstance(node, ast.PatEvery | ast.PatRepeat) and _starts_with_timer(node.operand)


def _refuse_growing_every(root: ast.Pattern) -> None:
    """Refuse an ``every x`` whose x can match more than once: its state has no bound.

    Such an ``every`` keeps each instance of x that matched (it may match again) and starts
    a fresh one besides (Esper's rule, see ``cep.engine.patterns``), so each match adds an
    instance and none ever leaves: one that runs out of WITHIN or the state time-to-live is
    restarted, not dropped, so neither bounds it (``every every a`` doubles at each a). The
    operands of ``[n]`` and ``not`` are not searched: ``[n]`` ends at its n-th match and
    ``not`` at its first, which bounds whatever grows inside them.
    """
    node = _growing_every(root)
    if node is not None:
        raise RuleError(
            "'every' over a pattern that can match more than once (it contains 'every') "
            "gains an instance at each match and never drops one, even with WITHIN: its "
            "state grows without bound",
            node.pos,
            hint="'every every a' is not 'every a' (it doubles at each a): write 'every a'; "
            "for 'every (a -> every b)' write 'every a -> every b'",
        )


def _growing_every(node: ast.Pattern) -> ast.PatEvery | None:
    """The outermost ``every`` over a pattern that matches repeatedly, outside ``[n]`` and
    ``not`` (see `_refuse_growing_every`)."""
    if isinstance(node, ast.PatAtom | ast.PatRepeat | ast.PatNot | ast.PatTimer):
        return None
    if isinstance(node, ast.PatEvery):
        return node if _matches_repeatedly(node.operand) else _growing_every(node.operand)
    return _growing_every(node.left) or _growing_every(node.right)


def _matches_repeatedly(node: ast.Pattern) -> bool:
    """Whether one instance of the pattern can match more than once: it contains an
    ``every`` outside ``[n]`` and ``not``, which complete at most once themselves."""
    if isinstance(node, ast.PatEvery):
        return True
    if isinstance(node, ast.PatAtom | ast.PatRepeat | ast.PatNot | ast.PatTimer):
        return False
    return _matches_repeatedly(node.left) or _matches_repeatedly(node.right)


def _schema_type(t: str) -> str:
    return {"null": "string", "duration": "long"}.get(t, t)


def _fmt_fields(fields: tuple[tuple[str, str], ...]) -> str:
    return "(" + ", ".join(f"{n} {t}" for n, t in fields) + ")"


def _source_slice(source: str, pos: Pos) -> str:
    lines = source.split("\n")
    if not (1 <= pos.line <= len(lines)) or pos.end_line < pos.line:
        return "expr"
    if pos.end_line == pos.line:
        text = lines[pos.line - 1][pos.column - 1 : pos.end_column - 1]
    else:
        parts = [lines[pos.line - 1][pos.column - 1 :]]
        parts += lines[pos.line : pos.end_line - 1]
        parts.append(lines[pos.end_line - 1][: pos.end_column - 1])
        text = " ".join(parts)
    return " ".join(text.split()) or "expr"


def _parse_override(name: str, t: str, raw: str) -> object:
    """Turn a ``--set name=value`` string into a value of the variable's type."""
    try:
        if t in INTEGRAL:
            return int(raw)
        if t == "double":
            return float(raw)
        if t == "boolean":
            low = raw.strip().lower()
            if low not in ("true", "false"):
                raise ValueError
            return low == "true"
        if t == "string":
            return raw
    except ValueError:
        pass
    raise RuleError(f"--set {name}={raw}: '{raw}' is not a valid {t}")


def _field_source(f: ast.FieldDecl, ftype: str) -> ir.FieldSource | None:
    """A schema field's FROM paths and FORMAT, checked (None if it declares neither)."""
    for text, pos in zip(f.paths, f.paths_pos, strict=True):
        try:
            split_path(text)
        except ValueError as err:
            raise RuleError(str(err), pos) from None
    if f.format is not None:
        if ftype != "timestamp":
            raise RuleError(f"FORMAT is for timestamp fields; '{f.name}' is {ftype}",
                            f.format_pos or f.pos)
        try:
            to_strptime(f.format)
        except ValueError as err:
            raise RuleError(
                f"bad timestamp format '{f.format}': {err}", f.format_pos or f.pos,
                hint="FORMAT 'epoch_s', 'epoch_ms', 'epoch_us', 'iso', or a pattern such as "
                     "'yyyy-MM-dd HH:mm:ss' or '%Y-%m-%d %H:%M:%S'",
            ) from None
    if not f.paths and f.format is None:
        return None
    return ir.FieldSource(f.paths or (f.name,), f.format)
