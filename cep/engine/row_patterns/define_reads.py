"""What a MATCH_RECOGNIZE rule's DEFINE conditions read, found once when the operator is
made: the fields outside aggregates, how many rows before and after the candidate a
condition reads directly (``PREV``/``NEXT``), and which of a thread's labels it reads
(``program.Reads``), which decides what a thread must keep.
"""

from __future__ import annotations

from cep.engine.expr import collect_nodes
from cep.engine.row_patterns.navigation import reads as nav_reads
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, Nav, aggregate_rows


def outside_aggregates(expr: ir.TExpr) -> list[ir.FieldRef]:
    """The field references of an expression that no aggregate's argument holds."""
    return [n for n in collect_nodes([expr], (ir.FieldRef, ir.Agg))
            if isinstance(n, ir.FieldRef)]


def rows_around(refs: list[tuple[str, str]], prefix: str) -> int:
    """How many rows before (``__prev``) or after (``__next``) the candidate a DEFINE
    reading ``refs`` reads directly."""
    return max([int(q[6:]) for q, _ in refs if q.startswith(prefix)], default=0)


def define_reads(refs: list[tuple[str, str]], aggs: list[ir.Agg],
                  groups: dict[str, tuple[str, ...]]
                  ) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """What a DEFINE reading ``refs`` and aggregating ``aggs`` reads of a thread's
    labels (see ``program.Reads``); an aggregate over one variable reads all
    of its rows, one over every row (or ``count(*)``) none in particular, unless its
    arguments read each row's label (``max(CLASSIFIER())``): then every label."""
    last: set[str] = set()
    every: set[str] = set()
    whole = False
    for agg in aggs:
        if agg.arg is None:
            continue
        rows, _ = aggregate_rows(agg)
        every.update(groups.get(rows, ()))
        whole = whole or (rows == ALL and any(
            ref.name == CLASSIFIER for ref in collect_nodes([agg.arg, agg.by], ir.FieldRef)))
    for qual, name in refs:
        nav = Nav.parse(qual)
        if nav is None:
            continue
        var_last, var_every, var_whole = nav_reads(nav, name, CLASSIFIER)
        last.update(var_last)
        every.update(var_every)
        whole = whole or var_whole
    return tuple(sorted(last)), tuple(sorted(every)), whole
