"""Whether a MATCH_RECOGNIZE rule runs on the compiled kernel, and its program as arrays.

Decided once per rule, when its operator is made (never per batch). The kernel
(:mod:`cep.engine.row_pattern_kernel`) takes a rule when

* its pattern has no ``$`` (ONE ROW or ALL ROWS PER MATCH, every way of showing empty
  matches and unmatched rows, ``{- -}``, ``^``);
* every DEFINE is a conjunction (AND) of conditions that each read only the candidate
  row and ``PREV`` rows of the key (evaluated column-wise for the whole batch), or
  compare such an expression with ``X.f`` (the last row of another variable, a number)
  — what makes threads differ is then only the last row of each variable;
* every MEASURES reference is ``MATCH_NUMBER()``, a navigation without a physical
  offset (``FIRST/LAST(X.f)``, ``X.f``, ``CLASSIFIER()``; with several variables or a
  logical offset only over every row) and every aggregate is ``count``, ``sum``,
  ``avg``, ``min``, ``max``, ``first`` or ``last`` of a field of one variable, a SUBSET
  or every row (``count(*)`` too).

Everything else (``$``, DEFINEs that read running
aggregates, FIRST, a navigation's offsets, NEXT or CLASSIFIER, measures with PREV/NEXT) runs
on the interpreter (:mod:`cep.engine.row_pattern_matcher`): :func:`plan` says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.engine.expr import collect_nodes
from cep.engine.row_pattern_kernel import COMPARES, SKIPS
from cep.engine.row_pattern_program import Program, closure
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, Nav, aggregate_qualifier

#: aggregates the kernel computes column-wise
AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "first", "last"})
#: types a residual comparison reads as float64 without changing its outcome
NUMERIC = frozenset({"double", "int"})
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
class KernelPlan:
    """A rule's program as the VM's arrays, and its DEFINEs split for it."""

    variables: tuple[str, ...]
    #: per variable, its conjuncts that read the row and PREV rows (empty: none)
    local: tuple[tuple[ir.TExpr, ...], ...]
    residuals: tuple[Residual, ...]
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
        return tuple(sorted({r.field for r in self.residuals}))


def plan(rule: ir.MatchRecognizeRule, program: Program, groups: dict[str, tuple[str, ...]],
         types: dict[str, str]) -> KernelPlan | str:
    """The kernel's plan for ``rule``, or why it runs on the interpreter."""
    if any(op[0] == "end" for op in program.ops):
        return "$ in the pattern"
    if any(ref.qualifier.startswith("__next")
           or ((nav := Nav.parse(ref.qualifier)) is not None and nav.physical > 0)
           for ref in collect_nodes([c for _, c in rule.defines], ir.FieldRef)):
        return "NEXT in DEFINE (rows wait for the rows it reads after them)"
    if any(every or whole for _, every, whole in program.reads):
        return "a DEFINE reads more of the match than each variable's last row"
    variables = tuple(rule.variables)
    index = {v: n for n, v in enumerate(variables)}
    defines = dict(rule.defines)
    local: list[tuple[ir.TExpr, ...]] = []
    residuals: list[Residual] = []
    for var in variables:
        parts: list[ir.TExpr] = []
        for conjunct in _conjuncts(defines.get(var)):
            if _reads_row_only(conjunct, var):
                parts.append(conjunct)
                continue
            found = _residual(conjunct, var, index, types)
            if found is None:
                return f"DEFINE {var} reads other rows of the match"
            residuals.append(found)
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
    reads_last = np.zeros((len(ops), len(variables)), np.bool_)
    for pc, (last, _, _) in enumerate(program.reads):
        for var in last:
            reads_last[pc, index[var]] = True
    skip_set = np.zeros(len(variables), np.bool_)
    for var in groups.get(rule.skip_var, ()) if rule.skip_var else ():
        skip_set[index[var]] = True
    residuals.sort(key=lambda r: r.var)
    return KernelPlan(variables, tuple(local), tuple(residuals), pvar, pmatch, pexcl, clo_off,
                      clo_pc, clo_start, reads_last, SKIPS[rule.skip], skip_set,
                      program.anchored)


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
        if not isinstance(other, ir.FieldRef) or other.index is not None:
            continue
        nav = Nav.parse(other.qualifier)
        if (nav is None or nav.labels is None or len(nav.labels) != 1 or not nav.last
                or nav.logical or nav.physical or other.name == CLASSIFIER
                or nav.labels[0] not in index):
            continue
        if (types.get(other.name) not in NUMERIC or lhs.type not in NUMERIC
                or not _reads_row_only(lhs, var)):
            continue
        return Residual(index[var], lhs, op, index[nav.labels[0]], other.name)
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
