"""The syntax tree of a rule file: small frozen dataclasses, built only by the parser.

The parser produces exactly these nodes and nothing else; the checker (``check.py``) turns
them into the executable IR. Both window spellings (``#length(n)`` and ``.win:length(n)``)
and both WITHIN spellings (``WITHIN T`` and ``where timer:within(T)``) end up as the same
nodes, so dialect differences stop at the parser.

Conventions:
* every node has ``pos`` (start/end line and column of its text);
* keywords are case-insensitive and are stored lower-cased (operators, window kinds,
  type names, function names); identifiers (streams, fields, aliases, variables) keep
  their case;
* time periods (``10 min``, ``1 hour 30 sec``) are ``Literal`` nodes of type
  ``"duration"`` whose value is an ``int`` number of microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from grammar.errors import Pos

# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Literal:
    """A constant. ``type`` is one of int, long, double, string, boolean, null, duration.

    Integer literals that fit in 32 bits are ``int``, larger ones ``long``; a ``duration``
    value is an int number of microseconds.
    """

    value: object
    type: str
    pos: Pos


@dataclass(frozen=True)
class Name:
    """A bare identifier: a field of the rule's only stream, a variable, or a pattern tag."""

    name: str
    pos: Pos


@dataclass(frozen=True)
class Attr:
    """``base.name``: a field of a stream alias or pattern tag (``LE.text``, ``a.ts``)."""

    base: str
    name: str
    pos: Pos


@dataclass(frozen=True)
class IndexedAttr:
    """``base[index].name``: a field of the index-th event of a repeated pattern tag."""

    base: str
    index: int
    name: str
    pos: Pos


@dataclass(frozen=True)
class Star:
    """``*`` inside ``count(*)``, or ``SELECT *`` / ``SELECT alias.*`` (``base`` set)."""

    pos: Pos
    base: str | None = None


@dataclass(frozen=True)
class Unary:
    """``-x`` (op ``"-"``) or ``NOT x`` (op ``"not"``)."""

    op: str
    operand: Expr
    pos: Pos


@dataclass(frozen=True)
class Binary:
    """Arithmetic (``+ - * / %``), string concatenation (``||``), comparison
    (``= != < <= > >=``; ``<>`` is stored as ``!=``) and logic (``and``, ``or``)."""

    op: str
    left: Expr
    right: Expr
    pos: Pos


@dataclass(frozen=True)
class InList:
    """``x [NOT] IN (a, b, ...)``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class Between:
    """``x [NOT] BETWEEN low AND high`` (inclusive on both ends, as in SQL)."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class Like:
    """``x [NOT] LIKE pattern`` with SQL wildcards ``%`` and ``_``."""

    operand: Expr
    pattern: Expr
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class IsNull:
    """``x IS [NOT] NULL``."""

    operand: Expr
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class Case:
    """``CASE WHEN c THEN v ... [ELSE e] END`` (searched form only)."""

    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None
    pos: Pos


@dataclass(frozen=True)
class Call:
    """A function or aggregate call; ``name`` is lower-cased.

    ``count(*)`` has ``args == (Star(...),)``; ``count(DISTINCT x)`` has ``distinct``.
    """

    name: str
    args: tuple[Expr, ...]
    distinct: bool
    pos: Pos


@dataclass(frozen=True)
class Semantics:
    """``RUNNING call`` or ``FINAL call`` (``mode`` lower-cased): SQL:2016's semantics of
    one row pattern navigation or aggregate in MATCH_RECOGNIZE; the checker refuses it
    anywhere else."""

    mode: str
    call: Call
    pos: Pos


Expr = Union[  # noqa: UP007 - a runtime alias used in isinstance-free type hints
    Literal, Name, Attr, IndexedAttr, Star, Unary, Binary, InList, Between, Like, IsNull,
    Case, Call, Semantics,
]

# ---------------------------------------------------------------- FROM clause


@dataclass(frozen=True)
class Window:
    """One data-window view on a stream.

    ``kind`` is one of ``length``, ``length_batch``, ``time``, ``time_batch``,
    ``lastevent``, ``groupwin`` (``args`` are the key expressions), ``keepall`` and
    ``ext_timed`` (Esper's ``#time`` on an explicit timestamp: ``args`` are the
    timestamp field and the size).
    """

    kind: str
    args: tuple[Expr, ...]
    pos: Pos


@dataclass(frozen=True)
class StreamSource:
    """``Stream[(filter)][#window...] [AS alias]``."""

    stream: str
    filter: Expr | None
    windows: tuple[Window, ...]
    alias: str | None
    pos: Pos


@dataclass(frozen=True)
class PatAtom:
    """``[tag=]Stream[(filter)]`` inside a pattern."""

    tag: str | None
    stream: str
    filter: Expr | None
    pos: Pos


@dataclass(frozen=True)
class PatFollowedBy:
    """``left -> right``."""

    left: Pattern
    right: Pattern
    pos: Pos


@dataclass(frozen=True)
class PatAnd:
    """``left and right``: both occur, in any order."""

    left: Pattern
    right: Pattern
    pos: Pos


@dataclass(frozen=True)
class PatOr:
    """``left or right``: either occurs."""

    left: Pattern
    right: Pattern
    pos: Pos


@dataclass(frozen=True)
class PatNot:
    """``not operand``: true until the operand occurs."""

    operand: Pattern
    pos: Pos


@dataclass(frozen=True)
class PatEvery:
    """``every operand``: restart the operand each time it matches."""

    operand: Pattern
    pos: Pos


@dataclass(frozen=True)
class PatRepeat:
    """Esper's match-until: ``[count] operand``, ``[count:high] operand`` (``high`` None:
    ``[count:]``; ``[:high]`` has count 0), optionally ``until`` another pattern, and
    ``operand until other`` (count 0, no high)."""

    count: int
    operand: Pattern
    pos: Pos
    high: int | None = None
    until: Pattern | None = None


@dataclass(frozen=True)
class PatTimer:
    """``timer:interval(duration)``: completes once event time passes the duration."""

    duration: Expr
    pos: Pos


@dataclass(frozen=True)
class PatWithin:
    """``operand WITHIN duration`` or ``operand where timer:within(duration)``.

    ``duration`` is an expression (a duration literal, a number of seconds or a
    variable)."""

    operand: Pattern
    duration: Expr
    pos: Pos


Pattern = Union[  # noqa: UP007
    PatAtom, PatFollowedBy, PatAnd, PatOr, PatNot, PatEvery, PatRepeat, PatWithin, PatTimer,
]


def pattern_operands(node: Pattern) -> tuple[Pattern, ...]:
    """The patterns directly inside a pattern node (none in an atom or a timer)."""
    if isinstance(node, PatAtom | PatTimer):
        return ()
    if isinstance(node, PatFollowedBy | PatAnd | PatOr):
        return (node.left, node.right)
    if isinstance(node, PatRepeat) and node.until is not None:
        return (node.operand, node.until)
    return (node.operand,)


@dataclass(frozen=True)
class PatternSource:
    """``PATTERN [ pattern ] [AS alias]`` in a FROM clause."""

    pattern: Pattern
    alias: str | None
    pos: Pos


@dataclass(frozen=True)
class RowPattern:
    """A MATCH_RECOGNIZE pattern: ``kind`` ``var`` (``name``), ``seq`` and ``alt``
    (``items``), ``repeat`` (``items[0]`` from ``low`` to ``high`` times, None: no
    bound; ``greedy`` False for the reluctant forms ``*? +? ?? {n,m}?``), ``empty``
    (``()``: no row), ``exclude`` (``{- items[0] -}``: matched, left out of ALL ROWS PER
    MATCH's output), ``permute`` (``PERMUTE(a, b, ...)``: the items in any order, the
    orders preferred lexicographically), ``start`` (``^``: the partition's first row
    comes next) or ``end`` (``$``: the partition ends here)."""

    kind: str
    pos: Pos
    name: str | None = None
    items: tuple[RowPattern, ...] = ()
    low: int = 1
    high: int | None = 1
    greedy: bool = True


@dataclass(frozen=True)
class RecognizeSource:
    """``Stream[(filter)] MATCH_RECOGNIZE ( [PARTITION BY k] MEASURES [RUNNING|FINAL] e
    AS m, ... [ONE ROW PER MATCH | ALL ROWS PER MATCH [mode]] [AFTER MATCH SKIP ...]
    PATTERN (...) [WITHIN T] DEFINE V AS cond, ... ) [AS alias]``; a measure is (expr,
    name, pos, ``running``/``final``/None); ``skip`` is ``past last row``, ``to next
    row``, ``to current row``, ``to first`` or ``to last`` (of ``skip_to``); ``rows``
    ``one`` or ``all`` (with ``empty``: ``show``, ``omit`` or ``unmatched``); ``subsets``
    the SUBSET clause's union variables (name, variables, pos)."""

    stream: str
    filter: Expr | None
    partition_by: tuple[Expr, ...]
    measures: tuple[tuple[Expr, str, Pos, str | None], ...]
    skip: str
    pattern: RowPattern
    within: Expr | None
    defines: tuple[tuple[str, Expr, Pos], ...]
    alias: str | None
    pos: Pos
    skip_to: tuple[str, Pos] | None = None
    rows: str = "one"
    empty: str = "show"
    subsets: tuple[tuple[str, tuple[str, ...], Pos], ...] = ()


Source = Union[StreamSource, PatternSource, RecognizeSource]  # noqa: UP007

# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class SelectItem:
    """One SELECT column: an expression (or ``Star``) and an optional alias."""

    expr: Expr
    alias: str | None
    pos: Pos


@dataclass(frozen=True)
class Annotation:
    """``@Name('x')`` and friends: ``name`` as written, ``value`` the literal's value."""

    name: str
    value: object
    pos: Pos


@dataclass(frozen=True)
class FieldDecl:
    """``name type [FROM 'path', ...] [FORMAT 'text']`` in CREATE SCHEMA; ``type``
    lower-cased and normalised (int, long, double, boolean, string, timestamp); the
    paths and format as written, with their places."""

    name: str
    type: str
    pos: Pos
    paths: tuple[str, ...] = ()
    paths_pos: tuple[Pos, ...] = ()
    format: str | None = None
    format_pos: Pos | None = None


@dataclass(frozen=True)
class CreateSchema:
    """``CREATE SCHEMA Name (field type, ...) [TIMESTAMP field [LATENESS T]]``."""

    name: str
    fields: tuple[FieldDecl, ...]
    timestamp: str | None
    pos: Pos
    timestamp_pos: Pos | None = None
    lateness: Expr | None = None


@dataclass(frozen=True)
class CreateVariable:
    """``CREATE VARIABLE type name [= default]``."""

    type: str
    name: str
    default: Expr | None
    pos: Pos


@dataclass(frozen=True)
class OutputLimit:
    """``OUTPUT [ALL|FIRST|LAST|SNAPSHOT] EVERY n EVENTS`` (``events`` set) or ``EVERY T``
    (``period``: a duration literal, a number of seconds or a variable); ``kind``
    lower-cased, ``all`` when not written."""

    kind: str
    events: int | None
    period: Expr | None
    pos: Pos


@dataclass(frozen=True)
class SelectStatement:
    """A rule: ``[@annotations] [INSERT INTO s] SELECT ... FROM ... [WHERE] [GROUP BY]
    [HAVING] [PARTITION BY]``."""

    annotations: tuple[Annotation, ...]
    insert_into: str | None
    select: tuple[SelectItem, ...]
    sources: tuple[Source, ...]
    where: Expr | None
    group_by: tuple[Expr, ...]
    having: Expr | None
    partition_by: tuple[Expr, ...]
    pos: Pos
    insert_into_pos: Pos | None = None
    stream_selector: str = "istream"  # Esper's ISTREAM / RSTREAM / IRSTREAM, lower-cased
    stream_selector_pos: Pos | None = None
    output: OutputLimit | None = None


Statement = Union[CreateSchema, CreateVariable, SelectStatement]  # noqa: UP007


@dataclass(frozen=True)
class Module:
    """A whole rule file: its statements plus the name and text for diagnostics."""

    statements: tuple[Statement, ...]
    source_name: str
    source: str
