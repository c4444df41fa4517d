"""The tree builder: Lark's parse tree → the frozen nodes of :mod:`grammar.ast`.

A transformer whose method names are the grammar's rule aliases, run bottom-up without
recursion (so tree depth never meets Python's recursion limit). Besides building nodes
it makes the checks a grammar cannot express well: window kinds, namespaces and arity,
type names, the ranges of numbers and time periods, string escapes. Numbers and strings
are decoded here, never evaluated as Python.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from lark import Token, Tree, v_args
from lark.exceptions import VisitError
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from grammar import ast
from grammar.errors import Pos, RuleError, did_you_mean
from grammar.tokens import INT_MAX, LONG_MAX, UNIT_MICROS, clip, match_pos, token_pos
from grammar.types import WrittenDuration


def build(tree: Tree) -> list[ast.Statement]:
    """The statements of a parse tree. Lark wraps whatever a transformer method raises in
    VisitError; unwrapping lets RuleError (and any bug, with its own type) through as is."""
    try:
        return _Builder().transform(tree)
    except VisitError as err:
        raise err.orig_exc from None


_TYPES = {
    "int": "int", "integer": "int",
    "long": "long", "bigint": "long",
    "double": "double", "float": "double",
    "boolean": "boolean", "bool": "boolean",
    "string": "string",
    "timestamp": "timestamp",
}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


@dataclass(frozen=True)
class _WindowSpec:
    """What a window kind accepts: its Esper namespace and its number of arguments."""

    namespace: str
    min_args: int
    max_args: int | None
    usage: str


_WINDOWS = {
    "length": _WindowSpec("win", 1, 1, "#length(n)"),
    "length_batch": _WindowSpec("win", 1, 1, "#length_batch(n)"),
    "time": _WindowSpec("win", 1, 1, "#time(T)"),
    "time_batch": _WindowSpec("win", 1, 1, "#time_batch(T)"),
    "keepall": _WindowSpec("win", 0, 0, "#keepall"),
    "ext_timed": _WindowSpec("win", 2, 2, "#ext_timed(timestamp_field, T)"),
    "firstlength": _WindowSpec("win", 1, 1, "#firstlength(n)"),
    "firsttime": _WindowSpec("win", 1, 1, "#firsttime(T)"),
    "time_length_batch": _WindowSpec("win", 2, 2, "#time_length_batch(T, n)"),
    "unique": _WindowSpec("std", 1, None, "#unique(expression, ...)"),
    "lastevent": _WindowSpec("std", 0, 0, "#lastevent"),
    "groupwin": _WindowSpec("std", 1, None, "#groupwin(key, ...)"),
}


@dataclass(frozen=True)
class _FieldText:
    """A schema field's FROM path or FORMAT text, decoded, with its place."""

    kind: str
    text: str
    pos: Pos


@dataclass(frozen=True)
class _Timestamp:
    """A schema's TIMESTAMP clause: its field and the LATENESS expression, if any."""

    field: Token
    lateness: ast.Expr | None


def _attach_paths(parts: list) -> tuple[ast.FieldDecl, ...]:
    """Schema fields with the extra FROM paths (``, 'path' [FORMAT 'f']`` items of the
    field list) attached to the field before them."""
    fields: list[ast.FieldDecl] = []
    for part in parts:
        if isinstance(part, ast.FieldDecl):
            fields.append(part)
            continue
        path, fmt = part
        last = fields[-1]
        if not last.paths:
            raise RuleError("a path can only follow FROM: name type FROM 'path', 'path'",
                            path.pos)
        if last.format is not None:
            raise RuleError("FORMAT goes after the field's last FROM path", last.format_pos)
        fields[-1] = dataclasses.replace(
            last, paths=(*last.paths, path.text), paths_pos=(*last.paths_pos, path.pos),
            format=fmt.text if fmt else None, format_pos=fmt.pos if fmt else None,
        )
    return tuple(fields)


@dataclass(frozen=True)
class _Clause:
    """A SELECT statement part on its way up to ``select_stmt`` (which reads them by kind);
    ``pos`` is kept where the AST wants it (the INSERT INTO stream name)."""

    kind: str
    value: object
    pos: Pos | None = None


@dataclass(frozen=True)
class _Filter:
    """``(expr)`` after a stream name; marks the filter among a source's children."""

    expr: ast.Expr | None


@dataclass(frozen=True)
class _Args:
    """The arguments of a call, with DISTINCT."""

    items: tuple[ast.Expr, ...]
    distinct: bool


def _type_name(token: Token) -> str:
    """A schema or variable type, normalised (``integer`` → ``int``, ...)."""
    try:
        return _TYPES[token.value.lower()]
    except KeyError:
        known = sorted(set(_TYPES.values()))
        raise RuleError(
            f"unknown type '{token.value}'; the types are {', '.join(known)}",
            token_pos(token),
            hint=did_you_mean(token.value.lower(), _TYPES),
        ) from None


def _whole_number(token: Token, what: str, minimum: int) -> int:
    """A small non-negative integer written in the syntax (a repeat count, an index)."""
    if token.value.isdigit() and len(token.value) <= 9 and int(token.value) >= minimum:
        return int(token.value)
    raise RuleError(f"{what} must be a whole number of at least {minimum}", token_pos(token))


def _number(token: Token) -> ast.Literal:
    """An int (32-bit), long (64-bit) or double literal."""
    text = token.value
    if text.isdigit():
        # Length first: int() refuses over 4300 digits and the range is known anyway.
        if len(text.lstrip("0")) <= 19 and int(text) <= LONG_MAX:
            value = int(text)
            return ast.Literal(value, "int" if value <= INT_MAX else "long", token_pos(token))
        raise RuleError(
            f"integer {clip(text)} is out of range (the largest is {LONG_MAX})",
            token_pos(token),
        )
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise RuleError(f"number {clip(text)} is out of range for a double", token_pos(token))
    return ast.Literal(value, "double", token_pos(token))


def _string(token: Token) -> str:
    """Decode a quoted literal: doubled quotes and backslash escapes (n, t, r, \\, ', ")."""
    raw = token.value
    quote, body = raw[0], raw[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            escaped = body[i + 1]  # the STRING terminal guarantees one more character
            if escaped not in _ESCAPES:
                column = token.column + 1 + i
                raise RuleError(
                    f"unknown escape sequence '\\{escaped}' in a string",
                    Pos(token.line, column, token.line, column + 2),
                    hint=(
                        "the escapes are \\n \\t \\r \\\\ \\' and \\\"; "
                        "write '\\\\' for a backslash"
                    ),
                )
            out.append(_ESCAPES[escaped])
            i += 2
        elif char == quote:  # the first of a doubled quote
            out.append(quote)
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _window(
    meta: Meta, name: Token, args: tuple[ast.Expr, ...], namespace: Token | None
) -> ast.Window:
    """A window view, the same node for ``#kind(...)`` and ``.ns:kind(...)``."""
    kind = name.value.lower()
    spec = _WINDOWS.get(kind)
    if spec is None:
        raise RuleError(
            f"unknown window '{name.value}'; the windows are {', '.join(sorted(_WINDOWS))}",
            token_pos(name),
            hint=did_you_mean(kind, _WINDOWS),
        )
    if namespace is not None and namespace.value.lower() != spec.namespace:
        raise RuleError(
            f"the window '{kind}' is '{spec.namespace}:{kind}', not '{namespace.value}:{kind}'",
            token_pos(namespace),
        )
    if len(args) < spec.min_args or (spec.max_args is not None and len(args) > spec.max_args):
        raise RuleError(
            f"wrong number of arguments for window '{kind}' ({len(args)} given)",
            match_pos(meta),
            hint=f"write it as {spec.usage}",
        )
    return ast.Window(kind, args, match_pos(meta))


def _split_alias(children: list) -> tuple[list, str | None]:
    """Children of a source without its trailing alias (a Token, left by ``alias``)."""
    if len(children) > 1 and isinstance(children[-1], Token):
        return children[:-1], str(children[-1])
    return children, None


@v_args(meta=True)
class _Builder(Transformer_NonRecursive):
    """Bottom-up construction of the AST; method names are the grammar's rule aliases.

    Non-recursive so that tree depth never meets Python's recursion limit here.
    """

    # -- statements

    def start(self, meta: Meta, children: list) -> list:
        return children

    def create_schema(self, meta: Meta, children: list) -> ast.CreateSchema:
        name, *rest = children
        clause = rest.pop() if isinstance(rest[-1], _Timestamp) else None
        timestamp = clause.field if clause is not None else None
        return ast.CreateSchema(
            name=str(name),
            fields=_attach_paths(rest),
            timestamp=str(timestamp) if timestamp is not None else None,
            pos=match_pos(meta),
            timestamp_pos=token_pos(timestamp) if timestamp is not None else None,
            lateness=clause.lateness if clause is not None else None,
        )

    def field_decl(self, meta: Meta, children: list) -> ast.FieldDecl:
        name, type_, *more = children
        path = next((c for c in more if isinstance(c, _FieldText) and c.kind == "from"), None)
        fmt = next((c for c in more if isinstance(c, _FieldText) and c.kind == "format"), None)
        return ast.FieldDecl(
            str(name), _type_name(type_), match_pos(meta),
            paths=(path.text,) if path else (), paths_pos=(path.pos,) if path else (),
            format=fmt.text if fmt else None, format_pos=fmt.pos if fmt else None,
        )

    def field_from(self, meta: Meta, children: list) -> _FieldText:
        return _FieldText("from", _string(children[0]), token_pos(children[0]))

    def field_format(self, meta: Meta, children: list) -> _FieldText:
        return _FieldText("format", _string(children[0]), token_pos(children[0]))

    def field_path(self, meta: Meta, children: list) -> tuple[_FieldText, _FieldText | None]:
        path = _FieldText("from", _string(children[0]), token_pos(children[0]))
        return path, children[1] if len(children) > 1 else None

    def schema_timestamp(self, meta: Meta, children: list) -> _Timestamp:
        return _Timestamp(children[0], children[1] if len(children) > 1 else None)

    def schema_lateness(self, meta: Meta, children: list) -> ast.Expr:
        return children[0]

    def create_variable(self, meta: Meta, children: list) -> ast.CreateVariable:
        type_, name, *default = children
        return ast.CreateVariable(
            _type_name(type_), str(name), default[0] if default else None, match_pos(meta)
        )

    def select_stmt(self, meta: Meta, children: list) -> ast.SelectStatement:
        clauses = {c.kind: c for c in children if isinstance(c, _Clause)}
        insert = clauses.get("insert_into")
        selector = clauses.get("stream_selector")
        return ast.SelectStatement(
            annotations=tuple(c for c in children if isinstance(c, ast.Annotation)),
            insert_into=insert.value if insert else None,
            select=clauses["select"].value,
            sources=clauses["sources"].value,
            where=clauses["where"].value if "where" in clauses else None,
            group_by=clauses["group_by"].value if "group_by" in clauses else (),
            having=clauses["having"].value if "having" in clauses else None,
            partition_by=clauses["partition_by"].value if "partition_by" in clauses else (),
            pos=match_pos(meta),
            insert_into_pos=insert.pos if insert else None,
            stream_selector=selector.value if selector else "istream",
            stream_selector_pos=selector.pos if selector else None,
            output=clauses["output"].value if "output" in clauses else None,
        )

    def annotation(self, meta: Meta, children: list) -> ast.Annotation:
        name, *value = children
        return ast.Annotation(str(name), value[0].value if value else None, match_pos(meta))

    def stream_selector(self, meta: Meta, children: list) -> _Clause:
        return _Clause("stream_selector", str(children[0]).lower(), match_pos(meta))

    def insert_into(self, meta: Meta, children: list) -> _Clause:
        return _Clause("insert_into", str(children[0]), token_pos(children[0]))

    def select_list(self, meta: Meta, children: list) -> _Clause:
        return _Clause("select", tuple(children))

    def select_star(self, meta: Meta, children: list) -> ast.SelectItem:
        return ast.SelectItem(ast.Star(match_pos(meta)), None, match_pos(meta))

    def select_alias_star(self, meta: Meta, children: list) -> ast.SelectItem:
        return ast.SelectItem(ast.Star(match_pos(meta), base=str(children[0])), None,
                              match_pos(meta))

    def select_expr(self, meta: Meta, children: list) -> ast.SelectItem:
        expr, *alias = children
        return ast.SelectItem(expr, str(alias[0]) if alias else None, match_pos(meta))

    def source_list(self, meta: Meta, children: list) -> _Clause:
        return _Clause("sources", tuple(children))

    def where_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("where", children[0])

    def group_by_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("group_by", tuple(children))

    def having_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("having", children[0])

    def partition_clause(self, meta: Meta, children: list) -> _Clause:
        return _Clause("partition_by", tuple(children))

    def output_clause(self, meta: Meta, children: list) -> _Clause:
        kind = str(children[0]) if len(children) == 2 else "all"
        every = children[-1]
        if isinstance(every, Token):  # EVERY n EVENTS
            limit = ast.OutputLimit(kind, _whole_number(every, "an event count", 1), None,
                                    match_pos(meta))
        else:
            limit = ast.OutputLimit(kind, None, every, match_pos(meta))
        return _Clause("output", limit)

    def output_kind(self, meta: Meta, children: list) -> str:
        return str(children[0]).lower()

    # -- sources

    def stream_source(self, meta: Meta, children: list) -> ast.StreamSource:
        (name, *rest), alias = _split_alias(children)
        filters = [c.expr for c in rest if isinstance(c, _Filter)]
        windows = tuple(c for c in rest if isinstance(c, ast.Window))
        return ast.StreamSource(
            str(name), filters[0] if filters else None, windows, alias, match_pos(meta)
        )

    def filter(self, meta: Meta, children: list) -> _Filter:
        if not children:
            return _Filter(None)
        combined = children[0]
        for expr in children[1:]:  # Esper's `S(a = 1, b > 2)` is `S(a = 1 AND b > 2)`
            combined = ast.Binary("and", combined, expr, Pos(
                combined.pos.line, combined.pos.column, expr.pos.end_line, expr.pos.end_column))
        return _Filter(combined)

    def hash_window(self, meta: Meta, children: list) -> ast.Window:
        name, *args = children
        return _window(meta, name, args[0] if args else (), None)

    def view_window(self, meta: Meta, children: list) -> ast.Window:
        namespace, name, *args = children
        return _window(meta, name, args[0] if args else (), namespace)

    def window_args(self, meta: Meta, children: list) -> tuple[ast.Expr, ...]:
        return tuple(children)

    def alias(self, meta: Meta, children: list) -> Token:
        return children[0]

    def pattern_source(self, meta: Meta, children: list) -> ast.PatternSource:
        (pattern,), alias = _split_alias(children)
        return ast.PatternSource(pattern, alias, match_pos(meta))

    # -- MATCH_RECOGNIZE

    def recognize_source(self, meta: Meta, children: list) -> ast.RecognizeSource:
        children, alias = _split_alias(children)
        stream, *rest = children
        parts = {c.kind: c.value for c in rest if isinstance(c, _Clause)}
        filters = [c.expr for c in rest if isinstance(c, _Filter)]
        skip, skip_to = parts.get("skip", ("past last row", None))  # type: ignore[misc]
        rows, empty = parts.get("rows", ("one", "show"))  # type: ignore[misc]
        patterns = [c for c in rest if isinstance(c, ast.RowPattern)]
        return ast.RecognizeSource(
            stream=str(stream), filter=filters[0] if filters else None,
            partition_by=parts.get("partition_by", ()), measures=parts.get("measures", ()),
            skip=skip, pattern=patterns[0] if patterns else ast.RowPattern(
                "empty", match_pos(meta)),
            within=parts.get("within"), defines=parts["defines"], alias=alias,
            pos=match_pos(meta), skip_to=skip_to, rows=rows, empty=empty,
            subsets=parts.get("subsets", ()))

    def mr_partition(self, meta: Meta, children: list) -> _Clause:
        return _Clause("partition_by", tuple(children))

    def mr_measures(self, meta: Meta, children: list) -> _Clause:
        return _Clause("measures", tuple(children))

    def mr_measure(self, meta: Meta, children: list) -> tuple:
        semantics = None
        if len(children) == 3:
            semantics, children = children[0], children[1:]
        return children[0], str(children[1]), match_pos(meta), semantics

    def mr_semantics(self, meta: Meta, children: list) -> str:
        return str(children[0]).lower()

    def mr_one_row(self, meta: Meta, children: list) -> _Clause:
        return _Clause("rows", ("one", "show"))

    def mr_all_rows(self, meta: Meta, children: list) -> _Clause:
        return _Clause("rows", ("all", children[0] if children else "show"))

    def mr_empty(self, meta: Meta, children: list) -> str:
        word = str(children[0]).lower()
        return "unmatched" if word == "with" else word

    def mr_after(self, meta: Meta, children: list) -> _Clause:
        return _Clause("skip", children[0])

    def mr_skip(self, meta: Meta, children: list) -> tuple[str, tuple[str, Pos] | None]:
        words = [str(c).lower() for c in children]
        last = children[-1]
        if isinstance(last, Token) and last.type == "NAME":
            kind = "to first" if words[1] == "first" else "to last"
            return kind, (str(last), token_pos(last))
        return " ".join(words), None

    def mr_subset(self, meta: Meta, children: list) -> _Clause:
        return _Clause("subsets", tuple(children))

    def mr_union(self, meta: Meta, children: list) -> tuple:
        name, *members = children
        return str(name), tuple(str(m) for m in members), token_pos(name)

    def mr_within(self, meta: Meta, children: list) -> _Clause:
        return _Clause("within", children[0])

    def mr_define(self, meta: Meta, children: list) -> _Clause:
        return _Clause("defines", tuple(children))

    def mr_def(self, meta: Meta, children: list) -> tuple:
        return str(children[0]), children[1], token_pos(children[0])

    def mr_alt(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        return ast.RowPattern("alt", match_pos(meta), items=tuple(children))

    def mr_seq(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        return ast.RowPattern("seq", match_pos(meta), items=tuple(children))

    def mr_item(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        item, (low, high, greedy) = children
        return ast.RowPattern("repeat", match_pos(meta), items=(item,), low=low, high=high,
                              greedy=greedy)

    def mr_var(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("var", match_pos(meta), name=str(children[0]))

    def mr_empty_pattern(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("empty", match_pos(meta))

    def mr_exclude(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("exclude", match_pos(meta), items=(children[0],))

    def mr_start_anchor(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("start", match_pos(meta))

    def mr_end_anchor(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("end", match_pos(meta))

    def mr_permute(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("permute", match_pos(meta), items=tuple(children))

    def mr_quantifier(self, meta: Meta, children: list) -> tuple:
        low, high = children[0]
        return low, high, len(children) == 1

    def mr_count(self, meta: Meta, children: list) -> tuple[int, int | None]:
        texts = [str(c) for c in children]
        if texts[0] in ("*", "+", "?"):
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[texts[0]]
        if texts == ["{", ",", "}"]:  # {,}: as *
            return 0, None
        numbers = [_whole_number(c, "a repetition bound", 0) for c in children
                   if c.type == "NUMBER"]
        if len(texts) == 3:  # {n}
            return numbers[0], numbers[0]
        if texts[1] == ",":  # {,m}
            return 0, numbers[0]
        if texts[2] == "," and texts[3] == "}":  # {n,}
            return numbers[0], None
        return numbers[0], numbers[1]

    # -- patterns

    def pat_within(self, meta: Meta, children: list) -> ast.PatWithin:
        operand, duration = children
        return ast.PatWithin(operand, duration, match_pos(meta))

    def pat_followed_by(self, meta: Meta, children: list) -> ast.PatFollowedBy:
        return ast.PatFollowedBy(children[0], children[1], match_pos(meta))

    def pat_or_op(self, meta: Meta, children: list) -> ast.PatOr:
        return ast.PatOr(children[0], children[1], match_pos(meta))

    def pat_and_op(self, meta: Meta, children: list) -> ast.PatAnd:
        return ast.PatAnd(children[0], children[1], match_pos(meta))

    def pat_every(self, meta: Meta, children: list) -> ast.PatEvery:
        return ast.PatEvery(children[0], match_pos(meta))

    def pat_not(self, meta: Meta, children: list) -> ast.PatNot:
        return ast.PatNot(children[0], match_pos(meta))

    def pat_repeat(self, meta: Meta, children: list) -> ast.PatRepeat:
        count, operand = children
        n = _whole_number(count, "a repeat count", 1)
        return ast.PatRepeat(n, operand, match_pos(meta), high=n)

    def pat_repeat_range(self, meta: Meta, children: list) -> ast.PatRepeat:
        low, high, operand = children
        return ast.PatRepeat(_whole_number(low, "a repeat bound", 0), operand, match_pos(meta),
                             high=_whole_number(high, "a repeat bound", 1))

    def pat_repeat_from(self, meta: Meta, children: list) -> ast.PatRepeat:
        low, operand = children
        return ast.PatRepeat(_whole_number(low, "a repeat bound", 0), operand, match_pos(meta))

    def pat_repeat_upto(self, meta: Meta, children: list) -> ast.PatRepeat:
        high, operand = children
        return ast.PatRepeat(0, operand, match_pos(meta), high=_whole_number(high, "a repeat bound",
                                                                        1))

    def pat_until(self, meta: Meta, children: list) -> ast.PatRepeat:
        operand, until = children
        if isinstance(operand, ast.PatRepeat) and operand.until is None:
            return ast.PatRepeat(operand.count, operand.operand, match_pos(meta), high=operand.high,
                                 until=until)
        return ast.PatRepeat(0, operand, match_pos(meta), until=until)

    def pat_tagged(self, meta: Meta, children: list) -> ast.PatAtom:
        tag, stream, *filter_ = children
        return ast.PatAtom(str(tag), str(stream), filter_[0].expr if filter_ else None,
                           match_pos(meta))

    def pat_timer(self, meta: Meta, children: list) -> ast.PatTimer:
        return ast.PatTimer(children[0], match_pos(meta))

    def pat_untagged(self, meta: Meta, children: list) -> ast.PatAtom:
        stream, *filter_ = children
        return ast.PatAtom(None, str(stream), filter_[0].expr if filter_ else None, match_pos(meta))

    # -- expressions

    def or_op(self, meta: Meta, children: list) -> ast.Binary:
        return ast.Binary("or", children[0], children[1], match_pos(meta))

    def and_op(self, meta: Meta, children: list) -> ast.Binary:
        return ast.Binary("and", children[0], children[1], match_pos(meta))

    def not_op(self, meta: Meta, children: list) -> ast.Unary:
        return ast.Unary("not", children[0], match_pos(meta))

    def neg(self, meta: Meta, children: list) -> ast.Unary:
        return ast.Unary("-", children[0], match_pos(meta))

    def binary(self, meta: Meta, children: list) -> ast.Binary:
        left, op, right = children
        return ast.Binary(op, left, right, match_pos(meta))

    def comp_op(self, meta: Meta, children: list) -> str:
        return "!=" if children[0] == "<>" else str(children[0])

    def concat_op(self, meta: Meta, children: list) -> str:
        return "||"

    def add_op(self, meta: Meta, children: list) -> str:
        return str(children[0])

    def mul_op(self, meta: Meta, children: list) -> str:
        return str(children[0])

    def is_null(self, meta: Meta, children: list) -> ast.IsNull:
        return ast.IsNull(children[0], False, match_pos(meta))

    def is_not_null(self, meta: Meta, children: list) -> ast.IsNull:
        return ast.IsNull(children[0], True, match_pos(meta))

    def in_list(self, meta: Meta, children: list) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), False, match_pos(meta))

    def not_in_list(self, meta: Meta, children: list) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), True, match_pos(meta))

    def between(self, meta: Meta, children: list) -> ast.Between:
        return ast.Between(*children, negated=False, pos=match_pos(meta))

    def not_between(self, meta: Meta, children: list) -> ast.Between:
        return ast.Between(*children, negated=True, pos=match_pos(meta))

    def like(self, meta: Meta, children: list) -> ast.Like:
        return ast.Like(children[0], children[1], False, match_pos(meta))

    def not_like(self, meta: Meta, children: list) -> ast.Like:
        return ast.Like(children[0], children[1], True, match_pos(meta))

    def number(self, meta: Meta, children: list) -> ast.Literal:
        return _number(children[0])

    def string(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(_string(children[0]), "string", match_pos(meta))

    def true(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(True, "boolean", match_pos(meta))

    def false(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(False, "boolean", match_pos(meta))

    def null(self, meta: Meta, children: list) -> ast.Literal:
        return ast.Literal(None, "null", match_pos(meta))

    def period_part(self, meta: Meta, children: list) -> tuple[Token, Token]:
        number, unit = children
        return number, unit

    def time_period(self, meta: Meta, children: list) -> ast.Literal:
        total = Fraction(0)
        previous_size = None
        for number, unit in children:
            _number(number)  # range check: keeps Fraction from expanding '1e999999'
            size = UNIT_MICROS[unit.value.lower()]
            if previous_size is not None and size >= previous_size:
                raise RuleError(
                    f"time unit '{unit.value}' out of order",
                    token_pos(unit),
                    hint="write the units from largest to smallest, each once: 1 hour 30 min",
                )
            previous_size = size
            total += Fraction(number.value) * size
        if total.denominator != 1:
            raise RuleError(
                "time period is not a whole number of microseconds", match_pos(meta)
            )
        if total > LONG_MAX:
            raise RuleError("time period is out of range", match_pos(meta))
        written = " ".join(f"{number.value} {unit.value}" for number, unit in children)
        return ast.Literal(WrittenDuration(int(total), written), "duration", match_pos(meta))

    def name(self, meta: Meta, children: list) -> ast.Name:
        return ast.Name(str(children[0]), match_pos(meta))

    def attr(self, meta: Meta, children: list) -> ast.Attr:
        base, name = children
        return ast.Attr(str(base), str(name), match_pos(meta))

    def indexed_attr(self, meta: Meta, children: list) -> ast.IndexedAttr:
        base, index, name = children
        return ast.IndexedAttr(
            str(base), _whole_number(index, "an index", 0), str(name), match_pos(meta)
        )

    def call(self, meta: Meta, children: list) -> ast.Call:
        name, *args = children
        arguments = args[0] if args else _Args((), False)
        return ast.Call(name.value.lower(), arguments.items, arguments.distinct, match_pos(meta))

    def mode_call(self, meta: Meta, children: list) -> ast.Semantics:
        mode, *call = children
        return ast.Semantics(str(mode).lower(), self.call(meta, call), match_pos(meta))

    def star_arg(self, meta: Meta, children: list) -> _Args:
        return _Args((ast.Star(match_pos(meta)),), False)

    def distinct_args(self, meta: Meta, children: list) -> _Args:
        return _Args(tuple(children), True)

    def plain_args(self, meta: Meta, children: list) -> _Args:
        return _Args(tuple(children), False)

    def case(self, meta: Meta, children: list) -> ast.Case:
        whens = tuple(c for c in children if isinstance(c, tuple))
        default = children[-1] if not isinstance(children[-1], tuple) else None
        return ast.Case(whens, default, match_pos(meta))

    def when_clause(self, meta: Meta, children: list) -> tuple[ast.Expr, ast.Expr]:
        return children[0], children[1]

    def else_clause(self, meta: Meta, children: list) -> ast.Expr:
        return children[0]
