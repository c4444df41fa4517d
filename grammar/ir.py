"""The checked intermediate representation: what the engine operators execute.

The checker (``check.py``) builds it from the AST after resolving every name, typing every
expression and classifying every rule. Variables are already replaced by their values
(defaults or ``--set`` overrides), window sizes are plain integers, and each rule knows
its kind, its input stream(s) and the partition key. Nothing here refers to positions
or rule text any more, except the names used in output.

Expression nodes are typed (``.type``). Field references name a *qualifier*: ``""`` for
the single stream of a one-stream rule, the alias of a stream in a ``#lastevent`` join, or
the tag of a pattern event. The engine resolves ``(qualifier, name)`` against the frame
it evaluates on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Union

# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Const:
    value: object
    type: str


@dataclass(frozen=True)
class FieldRef:
    """A field of the event bound to ``qualifier`` (``index`` set for ``tag[i].f``)."""

    qualifier: str
    name: str
    type: str
    index: int | None = None


@dataclass(frozen=True)
class Func:
    """A scalar function (``grammar.signatures``; its implementation in
    ``cep.engine.functions``), null in → null out."""

    name: str
    args: tuple[TExpr, ...]
    type: str


@dataclass(frozen=True)
class Coalesce:
    """The first non-null argument."""

    args: tuple[TExpr, ...]
    type: str


@dataclass(frozen=True)
class Agg:
    """An aggregate over the rule's window rows; ``arg`` is None for ``count(*)``;
    ``by`` is the second argument of MATCH_RECOGNIZE's ``max_by(arg, by)`` and
    ``min_by`` (the value that picks the row whose ``arg`` is the result)."""

    name: str
    arg: TExpr | None
    type: str
    by: TExpr | None = None


@dataclass(frozen=True)
class Prev:
    """Esper's data-window access, one value per triggering event (like an aggregate).

    ``kind`` ``prev``: the n-th newest row of the trigger's window (0 is the newest, the
    trigger itself in a sliding window); ``prevtail``: the n-th oldest; ``prevcount``: the
    window's row count (``arg`` unused, ``n`` 0); ``prior``: the n-th event of the key's
    stream before the trigger, whatever the window holds. NULL where no such row exists.
    """

    kind: str
    n: int
    arg: TExpr
    type: str


@dataclass(frozen=True)
class Op:
    """Unary (``neg``, ``not``) and binary operators with SQL three-valued logic."""

    op: str
    args: tuple[TExpr, ...]
    type: str


@dataclass(frozen=True)
class InList:
    operand: TExpr
    items: tuple[TExpr, ...]
    negated: bool
    type: str = "boolean"


@dataclass(frozen=True)
class Between:
    operand: TExpr
    low: TExpr
    high: TExpr
    negated: bool
    type: str = "boolean"


@dataclass(frozen=True)
class Like:
    """``LIKE`` with a constant pattern, already translated to a regular expression
    (``pattern`` is the one the rule wrote, for descriptions)."""

    operand: TExpr
    regex: str
    negated: bool
    type: str = "boolean"
    pattern: str = ""


@dataclass(frozen=True)
class IsNull:
    operand: TExpr
    negated: bool
    type: str = "boolean"


@dataclass(frozen=True)
class CaseWhen:
    whens: tuple[tuple[TExpr, TExpr], ...]
    default: TExpr | None
    type: str


TExpr = Union[  # noqa: UP007
    Const, FieldRef, Func, Coalesce, Agg, Prev, Op, InList, Between, Like, IsNull, CaseWhen,
]


def children(expr: TExpr) -> list[TExpr]:
    """The direct sub-expressions of a node (walkers use it instead of matching types)."""
    if isinstance(expr, Func | Coalesce | Op):
        return list(expr.args)
    if isinstance(expr, Agg):
        return [x for x in (expr.arg, expr.by) if x is not None]
    if isinstance(expr, Prev):
        return [expr.arg]
    if isinstance(expr, InList):
        return [expr.operand, *expr.items]
    if isinstance(expr, Between):
        return [expr.operand, expr.low, expr.high]
    if isinstance(expr, Like | IsNull):
        return [expr.operand]
    if isinstance(expr, CaseWhen):
        out = [x for pair in expr.whens for x in pair]
        return [*out, expr.default] if expr.default is not None else out
    return []

# ---------------------------------------------------------------- streams


@dataclass(frozen=True)
class StreamDef:
    """An event type: declared by CREATE SCHEMA or derived by INSERT INTO.

    ``sources`` says where input fields are read from (``FROM`` paths, ``FORMAT``), for
    the fields that say it; the others read their own name with no format.
    ``lateness_us`` is the schema's ``LATENESS`` (None: not declared)."""

    name: str
    fields: tuple[tuple[str, str], ...]
    timestamp: str | None
    derived: bool = False
    sources: tuple[tuple[str, FieldSource], ...] = ()
    lateness_us: int | None = None

    def field_type(self, name: str) -> str | None:
        return dict(self.fields).get(name)

    def source(self, name: str) -> FieldSource:
        """Where field ``name`` is read from."""
        return dict(self.sources).get(name) or FieldSource((name,))


@dataclass(frozen=True)
class FieldSource:
    """Where an input field's value comes from: record paths tried in order, the first
    with a (non-null) value winning, a dot descending into a nested JSON object; and,
    for a timestamp, its format (see ``grammar.format_syntax``; None: ISO-8601, epoch
    milliseconds or Twitter's ``created_at``)."""

    paths: tuple[str, ...]
    format: str | None = None


@dataclass(frozen=True)
class Column:
    """One output column: its name and the expression that computes it."""

    name: str
    expr: TExpr


# ---------------------------------------------------------------- windows and patterns


@dataclass(frozen=True)
class WindowSpec:
    """``kind`` in length, length_batch, time, time_batch, keepall, firstlength, firsttime,
    time_length_batch, unique; ``size`` is a count or microseconds (0 for keepall and
    unique). ``limit`` is the event count of ``time_length_batch(T, n)``; ``unique_by``
    the expressions of ``unique(e, ...)`` (see ``cep.engine.windows.kinds``).

    ``ttl_us`` (only on ``keepall``, from the state time-to-live option) bounds a window
    that has no bound of its own: a row leaves once its key's event time is ``ttl_us``
    past it, exactly as in ``#time(ttl)``."""

    kind: str
    size: int
    ttl_us: int | None = None
    limit: int = 0
    unique_by: tuple[TExpr, ...] = ()

    @property
    def is_batch(self) -> bool:
        return self.kind in ("length_batch", "time_batch", "time_length_batch")

    @property
    def is_time(self) -> bool:
        return self.kind in ("time", "time_batch", "firsttime", "time_length_batch")


@dataclass(frozen=True)
class PAtom:
    """``tag=Stream(filter)``; ``local_filter`` only reads this event, ``bound_filter``
    also reads earlier tags (evaluated per candidate event)."""

    tag: str
    stream: str
    local_filter: TExpr | None
    bound_filter: TExpr | None


@dataclass(frozen=True)
class PFollowedBy:
    left: PNode
    right: PNode


@dataclass(frozen=True)
class PAnd:
    left: PNode
    right: PNode


@dataclass(frozen=True)
class POr:
    left: PNode
    right: PNode


@dataclass(frozen=True)
class PNot:
    operand: PNode


@dataclass(frozen=True)
class PEvery:
    operand: PNode


@dataclass(frozen=True)
class PRepeat:
    """Match-until: ``count`` to ``high`` (None: no bound) completions of ``operand``,
    ended early by ``until`` (see ``cep.engine.patterns.interpreter``)."""

    count: int
    operand: PNode
    high: int | None = None
    until: PNode | None = None


@dataclass(frozen=True)
class PTimer:
    """``timer:interval``: microseconds of event time (see ``cep.engine.patterns.interpreter``)."""

    us: int


PNode = Union[PAtom, PFollowedBy, PAnd, POr, PNot, PEvery, PRepeat, PTimer]  # noqa: UP007

# ---------------------------------------------------------------- rules


@dataclass(frozen=True)
class OutputLimit:
    """``OUTPUT [ALL|FIRST|LAST|SNAPSHOT] EVERY n EVENTS`` (``events``) or ``EVERY T``
    (``period_us``), per key; see ``cep.engine.rate.limit`` for the semantics."""

    kind: str
    events: int | None
    period_us: int | None


@dataclass(frozen=True)
class DerivedRule:
    """A stateless rule: filter and project each event of ``stream``.

    With ``target`` set it feeds that derived stream (INSERT INTO) and outputs nothing;
    without it each passing event is an output row."""

    name: str
    stream: str
    filter: TExpr | None
    columns: tuple[Column, ...]
    target: str | None


@dataclass(frozen=True)
class WindowRule:
    """A one-stream rule with a data window and aggregates, evaluated per arriving event
    (sliding windows) or per closed batch (batch windows), per key."""

    name: str
    stream: str
    filter: TExpr | None
    window: WindowSpec
    where: TExpr | None
    having: TExpr | None
    columns: tuple[Column, ...]
    key: str | None
    output: OutputLimit | None = None
    target: str | None = None  # INSERT INTO: the rows are events of this next-stage stream


@dataclass(frozen=True)
class JoinRule:
    """``S#lastevent AS LE, W#groupwin(k)#win AS TW WHERE LE.k = TW.k``: each arriving
    ``trigger_stream`` event against the window rows of its key that came before it."""

    name: str
    trigger_stream: str
    trigger_alias: str
    trigger_filter: TExpr | None
    trigger_where: TExpr | None
    window_stream: str
    window_alias: str
    window_filter: TExpr | None
    window: WindowSpec
    pair_where: TExpr | None
    having: TExpr | None
    columns: tuple[Column, ...]
    key: str | None
    output: OutputLimit | None = None
    target: str | None = None  # INSERT INTO: the rows are events of this next-stage stream


@dataclass(frozen=True)
class PatternRule:
    """``SELECT ... FROM PATTERN [...] PARTITION BY k``: one output row per match.

    ``ttl_us`` (only without WITHIN, from the state time-to-live option) bounds how long a
    partial match is kept: the pattern runs as if it had ``WITHIN ttl``."""

    name: str
    pattern: PNode
    within_us: int | None
    streams: tuple[str, ...]
    tags: tuple[str, ...]
    repeated_tags: tuple[str, ...]
    where: TExpr | None
    columns: tuple[Column, ...]
    key: str | None
    ttl_us: int | None = None
    output: OutputLimit | None = None
    target: str | None = None  # INSERT INTO: the rows are events of this next-stage stream

    @property
    def horizon_us(self) -> int | None:
        """How long a partial match may live: WITHIN, else the TTL, else for ever."""
        return self.within_us if self.within_us is not None else self.ttl_us


@dataclass(frozen=True)
class RPattern:
    """A MATCH_RECOGNIZE row pattern (see ``ast.RowPattern``)."""

    kind: str
    name: str | None = None
    items: tuple[RPattern, ...] = ()
    low: int = 1
    high: int | None = 1
    greedy: bool = True


@dataclass(frozen=True)
class MatchRecognizeRule:
    """``S MATCH_RECOGNIZE (...)``: per partition key, one output row per match (``rows``
    ``one``) or one per row of each match (``all``; ``empty``: ``show`` or ``omit`` empty
    matches, or ``unmatched``: also the rows no match took).

    ``defines`` read the candidate row as its variable's qualifier, ``__prev{n}`` /
    ``__next{n}`` as the partition's row n before / after, and other rows through
    navigation qualifiers
    (``grammar.row_nav``); ``measures`` read rows through navigation qualifiers and
    aggregate over one variable's rows (``__all``: every row; ``count(*)``: all rows of
    the match), RUNNING or FINAL as each navigation qualifier and aggregate argument
    says (``grammar.row_nav``); ``final`` names the measures written with FINAL at their
    start, for describing the rule (their navigations and aggregates say it too); ``columns`` (the
    SELECT list) read the measures, and with ALL ROWS PER MATCH the row's fields.
    ``skip`` is AFTER MATCH SKIP's kind (``to first``/``to last`` of ``skip_var``, a
    variable or one of SUBSET's ``unions``: name and variables). See
    ``cep.engine.row_patterns.rule``."""

    name: str
    stream: str
    filter: TExpr | None
    variables: tuple[str, ...]
    pattern: RPattern
    defines: tuple[tuple[str, TExpr], ...]
    measures: tuple[Column, ...]
    columns: tuple[Column, ...]
    skip: str
    within_us: int | None
    prev_depth: int
    key: str | None
    output: OutputLimit | None = None
    target: str | None = None
    skip_var: str | None = None
    rows: str = "one"
    empty: str = "show"
    final: tuple[str, ...] = ()
    unions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def streams(self) -> tuple[str, ...]:
        return (self.stream,)

    @property
    def waits_for_the_end(self) -> bool:
        """Whether the pattern has ``$``: its matches end only at the end of the input,
        which an unbounded run never reaches."""
        def has_end(node: RPattern) -> bool:
            return node.kind == "end" or any(has_end(item) for item in node.items)
        return has_end(self.pattern)


StatefulRule = Union[WindowRule, JoinRule, PatternRule, MatchRecognizeRule]  # noqa: UP007
Rule = Union[DerivedRule, WindowRule, JoinRule, PatternRule, MatchRecognizeRule]  # noqa: UP007


@dataclass(frozen=True)
class Variable:
    name: str
    type: str
    value: object


@dataclass(frozen=True)
class Stage:
    """A later stage of an INSERT INTO chain (hierarchical detection).

    A stateful rule with a ``target`` outputs no rows to the sink: its rows are the events
    of that stream, which belongs to the next stage. A stage's rules read those streams
    (and any earlier ones); it runs after the previous stage, on its own partition key:
    its stateless rules, then its stateful rules, exactly like stage 0 (the module's own
    ``derived``/``stateful``/``key``). ``CompiledModule.stage_modules`` gives each stage
    as a module, and ``cep.engine.insert_into`` turns a stage's output rows into the next
    stage's events."""

    key: str | None
    derived: tuple[DerivedRule, ...]
    stateful: tuple[StatefulRule, ...]


@dataclass(frozen=True)
class RuleSource:
    """What a module was compiled from: its file's name and text, the ``--set`` values and
    the state time-to-live. A running job keeps it in its run directory, so that rules
    deployed later (``grammar.rule_set``) are composed onto the very text it started with,
    not onto a file that may have been edited since."""

    source_name: str
    text: str
    overrides: tuple[tuple[str, str], ...] = ()
    state_ttl_us: int | None = None


@dataclass(frozen=True)
class CompiledModule:
    """A checked rule file, ready to run.

    ``derived`` rules run before routing, in statement order; ``stateful`` rules run in
    the engines; ``outputs`` are the names of every rule that emits output rows."""

    source_name: str
    streams: dict[str, StreamDef]
    input_streams: tuple[str, ...]
    variables: dict[str, Variable]
    derived: tuple[DerivedRule, ...]
    stateful: tuple[StatefulRule, ...]
    key: str | None
    outputs: tuple[str, ...] = field(default=())
    stages: tuple[Stage, ...] = ()  # the stages after this one, in order
    origin: RuleSource | None = field(default=None, compare=False)  # what it was compiled from

    def stage_modules(self) -> list[CompiledModule]:
        """Stage 0 (this module's own rules) and each later stage as a module of its
        own, without later stages: what one routing + engine pass runs. A later stage
        reads every stream as an input (earlier stages produced them)."""
        first = dataclasses.replace(self, stages=())
        later = [
            dataclasses.replace(self, stages=(), derived=s.derived, stateful=s.stateful,
                                key=s.key, input_streams=tuple(self.streams))
            for s in self.stages
        ]
        return [first, *later]

    @property
    def lateness_us(self) -> int:
        """The rule file's one lateness: the largest LATENESS its schemas declare (0 if
        none). The watermark trails the input's largest timestamp by this much."""
        return max((self.streams[s].lateness_us or 0 for s in self.input_streams
                    if s in self.streams), default=0)

    def inserting_rules(self) -> dict[str, str]:
        """Stateful rules (of every stage) whose rows are events: rule → target stream."""
        rules = [*self.stateful, *(r for s in self.stages for r in s.stateful)]
        return {r.name: r.target for r in rules if r.target is not None}

    def stateful_streams(self) -> tuple[str, ...]:
        """Streams the engines need, in a stable order."""
        seen: dict[str, None] = {}
        for rule in self.stateful:
            if isinstance(rule, WindowRule):
                seen[rule.stream] = None
            elif isinstance(rule, JoinRule):
                seen[rule.trigger_stream] = None
                seen[rule.window_stream] = None
            else:
                for s in rule.streams:
                    seen[s] = None
        return tuple(seen)
