"""Whether a MATCH_RECOGNIZE rule runs on the compiled kernel, and its program as arrays.

Decided once per rule, when its operator is made (never per batch). The kernel
(:mod:`cep.engine.row_patterns.kernel`) takes a rule when

* its pattern has no ``$`` (ONE ROW or ALL ROWS PER MATCH, every way of showing empty
  matches and unmatched rows, ``{- -}``, ``^``);
* every DEFINE is a conjunction (AND) of conditions that each read only the candidate
  row and ``PREV`` rows of the key (evaluated column-wise for the whole batch), or
  compare such an expression with ``X.f`` (the last row of another variable, a number),
  or compare a running aggregate of the match (``count``, ``sum``, ``avg``, ``min``,
  ``max`` of a numeric field of one variable, a SUBSET or every row; ``count(*)``) with
  such an expression or such an ``X.f`` (:class:`AggCondition`) — what makes threads
  differ is then only the last row of each variable and each aggregate's running state
  (count, exact sum, min, max), which every thread carries;
* every MEASURES reference is ``MATCH_NUMBER()``, a navigation without a physical
  offset (``FIRST/LAST(X.f)``, ``X.f``, ``CLASSIFIER()``; with several variables or a
  logical offset only over every row) and every aggregate is ``count``, ``sum``,
  ``avg``, ``min``, ``max``, ``first`` or ``last`` of a field of one variable, a SUBSET
  or every row (``count(*)`` too).

Everything else (``$``; FIRST, a navigation's offsets, NEXT or CLASSIFIER in DEFINE; in
DEFINE an aggregate of a non-numeric field, two aggregates compared, an aggregate inside
arithmetic (``sum(A.x) / 2 > 1``) or under OR/NOT; an aggregate of an expression
(``max(A.x + 1)``, ``sum(MATCH_NUMBER())``), ``arbitrary``, ``max_by``, ``min_by`` and
``min`` / ``max`` of strings anywhere; measures with PREV/NEXT) runs on the
interpreter (:mod:`cep.engine.row_patterns.interpreter`, 8-26x slower: the kernel module
has the figures): :func:`plan` says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.expr import collect_nodes
from cep.engine.row_patterns.kernel import COMPARES, SKIPS
from cep.engine.row_patterns.program import Program, closure, reachable_vars
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, Nav, aggregate_qualifier

#: aggregates the kernel computes column-wise
AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "first", "last"})
#: types a residual comparison reads as float64 without changing its outcome
NUMERIC = frozenset({"double", "int"})
#: aggregates a DEFINE may compare in the kernel, as the VM numbers them
DEFINE_AGGREGATES = {"count": 0, "sum": 1, "avg": 2, "min": 3, "max": 4}
#: types of an aggregate's value the kernel compares as float64 (a count is a long)
AGG_VALUES = NUMERIC | {"long"}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


@dataclass(frozen=True)
class Residual:
    """A DEFINE conjunct ``lhs OP LAST(nav.field)``: ``lhs`` reads only the row and
    ``PREV`` rows."""

    var: int
    lhs: ir.TExpr
    op: str
    nav: int
    field: str


@dataclass(frozen=True)
class AggCondition:
    """A DEFINE conjunct ``AGG(X.f) OP rhs`` (either side): AGG over the thread's rows so
    far whose variable is in ``members`` (the candidate row, labelled ``var``, counts
    when ``var`` is), NULLs skipped; ``field`` None is ``count(*)``. ``rhs`` reads only
    the row and ``PREV`` rows (evaluated column-wise), or is None and the right side is
    the last row of variable ``nav`` (its field ``nav_field``)."""

    var: int
    fn: str
    members: tuple[int, ...]
    field: str | None
    op: str
    rhs: ir.TExpr | None
    nav: int = -1
    nav_field: str = ""


@dataclass(frozen=True)
class KernelPlan:
    """A rule's program as the VM's arrays, and its DEFINEs split for it."""

    variables: tuple[str, ...]
    #: per variable, its conjuncts that read the row and PREV rows (empty: none)
    local: tuple[tuple[ir.TExpr, ...], ...]
    residuals: tuple[Residual, ...]
    #: the conjuncts that compare a running aggregate, by variable
    aggregates: tuple[AggCondition, ...]
    #: ``reads_agg[pc, k]``: whether aggregate conjunct k's DEFINE is reachable from pc
    #: (two threads there are one only when that aggregate's state agrees)
    reads_agg: np.ndarray
    pvar: np.ndarray
    pmatch: np.ndarray
    pexcl: np.ndarray
    clo_off: np.ndarray
    clo_pc: np.ndarray
    clo_start: np.ndarray
    reads_last: np.ndarray
    skip: int
    skip_set: np.ndarray
    #: whether the pattern has ``^`` (a key's state then stays: its rows keep their
    #: places, the first at 0)
    anchored: bool

    @property
    def residual_fields(self) -> tuple[str, ...]:
        """The fields read at another variable's last row (residuals, aggregates)."""
        return tuple(sorted({r.field for r in self.residuals}
                            | {a.nav_field for a in self.aggregates if a.nav >= 0}))

    @property
    def aggregate_fields(self) -> tuple[str, ...]:
        """The fields DEFINE aggregates."""
        return tuple(sorted({a.field for a in self.aggregates if a.field is not None}))


def plan(rule: ir.MatchRecognizeRule, program: Program, groups: dict[str, tuple[str, ...]],
         types: dict[str, str]) -> KernelPlan | str:
    """The kernel's plan for ``rule``, or why it runs on the interpreter."""
    if any(op[0] == "end" for op in program.ops):
        return "$ in the pattern"
    if any(ref.qualifier.startswith("__next")
           or ((nav := Nav.parse(ref.qualifier)) is not None and nav.physical > 0)
           for ref in collect_nodes([c for _, c in rule.defines], ir.FieldRef)):
        return "NEXT in DEFINE (rows wait for the rows it reads after them)"
    if any(whole for _, _, whole in program.reads):
        return "a DEFINE reads more of the match than each variable's last row"
    variables = tuple(rule.variables)
    index = {v: n for n, v in enumerate(variables)}
    defines = dict(rule.defines)
    local: list[tuple[ir.TExpr, ...]] = []
    residuals: list[Residual] = []
    aggregates: list[AggCondition] = []
    for var in variables:
        parts: list[ir.TExpr] = []
        for conjunct in _conjuncts(defines.get(var)):
            if _reads_row_only(conjunct, var):
                parts.append(conjunct)
                continue
            found = (_residual(conjunct, var, index, types)
                     or _aggregate(conjunct, var, index, groups, types))
            if found is None:
                return (f"DEFINE {var} reads more of the match than each variable's last "
                        "row and running aggregates of numeric fields")
            (residuals if isinstance(found, Residual) else aggregates).append(found)
        local.append(tuple(parts))
    why = _measures_why(rule, groups)
    if why:
        return why
    ops = program.ops
    pvar = np.array([index[op[1]] if op[0] == "var" else -1 for op in ops], np.int64)
    pmatch = np.array([op[0] == "match" for op in ops], np.bool_)
    pexcl = np.array([op[0] == "var" and op[2] for op in ops], np.bool_)
    # ^ holds only at the partition's first row: the closures past it end there, but
    # the first instruction's at that row
    closures = ([closure(ops, pc, False) for pc in range(len(ops))] if program.anchored
                else program.closures)
    clo_start = np.array(closure(ops, 0, True) if program.anchored else closures[0],
                         np.int64)
    sizes = [len(c) for c in closures]
    clo_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    clo_pc = np.array([pc for c in closures for pc in c], np.int64)
    skip_set = np.zeros(len(variables), np.bool_)
    for var in groups.get(rule.skip_var, ()) if rule.skip_var else ():
        skip_set[index[var]] = True
    residuals.sort(key=lambda r: r.var)
    aggregates.sort(key=lambda a: a.var)
    # what tells two threads at pc apart: the last rows of the variables a DEFINE
    # reachable from pc reads, and the state of each aggregate such a DEFINE compares
    reads_last = np.zeros((len(ops), len(variables)), np.bool_)
    reads_agg = np.zeros((len(ops), len(aggregates)), np.bool_)
    for pc in range(len(ops)):
        ahead = {index[v] for v in reachable_vars(list(ops), pc)}
        for res in residuals:
            reads_last[pc, res.nav] |= res.var in ahead
        for k, agg in enumerate(aggregates):
            reads_agg[pc, k] = agg.var in ahead
            if agg.nav >= 0:
                reads_last[pc, agg.nav] |= agg.var in ahead
    return KernelPlan(variables, tuple(local), tuple(residuals), tuple(aggregates),
                      reads_agg, pvar, pmatch, pexcl, clo_off, clo_pc, clo_start, reads_last,
                      SKIPS[rule.skip], skip_set, program.anchored)


def _conjuncts(cond: ir.TExpr | None) -> list[ir.TExpr]:
    """The parts of an AND (a condition is true where all of them are)."""
    if cond is None:
        return []
    if isinstance(cond, ir.Op) and cond.op == "and":
        return _conjuncts(cond.args[0]) + _conjuncts(cond.args[1])
    return [cond]


def _reads_row_only(expr: ir.TExpr, var: str) -> bool:
    """Whether ``expr`` (in ``var``'s DEFINE) reads only the candidate row and PREV
    rows, and aggregates nothing."""
    if collect_nodes([expr], ir.Agg) or collect_nodes([expr], ir.Prev):
        return False
    return all(r.qualifier == var or r.qualifier.startswith("__prev")
               for r in collect_nodes([expr], ir.FieldRef))


def _residual(expr: ir.TExpr, var: str, index: dict[str, int], types: dict[str, str]
              ) -> Residual | None:
    """``expr`` as ``lhs OP LAST(X.f)`` (either side), or None."""
    if not (isinstance(expr, ir.Op) and expr.op in COMPARES and len(expr.args) == 2):
        return None
    for lhs, other, op in ((expr.args[0], expr.args[1], expr.op),
                           (expr.args[1], expr.args[0], FLIP[expr.op])):
        nav = _last_row(other, index, types)
        if nav >= 0 and lhs.type in NUMERIC and _reads_row_only(lhs, var):
            return Residual(index[var], lhs, op, nav, other.name)  # type: ignore[union-attr]
    return None


def _last_row(ref: ir.TExpr, index: dict[str, int], types: dict[str, str]) -> int:
    """The variable whose last row ``ref`` is (``X.f``, a number), or -1."""
    if not isinstance(ref, ir.FieldRef) or ref.index is not None:
        return -1
    nav = Nav.parse(ref.qualifier)
    if (nav is None or nav.labels is None or len(nav.labels) != 1 or not nav.last
            or nav.logical or nav.physical or ref.name == CLASSIFIER
            or nav.labels[0] not in index or types.get(ref.name) not in NUMERIC):
        return -1
    return index[nav.labels[0]]


def _aggregate(expr: ir.TExpr, var: str, index: dict[str, int],
               groups: dict[str, tuple[str, ...]], types: dict[str, str]
               ) -> AggCondition | None:
    """``expr`` as ``AGG(X.f) OP rhs`` (either side), or None."""
    if not (isinstance(expr, ir.Op) and expr.op in COMPARES and len(expr.args) == 2):
        return None
    for agg, rhs, op in ((expr.args[0], expr.args[1], expr.op),
                         (expr.args[1], expr.args[0], FLIP[expr.op])):
        if (not isinstance(agg, ir.Agg) or agg.name not in DEFINE_AGGREGATES
                or agg.type not in AGG_VALUES):
            continue
        field = None
        members = tuple(range(len(index)))
        if agg.arg is not None:
            arg = agg.arg
            if (not isinstance(arg, ir.FieldRef) or arg.index is not None
                    or types.get(arg.name) not in NUMERIC
                    or not (arg.qualifier == ALL or arg.qualifier in groups)):
                continue
            field = arg.name
            if arg.qualifier != ALL:
                members = tuple(sorted(index[v] for v in groups[arg.qualifier]))
        elif agg.name != "count":
            continue
        nav = _last_row(rhs, index, types)
        if nav >= 0:
            return AggCondition(index[var], agg.name, members, field, op, None, nav,
                                rhs.name)  # type: ignore[union-attr]
        if rhs.type in NUMERIC and _reads_row_only(rhs, var):
            return AggCondition(index[var], agg.name, members, field, op, rhs)
    return None


def _measures_why(rule: ir.MatchRecognizeRule, groups: dict[str, tuple[str, ...]]
                  ) -> str | None:
    """Why the kernel cannot compute the rule's MEASURES column-wise (None: it can)."""
    exprs = [c.expr for c in rule.measures]
    for agg in collect_nodes(exprs, ir.Agg):
        if agg.name not in AGGREGATES:
            return f"{agg.name} in MEASURES"
        arg = agg.arg
        if arg is None:
            continue
        if not isinstance(arg, ir.FieldRef) or arg.index is not None:
            return "an aggregate of an expression in MEASURES"
        qualifier, _ = aggregate_qualifier(arg.qualifier)  # FINAL inside: same columns
        if not (qualifier == ALL or qualifier in groups):
            return "an aggregate of an expression in MEASURES"
        if arg.name == CLASSIFIER and agg.name != "count":
            return f"{agg.name}(CLASSIFIER()) in MEASURES"
        if agg.name in ("min", "max") and agg.type not in AGG_VALUES | {"timestamp"}:
            return f"{agg.name} of a {agg.type} in MEASURES"
    if collect_nodes(exprs, ir.Prev):
        return "a window function in MEASURES"
    for ref in collect_nodes(exprs, (ir.FieldRef, ir.Agg)):
        if not isinstance(ref, ir.FieldRef) or ref.qualifier == MATCH:
            continue  # an aggregate's argument is checked above
        nav = Nav.parse(ref.qualifier)
        if nav is None:
            return f"{ref.qualifier}.{ref.name} in MEASURES"
        if nav.physical:
            return "PREV/NEXT in MEASURES"
        if nav.labels is not None and nav.logical:
            return "a logical offset over a variable in MEASURES"
    return None
