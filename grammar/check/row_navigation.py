"""MATCH_RECOGNIZE's navigation in DEFINE and MEASURES: ``A.f``, bare ``f``, ``FIRST`` /
``LAST`` (logical offsets), ``PREV`` / ``NEXT`` (physical offsets), ``CLASSIFIER()`` and
``MATCH_NUMBER()`` rewritten into field references whose qualifier names the row
(``grammar.row_nav``), before the expression is typed.

In DEFINE of V, ``V.f`` and bare ``f`` stay the candidate row, ``PREV(V.f, n)`` /
``PREV(f, n)`` the partition's row n before it (``__prev{n}``) and ``NEXT(V.f, n)`` /
``NEXT(f, n)`` the row n after it (``__next{n}``): the operator reads those for a whole
batch at once. NEXT from another row (``NEXT(A.f)`` in B's DEFINE) reads the
partition's rows after the row it navigates from, past the candidate too. The operator
feeds a row to the matcher only once the rows its DEFINEs read after it have arrived;
CLASSIFIER is NULL past the candidate, whose later rows have no label yet. In MEASURES a
bare field is the universal variable (every row of the match), and NEXT may read past
the match (the operator holds the report until the row arrives).
Aggregate arguments keep their variable as qualifier (``__all`` for a bare field: every
row of the match), marked FINAL (``grammar.row_nav.final_qualifier``) when the aggregate
reads the whole match; inside them ``CLASSIFIER([V])`` is the field ``CLASSIFIER`` of V
(or ``__all``): the label of each row aggregated, and ``count()`` is ``count(*)``.

RUNNING and FINAL (SQL:2016's semantics) apply to the call they are written before:
``FINAL LAST(A.x) - RUNNING FIRST(A.x)``, ``PREV(FINAL LAST(x))``, ``RUNNING count(*)``.
Before PREV, NEXT or CLASSIFIER they apply to the row navigation the call makes (Trino
refuses them there); written at the start of a measure before anything else
(``FINAL A.x``) they apply to every navigation and aggregate of the measure that has no
semantics of its own. MATCH_NUMBER() takes neither; DEFINE refuses FINAL (a condition
reads the match found so far).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

from grammar import ast
from grammar.check.expressions import AGGREGATES, ROW_PATTERN_AGGREGATES
from grammar.errors import Pos, RuleError
from grammar.row_nav import ALL, CLASSIFIER, MATCH, MATCH_NUMBER, Nav, final_qualifier

_T = TypeVar("_T")

MAX_OFFSET = 1_000
#: the calls RUNNING and FINAL may be written before
WITH_SEMANTICS = frozenset({"first", "last", "prev", "next", "classifier", *AGGREGATES,
                            *ROW_PATTERN_AGGREGATES})


@dataclasses.dataclass
class Navigation:
    """The rewriting of one expression: ``define`` is the variable a DEFINE condition
    belongs to (None in MEASURES), ``final`` a measure's FINAL; what it found is left in
    ``codes`` (navigation qualifiers) and ``depth`` (how many rows before a match's
    first row, or before the candidate, a DEFINE reads)."""

    variables: tuple[str, ...]
    fields: frozenset[str]
    #: SUBSET's union variables: name -> its variables
    unions: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    define: str | None = None
    final: bool = False
    codes: set[str] = dataclasses.field(default_factory=set)
    #: the qualifiers of the candidate's rows before and after (``__prev{n}``,
    #: ``__next{n}``) the expression reads
    around: set[str] = dataclasses.field(default_factory=set)
    depth: int = 0

    def rewrite(self, node: object, in_aggregate: bool = False) -> object:
        if isinstance(node, ast.Semantics):
            return self._semantics(node, lambda call: self.rewrite(call, in_aggregate))
        if isinstance(node, ast.Call):
            if in_aggregate and node.name in ("prev", "next", "first", "last"):
                # an aggregate's argument is read on each row it covers, not navigated
                raise RuleError(f"{node.name.upper()}() is not allowed in an aggregate's "
                                "argument: the argument is read on each row the aggregate "
                                "covers", node.pos,
                                hint="aggregate the row's own fields (sum(A.price * 2)), "
                                f"or apply {node.name.upper()}() outside the aggregate")
            if in_aggregate and node.name == "classifier":
                # the label of each row the aggregate reads
                self._classifier(node)
                base = node.args[0].name if node.args else ALL  # type: ignore[union-attr]
                return ast.Attr(base, CLASSIFIER, node.pos)
            if node.name in ("prev", "next"):
                return self._physical(node)
            if node.name in ("first", "last"):
                return self._field(*self._logical(node), node.pos)
            if node.name == "classifier":
                return self._field(self._classifier(node), CLASSIFIER, node.pos)
            if node.name == "match_number":
                if node.args:
                    raise RuleError("MATCH_NUMBER() takes no argument", node.pos)
                if self.define is not None:
                    raise RuleError("MATCH_NUMBER() is not allowed in DEFINE", node.pos,
                                    hint="a match's number is known once it is found")
                return ast.Attr(MATCH, MATCH_NUMBER, node.pos)
            if node.name in AGGREGATES or node.name in ROW_PATTERN_AGGREGATES:
                return self._aggregate(node)
        if isinstance(node, ast.Name) and node.name in self.fields:
            if in_aggregate:
                return ast.Attr(ALL, node.name, node.pos)
            if self.define is None:
                return self._field(Nav(None, final=self.final), node.name, node.pos)
            return node
        if isinstance(node, ast.Attr) and self._names(node.base) and not in_aggregate:
            if node.base == self.define:
                return node
            return self._field(Nav(self._names(node.base), final=self.final), node.name,
                               node.pos)
        if isinstance(node, tuple):
            return tuple(self.rewrite(x, in_aggregate) for x in node)
        if dataclasses.is_dataclass(node) and not isinstance(node, Pos):
            return dataclasses.replace(node, **{  # type: ignore[type-var]
                f.name: self.rewrite(getattr(node, f.name), in_aggregate)
                for f in dataclasses.fields(node)})
        return node

    def _aggregate(self, node: ast.Call) -> ast.Call:
        """An aggregate's arguments, read on each row it aggregates (``count()`` is
        ``count(*)``); under FINAL every row reference says so."""
        args = node.args
        if node.name == "count" and not args:
            args = (ast.Star(node.pos),)
        args = tuple(self.rewrite(a, True) for a in args)
        names = {a.base for a in _attributes(args)} - {MATCH}
        if len(names) > 1:  # SQL:2016: the labels an aggregate's arguments name agree
            shown = ", ".join(sorted("every row" if n == ALL else n for n in names))
            raise RuleError(f"{node.name}() reads the rows of one pattern variable (or of "
                            f"every row), but its arguments name {shown}", node.pos,
                            hint=f"e.g. {node.name}(A.price * A.qty), or one aggregate "
                            "per variable")
        if any(not isinstance(a, ast.Star) and not _reads_rows(a) for a in args):
            raise RuleError(f"{node.name}() in MATCH_RECOGNIZE aggregates what the rows "
                            "hold: its argument must read a field, CLASSIFIER() or "
                            "MATCH_NUMBER()", node.pos, hint="count rows with count(*)")
        if self.final:
            args = tuple(_final_argument(a) for a in args)
        return dataclasses.replace(node, args=args)

    def _semantics(self, node: ast.Semantics, then: Callable[[ast.Call], _T]) -> _T:
        """``then(call)`` with the call's RUNNING or FINAL semantics."""
        mode = node.mode.upper()
        if node.call.name not in WITH_SEMANTICS:
            raise RuleError(f"{mode} does not apply to {node.call.name}()", node.pos,
                            hint=f"write {mode} before FIRST, LAST, PREV, NEXT, CLASSIFIER "
                                 "or an aggregate")
        if self.define is not None and node.mode == "final":
            raise RuleError("FINAL is not allowed in DEFINE: a condition reads the rows "
                            "matched so far", node.pos, hint="write RUNNING, or nothing")
        outer, self.final = self.final, node.mode == "final"
        try:
            return then(node.call)
        finally:
            self.final = outer

    def _field(self, nav: Nav, name: str, pos: Pos) -> ast.Attr:
        if self.define is not None and nav.physical < 0:
            self.depth = max(self.depth, -nav.physical)
        code = nav.code()
        self.codes.add(code)
        return ast.Attr(code, name, pos)

    def _physical(self, node: ast.Call) -> ast.Attr:
        usage = f"write {node.name}(A.field [, n]) or {node.name}(FIRST(A.field, m), n)"
        if not 1 <= len(node.args) <= 2:
            raise RuleError(f"wrong arguments for {node.name}()", node.pos, hint=usage)
        n = _offset(node.args[1], node.name, 1) if len(node.args) == 2 else 1
        inner = node.args[0]
        if isinstance(inner, ast.Semantics) and inner.call.name in ("first", "last",
                                                                    "classifier"):
            return self._semantics(inner, lambda call: self._physical(
                dataclasses.replace(node, args=(call, *node.args[1:]))))
        if isinstance(inner, ast.Call) and inner.name in ("first", "last"):
            nav, name = self._logical(inner)
        elif isinstance(inner, ast.Call) and inner.name == "classifier":
            nav, name = self._classifier(inner), CLASSIFIER
        else:
            nav, name = self._target(inner, node.name, usage)
        if (self.define is not None and nav.last and nav.logical == 0
                and nav.labels in (None, (self.define,)) and name != CLASSIFIER):
            # the candidate's row n before or after: read for a whole batch at once
            qualifier = f"__{node.name}{n}"
            self.around.add(qualifier)
            if node.name == "prev":
                self.depth = max(self.depth, n)
            return ast.Attr(qualifier, name, node.pos)
        nav = dataclasses.replace(nav, physical=-n if node.name == "prev" else n)
        return self._field(nav, name, node.pos)

    def _logical(self, node: ast.Call) -> tuple[Nav, str]:
        usage = f"write {node.name}(A.field [, n]) with a whole number n"
        if not 1 <= len(node.args) <= 2:
            raise RuleError(f"wrong arguments for {node.name}()", node.pos, hint=usage)
        n = _offset(node.args[1], node.name, 0) if len(node.args) == 2 else 0
        inner = node.args[0]
        if isinstance(inner, ast.Call) and inner.name == "classifier":
            nav, name = self._classifier(inner), CLASSIFIER
        else:
            nav, name = self._target(inner, node.name, usage)
        return dataclasses.replace(nav, last=node.name == "last", logical=n), name

    def _classifier(self, node: ast.Call) -> Nav:
        if len(node.args) > 1 or (node.args and not (
                isinstance(node.args[0], ast.Name) and self._names(node.args[0].name))):
            raise RuleError("CLASSIFIER() takes nothing or a pattern variable", node.pos)
        labels = self._names(node.args[0].name) if node.args else None  # type: ignore[union-attr]
        return Nav(labels, final=self.final)

    def _names(self, name: str) -> tuple[str, ...]:
        """The variables a pattern or union variable stands for (none: it is neither)."""
        if name in self.variables:
            return (name,)
        return self.unions.get(name, ())

    def _target(self, node: object, function: str, usage: str) -> tuple[Nav, str]:
        """The row and field ``A.f`` or bare ``f`` names, as a navigation."""
        if isinstance(node, ast.Attr) and self._names(node.base):
            return Nav(self._names(node.base), final=self.final), node.name
        if isinstance(node, ast.Name) and node.name in self.fields:
            return Nav(None, final=self.final), node.name
        raise RuleError(f"{function}() navigates to a field of a pattern variable's row",
                        getattr(node, "pos", None), hint=usage)


def _final_argument(arg: object) -> object:
    """An aggregate argument that reads the whole match: ``count(*)`` counts the rows'
    labels (never NULL), every row reference (a variable's field, CLASSIFIER(),
    MATCH_NUMBER()) gets its FINAL qualifier."""
    if isinstance(arg, ast.Star):
        return ast.Attr(final_qualifier(ALL), CLASSIFIER, arg.pos)
    if isinstance(arg, ast.Attr):
        return dataclasses.replace(arg, base=final_qualifier(arg.base))
    if isinstance(arg, tuple):
        return tuple(_final_argument(x) for x in arg)
    if dataclasses.is_dataclass(arg) and not isinstance(arg, Pos):
        return dataclasses.replace(arg, **{  # type: ignore[type-var]
            f.name: _final_argument(getattr(arg, f.name)) for f in dataclasses.fields(arg)})
    return arg


def _reads_rows(node: object) -> bool:
    """Whether a rewritten aggregate argument reads a row (a field, a label, the match
    number): a constant one would not say which rows, nor FINAL from RUNNING."""
    return bool(_attributes(node)) or any(isinstance(n, ast.Name) for n in _nodes(node))


def _attributes(node: object) -> list[ast.Attr]:
    """The ``base.name`` references in a rewritten expression."""
    return [n for n in _nodes(node) if isinstance(n, ast.Attr)]


def _nodes(node: object) -> list[object]:
    """Every AST node of an expression (tuples of them too), depth first."""
    if isinstance(node, tuple):
        return [n for x in node for n in _nodes(x)]
    if dataclasses.is_dataclass(node) and not isinstance(node, Pos):
        return [node, *(n for f in dataclasses.fields(node)
                        for n in _nodes(getattr(node, f.name)))]
    return []


def _offset(node: ast.Expr, function: str, low: int) -> int:
    if not (isinstance(node, ast.Literal) and isinstance(node.value, int)
            and not isinstance(node.value, bool) and low <= node.value <= MAX_OFFSET):
        raise RuleError(f"the row offset of {function}() must be from {low} to "
                        f"{MAX_OFFSET}", node.pos)
    return node.value
