"""Which row of a match a navigation (``grammar.row_nav.Nav``) reads.

Positions are relative to the match's first row. ``labels`` are the variables of the
match's rows so far (in DEFINE, the candidate row's included: it is the current row);
``current`` is the row RUNNING semantics search up to (FINAL: the whole match).
"""

from __future__ import annotations

from grammar.row_nav import Nav


def position(nav: Nav, labels: list[str], current: int) -> int | None:
    """The position ``nav`` reads (physical offset applied: it may lie outside the
    match, and the caller bounds it), or None when the logical search finds no row."""
    # RUNNING semantics limit LAST to the rows up to the current one; FIRST counts from
    # the match's first row over every row known (as Trino does)
    end = len(labels) - 1 if nav.final or not nav.last else current
    if end < 0:
        return None
    if nav.labels is None:
        at = end - nav.logical if nav.last else nav.logical
        if not 0 <= at <= end:
            return None
    else:
        at = _nth(nav, labels, end)
        if at is None:
            return None
    return at + nav.physical


def _nth(nav: Nav, labels: list[str], end: int) -> int | None:
    """The ``logical``-th row labelled one of ``nav.labels``, from the last up to
    ``end`` or from the first."""
    wanted = nav.labels or ()
    seen = 0
    steps = range(end, -1, -1) if nav.last else range(end + 1)
    for k in steps:
        if labels[k] in wanted:
            if seen == nav.logical:
                return k
            seen += 1
    return None


def reads(nav: Nav, field: str, classifier: str) -> tuple[tuple[str, ...], tuple[str, ...],
                                                          bool]:
    """What of a thread's labels decides the row ``nav`` reads (for thread equivalence):
    variables whose last row matters, variables all of whose rows matter, and whether
    the whole label sequence does (a CLASSIFIER read)."""
    if field == classifier:
        return (), (), True
    if nav.labels is None:
        return (), (), False  # every row counts: positions do not depend on labels
    if nav.last and nav.logical == 0 and len(nav.labels) == 1:
        return nav.labels, (), False
    return (), nav.labels, False
