"""How a MATCH_RECOGNIZE expression names a row: SQL:2016's row pattern navigation as
field qualifiers.

The checker rewrites ``A.f``, ``FIRST(A.f, n)``, ``LAST(f, n)``, ``PREV(LAST(A.f), m)``,
``NEXT(...)`` and ``CLASSIFIER(...)`` into plain field references whose qualifier is a
:class:`Nav` written as text (:meth:`Nav.code`), so expressions keep their ordinary IR
and the engine resolves the qualifier to a row of the match
(``cep.engine.row_patterns.navigation``). ``MATCH_NUMBER()`` is the field
:data:`MATCH_NUMBER` of the qualifier :data:`MATCH`; CLASSIFIER's value is the field
:data:`CLASSIFIER` of the row it navigates to.
"""

from __future__ import annotations

from dataclasses import dataclass

from grammar import ir

PREFIX = "__nav:"
#: the qualifier of MATCH_NUMBER()
MATCH = "__match"
#: MATCH_NUMBER()'s field name
MATCH_NUMBER = "__match_number"
#: CLASSIFIER()'s field name (the variable the navigated row matched)
CLASSIFIER = "__classifier"
#: the qualifier of a bare field inside an aggregate: every row of the match
ALL = "__all"
#: marks an aggregate argument's qualifier when the aggregate reads the whole match
FINAL_PREFIX = "__final:"


def final_qualifier(qualifier: str) -> str:
    """The qualifier of an aggregate argument under FINAL semantics."""
    return FINAL_PREFIX + qualifier


def aggregate_rows(agg: ir.Agg) -> tuple[str, bool]:
    """The rows an aggregate reads: its arguments' variable (or union; :data:`ALL` when
    they name none: every row) and whether it reads the whole match (FINAL). The checker
    lets the arguments name one variable only; MATCH_NUMBER() names none."""
    quals = {aggregate_qualifier(ref.qualifier)
             for ref in _field_refs([x for x in (agg.arg, agg.by) if x is not None])}
    final = any(f for _, f in quals)
    names = {q for q, _ in quals} - {MATCH}
    return (names.pop() if len(names) == 1 else ALL), final


def _field_refs(exprs: list[ir.TExpr]) -> list[ir.FieldRef]:
    out: list[ir.FieldRef] = []
    for expr in exprs:
        if isinstance(expr, ir.FieldRef):
            out.append(expr)
        out.extend(_field_refs(ir.children(expr)))
    return out


def aggregate_qualifier(qualifier: str) -> tuple[str, bool]:
    """An aggregate argument's variable (or union, or :data:`ALL`) and whether the
    aggregate is FINAL."""
    if qualifier.startswith(FINAL_PREFIX):
        return qualifier[len(FINAL_PREFIX):], True
    return qualifier, False


@dataclass(frozen=True)
class Nav:
    """One navigation: among the match's rows labelled one of ``labels`` (None: every
    row, the universal variable), the ``logical``-th from the last (``last``) or from
    the first, then ``physical`` rows further (negative: PREV, positive: NEXT). Running
    (the default) searches the rows up to the current one, ``final`` the whole match."""

    labels: tuple[str, ...] | None
    last: bool = True
    logical: int = 0
    physical: int = 0
    final: bool = False

    def code(self) -> str:
        labels = "*" if self.labels is None else ",".join(self.labels)
        return (f"{PREFIX}{'L' if self.last else 'F'}:{'F' if self.final else 'R'}:"
                f"{self.logical}:{self.physical}:{labels}")

    @staticmethod
    def parse(qualifier: str) -> Nav | None:
        """The navigation a qualifier names (None: a plain qualifier)."""
        if not qualifier.startswith(PREFIX):
            return None
        first, semantics, logical, physical, labels = qualifier[len(PREFIX):].split(":", 4)
        return Nav(None if labels == "*" else tuple(labels.split(",")), first == "L",
                   int(logical), int(physical), semantics == "F")
