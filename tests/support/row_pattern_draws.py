"""Hypothesis strategies for MATCH_RECOGNIZE rules drawn as text and as the trees of
:mod:`support.row_pattern_oracle` at once (each piece's text and tree are made
together, so the oracle reads exactly the rule cep compiles).

``kernel=True`` keeps to what the compiled matcher takes (docs/architecture.md: no
``$``; a DEFINE a conjunction of conditions on the candidate row and its PREV rows,
comparisons of such an expression with another variable's last row, and running
aggregates compared with either; MEASURES without physical navigation or logical offsets
over one variable); ``kernel=False`` adds ``$``, NEXT, FIRST/LAST with offsets, PREV of
another variable's row, disjunctions relating variables and PREV/NEXT in MEASURES, all of
which only the interpreter runs.
"""

from __future__ import annotations

from hypothesis import strategies as st

from support.row_pattern_oracle import Rule

VARS = ("A", "B", "C")
Piece = tuple[str, tuple]  # (text, tree)

QUANTIFIERS = [("*", 0, None), ("+", 1, None), ("?", 0, 1), ("{2}", 2, 2), ("{1,2}", 1, 2),
               ("{0,2}", 0, 2), ("{2,}", 2, None), ("{1,}", 1, None)]


def _combine(children: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.lists(children, min_size=2, max_size=3)
    seq = pair.map(lambda items: (" ".join(t for t, _ in items),
                                  ("seq", [n for _, n in items])))
    alt = pair.map(lambda items: ("(" + " | ".join(t for t, _ in items) + ")",
                                  ("alt", [n for _, n in items])))
    rep = st.tuples(children, st.sampled_from(QUANTIFIERS), st.booleans()).map(
        lambda x: (f"({x[0][0]}){x[1][0]}{'' if x[2] else '?'}",
                   ("rep", x[0][1], x[1][1], x[1][2], x[2])))
    # an excluded part beside one that is not: a whole pattern excluded would hide every
    # row of ALL ROWS PER MATCH
    excluded = st.tuples(children, children, st.booleans()).map(
        lambda x: (f"{{- {x[0][0]} -}} {x[1][0]}", ("seq", [("excl", x[0][1]), x[1][1]]))
        if x[2] else (f"{x[1][0]} {{- {x[0][0]} -}}", ("seq", [x[1][1], ("excl", x[0][1])])))
    perm = st.lists(children, min_size=2, max_size=3).map(
        lambda items: ("PERMUTE(" + ", ".join(t for t, _ in items) + ")",
                       ("perm", [n for _, n in items])))
    return st.one_of(seq, alt, rep, excluded, perm)


def patterns(kernel: bool) -> st.SearchStrategy[Piece]:
    """Patterns of up to five variables, sometimes anchored (``$`` off the kernel)."""
    variable = st.sampled_from(VARS).map(lambda v: (v, ("var", v)))
    inner = st.recursive(variable, _combine, max_leaves=5)
    anchored = [inner.map(lambda p: (f"^ {p[0]}", ("seq", [("start",), p[1]]))),
                st.tuples(inner, inner).map(lambda x: (
                    f"(^ {x[0][0]} | {x[1][0]})",
                    ("alt", [("seq", [("start",), x[0][1]]), x[1][1]])))]
    if not kernel:
        anchored += [inner.map(lambda p: (f"{p[0]} $", ("seq", [p[1], ("end",)]))),
                     st.tuples(inner, inner).map(lambda x: (
                         f"({x[0][0]} $ | {x[1][0]})",
                         ("alt", [("seq", [x[0][1], ("end",)]), x[1][1]])))]
    return st.one_of(*[inner] * (3 * len(anchored)), *anchored)


def _last(var: str | None, field: str = "v") -> Piece:
    return (f"{var}.{field}" if var else field, ("nav", "last", var, 0, field))


def _prev(piece: Piece, steps: int) -> Piece:
    word = "PREV" if steps < 0 else "NEXT"
    suffix = f", {abs(steps)}" if abs(steps) != 1 else ""
    return (f"{word}({piece[0]}{suffix})", ("phys", steps, piece[1]))


def _row_terms(var: str) -> list[Piece]:
    """Terms that read only the candidate row (labelled ``var``) and rows before it."""
    return [_last(var), _last(var, "w"), _prev(_last(var), -1), _prev(_last(var), -2),
            (f"{var}.v + 1", ("add", _last(var)[1], ("const", 1))),
            ("1", ("const", 1)), ("2", ("const", 2))]


def _aggregates(used: list[str]) -> list[Piece]:
    out: list[Piece] = [("count(*)", ("agg", "count", None, None)),
                        ("sum(v)", ("agg", "sum", None, "v"))]
    for x in [*used, "U"]:
        out += [(f"{fn}({x}.v)", ("agg", fn, x, "v")) for fn in ("count", "sum", "min", "max")]
    return out


def _compare(a: Piece, op: str, b: Piece) -> Piece:
    return (f"{a[0]} {op} {b[0]}", ("cmp", op, a[1], b[1]))


def _join(word: str, a: Piece, b: Piece) -> Piece:
    return (f"({a[0]}) {word} ({b[0]})", (word.lower(), a[1], b[1]))


# weighted to the permissive comparisons, so that most rules match something
OPS = st.sampled_from(["<=", ">=", "!=", "<=", ">=", "!=", "<=", ">=", "<", ">", "="])


@st.composite
def _conjunct(draw: st.DrawFn, var: str, used: list[str], kernel: bool) -> Piece:
    others = [o for o in used if o != var]
    rows = st.sampled_from(_row_terms(var))
    backrefs = st.sampled_from([_last(o) for o in others]) if others else rows
    kinds = ["row", "row_or", "backref", "backref", "agg"]
    if not kernel:
        kinds += ["wide", "wide", "wide_or"]
    kind = draw(st.sampled_from(kinds))
    if kind == "row":
        return _compare(draw(rows), draw(OPS), draw(rows))
    if kind == "row_or":
        return _join("OR", _compare(draw(rows), draw(OPS), draw(rows)),
                     _compare(draw(rows), draw(OPS), draw(rows)))
    if kind == "backref":
        return _compare(draw(rows), draw(OPS), draw(backrefs))
    if kind == "agg":
        return _compare(draw(st.sampled_from(_aggregates(used))), draw(OPS),
                        draw(st.one_of(rows, backrefs)))
    wide = st.sampled_from(_wide_terms(var, used))
    if kind == "wide":
        return _compare(draw(wide), draw(OPS), draw(st.one_of(wide, rows)))
    return _join("OR", _compare(draw(wide), draw(OPS), draw(rows)),
                 _compare(draw(backrefs), draw(OPS), draw(rows)))


def _wide_terms(var: str, used: list[str]) -> list[Piece]:
    """Terms only the interpreter evaluates: NEXT, FIRST and offsets over the match,
    PREV of another variable's row, an unqualified field (the candidate row)."""
    out = [_prev(_last(var), 1), _prev(_last(None), 2), _last(None)]
    for o in used:
        out += [(f"FIRST({o}.v)", ("nav", "first", o, 0, "v")),
                (f"LAST({o}.v, 1)", ("nav", "last", o, 1, "v")),
                _prev(_last(o), -1)]
    return out


@st.composite
def _condition(draw: st.DrawFn, var: str, used: list[str], kernel: bool) -> Piece | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    parts = draw(st.lists(_conjunct(var, used, kernel), min_size=1,
                          max_size=draw(st.sampled_from([1, 1, 2]))))
    out = parts[0]
    for part in parts[1:]:
        out = _join("AND", out, part)
    return out


def _measures(used: list[str], kernel: bool) -> list[Piece]:
    out: list[Piece] = [
        ("MATCH_NUMBER()", ("match_number",)), ("CLASSIFIER()", ("classifier",)),
        ("count(*)", ("agg", "count", None, None)),
        ("FINAL count(*)", ("final", ("agg", "count", None, None))),
        ("FIRST(v, 1)", ("nav", "first", None, 1, "v")), ("LAST(id)", _last(None, "id")[1]),
        ("FINAL LAST(id)", ("final", _last(None, "id")[1])),
        ("sum(U.v)", ("agg", "sum", "U", "v")), ("FINAL CLASSIFIER()", ("final", ("classifier",))),
    ]
    for x in used:
        out += [(f"FIRST({x}.v)", ("nav", "first", x, 0, "v")), _last(x),
                (f"FINAL LAST({x}.v)", ("final", _last(x)[1])),
                (f"FINAL FIRST({x}.id)", ("final", ("nav", "first", x, 0, "id"))),
                (f"sum({x}.v)", ("agg", "sum", x, "v")),
                (f"count({x}.v)", ("agg", "count", x, "v")),
                (f"max({x}.w)", ("agg", "max", x, "w")),
                (f"FINAL min({x}.v)", ("final", ("agg", "min", x, "v")))]
        if not kernel:
            out += [_prev(_last(x), -1), (f"LAST({x}.v, 1)", ("nav", "last", x, 1, "v")),
                    _prev(_last(x, "id"), 1)]
    return out


ROWS = [("", "one"), ("ONE ROW PER MATCH", "one"), ("ALL ROWS PER MATCH", "all"),
        ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", "show"),
        ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "omit"),
        ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "unmatched")]


@st.composite
def rules(draw: st.DrawFn, kernel: bool) -> tuple[str, Rule]:
    """A rule over ``S (k, id, v, w)`` partitioned by ``k``: its text and its trees."""
    text, tree = draw(patterns(kernel))
    used = [v for v in VARS if v in text]
    subset = tuple(used[:2])
    defines: list[tuple[str, Piece]] = []
    for var in used:
        cond = draw(_condition(var, used, kernel))
        if cond is not None:
            defines.append((var, cond))
    if not defines:  # DEFINE is not optional; a variable it leaves out matches any row
        defines.append((used[0], ("true", ("const", True))))
    picked = draw(st.lists(st.sampled_from(_measures(used, kernel)), min_size=1, max_size=5,
                           unique_by=lambda p: p[0]))
    rows_text, rows = draw(st.sampled_from(ROWS))
    skip_kind = draw(st.sampled_from(["past", "next", "current", "first", "last", "to"]))
    target = draw(st.sampled_from([*used, "U"]))
    skip_text = {"past": "PAST LAST ROW", "next": "TO NEXT ROW", "current": "TO CURRENT ROW",
                 "first": f"TO FIRST {target}", "last": f"TO LAST {target}",
                 "to": f"TO {target}"}[skip_kind]
    skip = "last" if skip_kind == "to" else skip_kind
    members = subset if target == "U" else (target,)
    measures = ", ".join(f"{t} AS m{n}" for n, (t, _) in enumerate(picked))
    define = ", ".join(f"{v} AS {t}" for v, (t, _) in defines)
    text = (f"SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES {measures} "
            f"{rows_text} AFTER MATCH SKIP {skip_text} PATTERN ({text}) "
            f"SUBSET U = ({', '.join(subset)}) "
            + (f"DEFINE {define} " if defines else "") + ");")
    return text, Rule(tree, {v: c[1] for v, c in defines},
                      [(f"m{n}", e) for n, (_, e) in enumerate(picked)], rows, skip,
                      members if skip in ("first", "last") else (), {"U": subset})
