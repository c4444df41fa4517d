"""The tree builder's statements: CREATE SCHEMA, CREATE VARIABLE, SELECT and its clauses.

Part of :mod:`grammar.tree_builder`. A SELECT's parts come up the tree as
:class:`Clause` values, read by kind where the statement is built (MATCH_RECOGNIZE's
parts, :mod:`grammar.tree_recognize`, travel the same way).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lark import Token, v_args
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from grammar import ast
from grammar.errors import Pos, RuleError
from grammar.tokens import match_pos, token_pos
from grammar.tree_literals import decode_string, type_name, whole_number


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
class Clause:
    """A SELECT statement part on its way up to ``select_stmt`` (which reads them by kind);
    ``pos`` is kept where the AST wants it (the INSERT INTO stream name)."""

    kind: str
    value: object
    pos: Pos | None = None


@v_args(meta=True)
class StatementRules(Transformer_NonRecursive):
    """Schemas, variables, SELECT statements and their clauses."""

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
            str(name), type_name(type_), match_pos(meta),
            paths=(path.text,) if path else (), paths_pos=(path.pos,) if path else (),
            format=fmt.text if fmt else None, format_pos=fmt.pos if fmt else None,
        )

    def field_from(self, meta: Meta, children: list) -> _FieldText:
        return _FieldText("from", decode_string(children[0]), token_pos(children[0]))

    def field_format(self, meta: Meta, children: list) -> _FieldText:
        return _FieldText("format", decode_string(children[0]), token_pos(children[0]))

    def field_path(self, meta: Meta, children: list) -> tuple[_FieldText, _FieldText | None]:
        path = _FieldText("from", decode_string(children[0]), token_pos(children[0]))
        return path, children[1] if len(children) > 1 else None

    def schema_timestamp(self, meta: Meta, children: list) -> _Timestamp:
        return _Timestamp(children[0], children[1] if len(children) > 1 else None)

    def schema_lateness(self, meta: Meta, children: list) -> ast.Expr:
        return children[0]

    def create_variable(self, meta: Meta, children: list) -> ast.CreateVariable:
        type_, name, *default = children
        return ast.CreateVariable(
            type_name(type_), str(name), default[0] if default else None, match_pos(meta)
        )

    def select_stmt(self, meta: Meta, children: list) -> ast.SelectStatement:
        clauses = {c.kind: c for c in children if isinstance(c, Clause)}
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

    def stream_selector(self, meta: Meta, children: list) -> Clause:
        return Clause("stream_selector", str(children[0]).lower(), match_pos(meta))

    def insert_into(self, meta: Meta, children: list) -> Clause:
        return Clause("insert_into", str(children[0]), token_pos(children[0]))

    def select_list(self, meta: Meta, children: list) -> Clause:
        return Clause("select", tuple(children))

    def select_star(self, meta: Meta, children: list) -> ast.SelectItem:
        return ast.SelectItem(ast.Star(match_pos(meta)), None, match_pos(meta))

    def select_alias_star(self, meta: Meta, children: list) -> ast.SelectItem:
        return ast.SelectItem(ast.Star(match_pos(meta), base=str(children[0])), None,
                              match_pos(meta))

    def select_expr(self, meta: Meta, children: list) -> ast.SelectItem:
        expr, *alias = children
        return ast.SelectItem(expr, str(alias[0]) if alias else None, match_pos(meta))

    def source_list(self, meta: Meta, children: list) -> Clause:
        return Clause("sources", tuple(children))

    def where_clause(self, meta: Meta, children: list) -> Clause:
        return Clause("where", children[0])

    def group_by_clause(self, meta: Meta, children: list) -> Clause:
        return Clause("group_by", tuple(children))

    def having_clause(self, meta: Meta, children: list) -> Clause:
        return Clause("having", children[0])

    def partition_clause(self, meta: Meta, children: list) -> Clause:
        return Clause("partition_by", tuple(children))

    def output_clause(self, meta: Meta, children: list) -> Clause:
        kind = str(children[0]) if len(children) == 2 else "all"
        every = children[-1]
        if isinstance(every, Token):  # EVERY n EVENTS
            limit = ast.OutputLimit(kind, whole_number(every, "an event count", 1), None,
                                    match_pos(meta))
        else:
            limit = ast.OutputLimit(kind, None, every, match_pos(meta))
        return Clause("output", limit)

    def output_kind(self, meta: Meta, children: list) -> str:
        return str(children[0]).lower()
