"""SQL:2016 row pattern recognition (MATCH_RECOGNIZE) read literally, by brute force: the
oracle of tests/semantics/test_row_pattern_oracle.py.

It shares no code with cep's matchers (``cep.engine.row_patterns``) nor with cep's
expression evaluator: patterns, conditions and measures are small trees of plain tuples,
built by the test beside the rule text they are rendered to, and evaluated here over Python lists.

The reading, per partition (its rows in input order):

* from each start row in turn, the candidate matches are enumerated depth first in the
  standard's preferment order (an alternation's branches left to right, a greedy
  quantifier one more iteration before stopping, a reluctant one stopping first, PERMUTE's
  permutations in lexicographic order of their items), each row labelled only if its
  variable's DEFINE holds over the candidate's rows labelled so far (running semantics,
  the candidate row included); the first complete candidate is the start's match. An
  iteration of a quantified group may match no row only while its minimum is not
  reached (a further empty iteration would repeat the same candidate: Trino's and the
  standard's guard against endless loops). ``^`` holds before a partition's first row,
  ``$`` after its last;
* AFTER MATCH SKIP then gives the next start: PAST LAST ROW the row after the match, TO
  NEXT ROW the row after its first, TO FIRST/LAST x the first/last row of x in the match;
  where that row is the match's first or x has no row in it (the standard's run-time
  error, which a stream cannot stop at) and after an empty match, the next row. cep's
  own TO CURRENT ROW is the match's last row;
* ONE ROW PER MATCH gives one row per match (an empty one too), its measures FINAL; ALL
  ROWS PER MATCH one per row of the match not excluded by ``{- -}``, RUNNING measures
  reading the match up to that row, FINAL ones the whole match; an empty match gives one
  row (its start's) unless OMIT EMPTY MATCHES; WITH UNMATCHED ROWS adds, with every
  measure NULL, each row that is in no match;
* MATCH_NUMBER() counts the partition's matches from 1, empty ones included.

Expressions are SQL's: NULL in, NULL out; comparisons give NULL on a NULL side and
AND/OR are three-valued; a DEFINE accepts a row only where its condition is true.
PREV/NEXT step physically from the row their argument names and may leave the match (not
the partition: NULL there); LAST (and a bare ``X.f``) counts back over the rows of the
match labelled X (any row for an unqualified field) from the current row, FIRST forward
from the match's first row (Trino lets it pass the current row: see :func:`_row_at`).

Trees:

* pattern: ``("var", X)``, ``("seq", [p...])``, ``("alt", [p...])``,
  ``("rep", p, low, high or None, greedy)``, ``("perm", [p...])``, ``("excl", p)``,
  ``("start",)``, ``("end",)``;
* expression: ``("const", x)``, ``("nav", "first"|"last", X or None, offset, field)``,
  ``("phys", steps, nav)`` (PREV: steps < 0), ``("agg", fn, X or None, field or None)``
  (``count(*)``: field None), ``("add", a, b)``, ``("cmp", op, a, b)``, ``("and", a, b)``,
  ``("or", a, b)``, ``("classifier",)``, ``("match_number",)``, ``("final", e)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

Row = dict
Labels = tuple  # of (variable, excluded) pairs, the match's rows from its start on


@dataclass(frozen=True)
class Rule:
    """What the oracle needs of a MATCH_RECOGNIZE rule (its trees, not its text)."""

    pattern: tuple
    defines: dict[str, tuple]
    measures: list[tuple[str, tuple]]
    rows: str  # "one" | "all" | "show" | "omit" | "unmatched"
    skip: str  # "past" | "next" | "current" | "first" | "last"
    skip_to: tuple[str, ...] = ()  # the variables of SKIP TO FIRST/LAST (a SUBSET's)
    subsets: dict[str, tuple[str, ...]] | None = None


@dataclass
class _Frame:
    """The place an expression is read at: the partition, the match's start and labels
    visible (running: up to the current row), the current row's position, the match's
    number and its labels in full (for FINAL)."""

    rows: Sequence[Row]
    start: int
    labels: Labels
    full: Labels
    number: int | None
    subsets: dict[str, tuple[str, ...]]


def _members(frame: _Frame, var: str | None) -> set[str] | None:
    if var is None:
        return None
    return set(frame.subsets.get(var, (var,)))


def _positions(frame: _Frame, var: str | None, labels: Labels) -> list[int]:
    members = _members(frame, var)
    return [frame.start + k for k, (label, _) in enumerate(labels)
            if members is None or label in members]


def _row_at(frame: _Frame, nav: tuple, labels: Labels) -> int | None:
    """The partition position a navigation names, or None (no such row)."""
    if nav[0] == "phys":
        inner = _row_at(frame, nav[2], labels)
        if inner is None:
            return None
        at = inner + nav[1]
        return at if 0 <= at < len(frame.rows) else None
    _, which, var, offset, _ = nav
    # FIRST counts from the match's first row and, as Trino reads it (its
    # testNavigationFunctions: RUNNING FIRST(value, 2) is the third row at the first),
    # may reach past the current row, up to the match's last; LAST counts back from the
    # current row
    places = _positions(frame, var, frame.full if which == "first" else labels)
    if offset >= len(places):
        return None
    return places[offset] if which == "first" else places[-1 - offset]


def _field(nav: tuple) -> str:
    return nav[4] if nav[0] == "nav" else _field(nav[2])


def evaluate(expr: tuple, frame: _Frame, final: bool = False) -> object:
    """``expr``'s value (None: NULL) at ``frame`` (``final``: over the whole match)."""
    kind = expr[0]
    labels = frame.full if final else frame.labels
    if kind == "const":
        return expr[1]
    if kind == "final":
        return evaluate(expr[1], frame, True)
    if kind in ("nav", "phys"):
        at = _row_at(frame, expr, labels)
        return None if at is None else frame.rows[at][_field(expr)]
    if kind == "classifier":
        return labels[-1][0] if labels else None
    if kind == "match_number":
        return frame.number
    if kind == "agg":
        _, fn, var, field = expr
        places = _positions(frame, var, labels)
        if field is None:
            return len(places)
        values = [frame.rows[p][field] for p in places if frame.rows[p][field] is not None]
        if fn == "count":
            return len(values)
        if not values:
            return None
        return {"sum": sum, "min": min, "max": max}[fn](values)
    if kind == "add":
        a, b = evaluate(expr[1], frame, final), evaluate(expr[2], frame, final)
        return None if a is None or b is None else a + b
    if kind == "cmp":
        a, b = evaluate(expr[2], frame, final), evaluate(expr[3], frame, final)
        if a is None or b is None:
            return None
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "=": a == b,
                "!=": a != b}[expr[1]]
    if kind in ("and", "or"):
        a, b = evaluate(expr[1], frame, final), evaluate(expr[2], frame, final)
        stop = kind == "or"  # the value that decides alone
        if a is stop or b is stop:
            return stop
        return None if a is None or b is None else not stop
    raise ValueError(f"unknown expression {expr!r}")


class _Search:
    """The candidate matches of one start, in preferment order."""

    def __init__(self, rule: Rule, rows: Sequence[Row], start: int) -> None:
        self.rule, self.rows, self.start = rule, rows, start
        self.subsets = rule.subsets or {}

    def accepts(self, var: str, labels: Labels) -> bool:
        """Whether ``var``'s DEFINE holds with the candidate row labelled (the last of
        ``labels``)."""
        cond = self.rule.defines.get(var)
        if cond is None:
            return True
        frame = _Frame(self.rows, self.start, labels, labels, None, self.subsets)
        return evaluate(cond, frame) is True

    def paths(self, node: tuple, labels: Labels) -> Iterator[Labels]:
        """Every way ``node`` goes on from ``labels``, most preferred first."""
        kind = node[0]
        at = self.start + len(labels)
        if kind == "var":
            yield from self._var(node[1], False, labels, at)
        elif kind == "excl":
            yield from self._excluded(node[1], labels)
        elif kind == "seq":
            yield from self._sequence(node[1], labels)
        elif kind == "alt":
            for item in node[1]:
                yield from self.paths(item, labels)
        elif kind == "perm":
            for order in itertools.permutations(node[1]):
                yield from self._sequence(list(order), labels)
        elif kind == "rep":
            _, item, low, high, greedy = node
            yield from self._repeat(item, low, high, greedy, 0, labels)
        elif kind == "start":
            if at == 0:
                yield labels
        elif kind == "end":
            if at == len(self.rows):
                yield labels
        else:
            raise ValueError(f"unknown pattern {node!r}")

    def _var(self, var: str, excluded: bool, labels: Labels, at: int) -> Iterator[Labels]:
        if at < len(self.rows):
            grown = (*labels, (var, excluded))
            if self.accepts(var, grown):
                yield grown

    def _excluded(self, node: tuple, labels: Labels) -> Iterator[Labels]:
        for path in self.paths(node, labels):
            yield (*labels, *((v, True) for v, _ in path[len(labels):]))

    def _sequence(self, items: list, labels: Labels) -> Iterator[Labels]:
        if not items:
            yield labels
            return
        for head in self.paths(items[0], labels):
            yield from self._sequence(items[1:], head)

    def _repeat(self, item: tuple, low: int, high: int | None, greedy: bool, count: int,
                labels: Labels) -> Iterator[Labels]:
        def more() -> Iterator[Labels]:
            if high is None or count < high:
                for step in self.paths(item, labels):
                    if len(step) > len(labels) or count < low:
                        yield from self._repeat(item, low, high, greedy, count + 1, step)

        def stop() -> Iterator[Labels]:
            if count >= low:
                yield labels

        for option in ((more, stop) if greedy else (stop, more)):
            yield from option()


def _resume(rule: Rule, start: int, labels: Labels) -> int:
    """The first row the next match may start at."""
    if not labels:
        return start + 1
    last = start + len(labels) - 1
    if rule.skip == "past":
        return last + 1
    if rule.skip == "next":
        return start + 1
    if rule.skip == "current":
        return max(last, start + 1)
    where = [k for k, (label, _) in enumerate(labels) if label in rule.skip_to]
    if not where:
        return start + 1
    k = where[0] if rule.skip == "first" else where[-1]
    return start + k if k > 0 else start + 1


def matches(rule: Rule, rows: Sequence[Row]) -> list[tuple[int, Labels | None, int]]:
    """One partition's matches as ``(start, labels, number)`` in start order, and the
    starts no match covers (labels None, number 0)."""
    out = []
    start, number, covered = 0, 0, 0
    while start < len(rows):
        found = next(_Search(rule, rows, start).paths(rule.pattern, ()), None)
        if found is None:
            if start >= covered:
                out.append((start, None, 0))
            start += 1
            continue
        number += 1
        out.append((start, found, number))
        covered = max(covered, start + len(found))
        start = _resume(rule, start, found)
    return out


def output(rule: Rule, rows: Sequence[Row]) -> list[dict]:
    """One partition's output rows: each the row it is reported at (its start's for a
    match in ONE ROW PER MATCH, None there for an empty one) under ``"row"``, and the
    measures by name."""
    subsets = rule.subsets or {}
    out: list[dict] = []
    for start, labels, number in matches(rule, rows):
        if labels is None:
            if rule.rows == "unmatched":
                out.append({"row": rows[start], **dict.fromkeys(n for n, _ in rule.measures)})
            continue

        def measured(upto: Labels, labels: Labels = labels, start: int = start,
                     number: int = number) -> dict:
            frame = _Frame(rows, start, upto, labels, number, subsets)
            return {name: evaluate(expr, frame) for name, expr in rule.measures}

        if rule.rows == "one":
            out.append({"row": None, **measured(labels)})
        elif not labels:
            if rule.rows != "omit":
                out.append({"row": rows[start], **measured(())})
        else:
            out.extend({"row": rows[start + k], **measured(labels[:k + 1])}
                       for k, (_, excluded) in enumerate(labels) if not excluded)
    return out
