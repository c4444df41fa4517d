"""MATCH_RECOGNIZE's matcher against a brute-force reading of SQL:2016: for each start
in turn (AFTER MATCH SKIP PAST LAST ROW), the first complete match that backtracking
finds when it tries every choice in preference order (a greedy quantifier one more
iteration first, a reluctant one fewer, an alternation its left branch) over the whole
input. Random patterns, random DEFINEs (one of them reading another variable's last
row, so merged threads would lose matches), random rows; the engine runs them in
random batch sizes, its matches held until the input's end decides them.

Oracle: ``_expected`` below (shares no code with the matchers). It runs the rule as
the engine picks its form (the kernel, for these rules); the wider oracle of
tests/semantics/test_row_pattern_oracle.py compares both matchers, each forced."""

from __future__ import annotations

import json
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine.output import output_records
from cep.io.inputs import load_inputs
from cep.reference import run_reference
from grammar.compile import compile_text

SCHEMA = "CREATE SCHEMA T (id int, v int, ts timestamp) TIMESTAMP ts;\n"
VARS = ("A", "B", "C", "X")

# a pattern as (text, tree); a tree is ("var", V) | ("seq", items) | ("alt", items) |
# ("rep", item, low, high, greedy); loop bodies may match no row (``((A)*?)+``).
variable = st.sampled_from(VARS).map(lambda v: (v, ("var", v)))


def _combine(children: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.lists(children, min_size=2, max_size=3)
    seq = pair.map(lambda items: (" ".join(t for t, _ in items),
                                  ("seq", [n for _, n in items])))
    alt = pair.map(lambda items: ("(" + " | ".join(t for t, _ in items) + ")",
                                  ("alt", [n for _, n in items])))
    quantifiers = st.sampled_from([("*", 0, None), ("+", 1, None), ("?", 0, 1),
                                   ("{1,2}", 1, 2), ("{2}", 2, 2)])
    rep = st.tuples(children, quantifiers, st.booleans()).map(
        lambda x: (f"({x[0][0]}){x[1][0]}{'' if x[2] else '?'}",
                   ("rep", x[0][1], x[1][1], x[1][2], x[2])))
    return st.one_of(seq, alt, rep)


patterns = st.recursive(variable, _combine, max_leaves=5)
# often ending with X, whose DEFINE reads B's last row: where merging threads that
# differ in it would lose the match
patterns = st.one_of(patterns, patterns.map(
    lambda p: (f"({p[0]}) X", ("seq", [p[1], ("var", "X")]))))


def _paths(node: tuple, ok, labels: list[str], n: int) -> Iterator[list[str]]:
    """Every way ``node`` matches from row ``len(labels)`` on, in preference order."""
    kind = node[0]
    if kind == "var":
        if len(labels) < n and ok(node[1], labels):
            yield [*labels, node[1]]
    elif kind == "seq":
        yield from _sequence(node[1], ok, labels, n)
    elif kind == "alt":
        for item in node[1]:
            yield from _paths(item, ok, labels, n)
    else:
        _, item, low, high, greedy = node
        yield from _repeat(item, low, high, greedy, 0, ok, labels, n)


def _sequence(items: list, ok, labels: list[str], n: int) -> Iterator[list[str]]:
    if not items:
        yield labels
        return
    for head in _paths(items[0], ok, labels, n):
        yield from _sequence(items[1:], ok, head, n)


def _repeat(item, low, high, greedy, count, ok, labels, n) -> Iterator[list[str]]:
    def more() -> Iterator[list[str]]:
        if high is None or count < high:
            for step in _paths(item, ok, labels, n):
                # an iteration may match no row only while the minimum is not reached
                # (as Trino: a later empty iteration would repeat the same thread)
                if len(step) > len(labels) or count < low:
                    yield from _repeat(item, low, high, greedy, count + 1, ok, step, n)

    def stop() -> Iterator[list[str]]:
        if count >= low:
            yield labels

    for option in ((more, stop) if greedy else (stop, more)):
        yield from option()


def _expected(tree, values: list[int], sets: dict[str, set[int]]) -> list[tuple]:
    out, start, number = [], 0, 0
    while start < len(values):
        def ok(var, labels, start=start):
            v = values[start + len(labels)]
            if var == "X":
                last_b = [start + k for k, label in enumerate(labels) if label == "B"]
                return bool(last_b) and v == values[last_b[-1]]
            return v in sets[var]
        match = next(_paths(tree, ok, [], len(values) - start), None)
        if match is None:
            start += 1
            continue
        number += 1
        if not match:
            out.append((start + 1, number, None))
            start += 1
            continue
        out.extend((start + k + 1, number, label) for k, label in enumerate(match))
        start += len(match)
    return out


@settings(max_examples=300, deadline=None)
@given(pattern=patterns, values=st.lists(st.integers(0, 2), min_size=1, max_size=7),
       sets=st.fixed_dictionaries({v: st.sets(st.integers(0, 2)) for v in "ABC"}),
       batch=st.sampled_from([None, 1, 2, 3]))
def test_the_matcher_finds_the_preferred_match_of_each_start(tmp_path_factory, pattern,
                                                             values, sets, batch):
    text, tree = pattern
    used = {v for v in VARS if v in text}
    defines = ", ".join(
        [f"{v} AS v IN ({', '.join(map(str, sorted(s)))})" if s else f"{v} AS false"
         for v, s in sets.items() if v in used]
        + (["X AS " + ("v = B.v" if "B" in used else "false")] if "X" in used else []))
    rule = (f"SELECT id, mn, cl FROM T MATCH_RECOGNIZE ( MEASURES MATCH_NUMBER() AS mn, "
            f"CLASSIFIER() AS cl ALL ROWS PER MATCH PATTERN ({text}) DEFINE {defines} );")
    module = compile_text(SCHEMA + rule)
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    path.write_text("".join(json.dumps(dict(id=i, v=v, ts=i * 1000)) + "\n"
                            for i, v in enumerate(values, start=1)))
    loaded = load_inputs(module, [str(path)], None)
    out = output_records(run_reference(module, loaded.tables, batch))
    assert [(r["id"], r["mn"], r["cl"]) for r in out] == _expected(tree, values, sets)
