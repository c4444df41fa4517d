"""NEXT in MATCH_RECOGNIZE's DEFINE (SQL:2016, Oracle and Trino): a condition reads the
key's rows after the row it navigates from, the candidate's included, NULL past the
key's last row; CLASSIFIER past the candidate is NULL (no label yet).

On a stream a row whose DEFINE reads up to k rows ahead is fed to the matcher once the
key's k-th row after it has arrived (or the input ends), so the key's matches are
reported k rows later than the same matching over the whole input would allow, and are
otherwise that matching. The differential test checks exactly that against an oracle
that knows the whole bounded input: the same rule with every ``NEXT(x.v, n)`` replaced
by ``x.n{n}``, a column holding the key's n-th next row's ``v`` (computed from the
whole input, in the key's processing order). The NEXT rule runs in random batches on
two engines that hand keys to each other and restart from their snapshots
(``support.moving_engines``), and must print what one batch prints. The hand-checked
cases (those taking ``run_epl``) also run on Spark with keys moving:
tests/spark/test_trino_cases_on_spark.py.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.moving_engines import run_moving

from cep.engine.clock import effective_times
from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.table import NULL_SUFFIX, SEQ, SUB
from cep.reference import input_watermark, run_reference
from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA T (id int, value int, ts timestamp) TIMESTAMP ts;\n"


def query(run_epl, text, values, columns):
    """The rows ``text`` outputs over ``values`` (ids from 1), in output order; each
    batch size gives the same rows."""
    events = [dict(id=i, value=v, ts=i * SEC) for i, v in enumerate(values, start=1)]
    out = run_epl(SCHEMA + text, events)
    for size in (1, 2, 3):
        assert run_epl(SCHEMA + text, events, batch_size=size) == out
    return [tuple(r[c] for c in columns) for r in out]


RISE = ("SELECT id, c FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH "
        "PATTERN (A B) DEFINE {define} );")


def test_next_reads_the_row_after_the_candidate_and_the_report_waits_for_it(run_epl):
    # A's condition reads the next row: row 1 (value 1) is an A because row 2 rises;
    # row 1 is fed when row 2 arrives, row 2 when row 3 does: the match on rows 1-2 is
    # reported at row 3 (seq 2), one row later than its rewrite with PREV on B
    values = [1, 2, 3, 1, 5]
    with_next = query(run_epl, RISE.format(define="A AS NEXT(A.value) > A.value"), values,
                      ("seq", "id", "c"))
    assert with_next == [(2, 1, "A"), (2, 2, "B"), ("end", 4, "A"), ("end", 5, "B")]
    with_prev = query(run_epl, RISE.format(define="B AS B.value > PREV(B.value)"), values,
                      ("seq", "id", "c"))
    assert [r[1:] for r in with_prev] == [r[1:] for r in with_next]
    assert [r[0] for r in with_prev] == [1, 1, 4, 4]


def test_next_past_the_key_s_last_row_is_null_at_the_input_s_end(run_epl):
    # NEXT(value, 2) of the last two rows is NULL: only they are Z rows
    text = ("SELECT id FROM T MATCH_RECOGNIZE ( MEASURES Z.id AS i ALL ROWS PER MATCH "
            "PATTERN (Z) DEFINE Z AS NEXT(value, 2) IS NULL );")
    assert query(run_epl, text, [5, 6, 7, 8], ("seq", "id")) == [("end", 3), ("end", 4)]


def test_next_from_another_variable_s_last_row(run_epl):
    # NEXT(A.value) in C's condition is the row after A's last row (inside the match)
    text = ("SELECT id, c FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS c "
            "ALL ROWS PER MATCH PATTERN (A+ B C) DEFINE A AS value < 5, "
            "C AS NEXT(A.value) = 7 );")
    assert query(run_epl, text, [1, 2, 7, 9, 1, 8, 3], ("id", "c")) == [
        (1, "A"), (2, "A"), (3, "B"), (4, "C")]


def test_classifier_past_the_candidate_is_null_but_not_inside_the_match(run_epl):
    # NEXT(CLASSIFIER(A)) names the row after A's last: B's row once B matched, the
    # candidate (labelled C) while it is the row after A; past the candidate NULL. With
    # 'C' the thread without B matches rows 1-2 (held while the preferred thread with B
    # runs, which fails at row 3), then rows 3-4
    text = ("SELECT id, c FROM T MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS c "
            "ALL ROWS PER MATCH PATTERN (A B? C) DEFINE B AS value = 2, "
            "C AS NEXT(CLASSIFIER(A)) = '{label}' AND NEXT(CLASSIFIER()) IS NULL );")
    values = [1, 2, 3, 1, 3]
    assert query(run_epl, text.format(label="B"), values, ("id", "c")) == [
        (1, "A"), (2, "B"), (3, "C")]
    assert query(run_epl, text.format(label="C"), values, ("id", "c")) == [
        (1, "A"), (2, "C"), (3, "A"), (4, "C")]


def test_a_start_is_not_ended_by_the_watermark_while_its_rows_wait(run_epl):
    # key x: rows at 0 s and 3 s (A's NEXT reads the 3 s row: it rises), then key y's
    # rows move the watermark to 20 s, past x's start's WITHIN (5 s); x's 3 s row is
    # still waiting for its own next row, and it is in time for the start: x matches
    # A B, decided when the 3 s row is fed, here at the input's end
    schema = "CREATE SCHEMA P (id int, part string, value int, ts timestamp) TIMESTAMP ts;\n"
    text = ("SELECT id, c FROM P MATCH_RECOGNIZE ( PARTITION BY part MEASURES "
            "CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A B) WITHIN 5 seconds "
            "DEFINE A AS NEXT(A.value) > A.value );")
    rows = [("x", 0, 1), ("x", 3, 2), ("y", 4, 5), ("y", 20, 1)]
    events = [dict(id=i, part=p, value=v, ts=t * SEC) for i, (p, t, v) in enumerate(rows)]
    out = run_epl(schema + text, events)
    for size in (1, 2):
        assert run_epl(schema + text, events, batch_size=size) == out
    assert [(r["seq"], r["key"], r["id"], r["c"]) for r in out] == [
        ("end", "x", 0, "A"), ("end", "x", 1, "B")]
    # a later row of x feeds the 3 s row: the match is reported there
    events.append(dict(id=4, part="x", value=0, ts=21 * SEC))
    out = run_epl(schema + text, events)
    assert [(r["seq"], r["id"], r["c"]) for r in out] == [(4, 0, "A"), (4, 1, "B")]


def test_a_deadline_passed_while_a_row_waits_is_reached_at_the_row_s_feeding(run_epl):
    # x's 0 s row waits for x's next row (NEXT(value) decides whether it is an A); y's
    # rows move the watermark past the start's WITHIN (4 s) at the 10 s row. x's time
    # stays at 0 s while the row waits: x has no later row, so the row is fed at the
    # input's end, and the deadline passes there: the match is reported at the input's
    # end (with the time of x's last row), not at y's 10 s row, which a run in batches
    # could not know to be x's last (the input reported it there, batches of one at
    # y's 11 s row)
    schema = "CREATE SCHEMA P (id int, part string, value int, ts timestamp) TIMESTAMP ts;\n"
    text = ("SELECT id, n FROM P MATCH_RECOGNIZE ( PARTITION BY part MEASURES "
            "FIRST(A.id) AS id, count(*) AS n ONE ROW PER MATCH PATTERN ((A)*) WITHIN 4 sec "
            "DEFINE A AS NEXT(value) IS NULL OR value = 2 );")
    rows = [("x", 0, 2), ("y", 1, 0), ("y", 10, 0), ("y", 11, 0)]
    events = [dict(id=i, part=p, value=v, ts=t * SEC) for i, (p, t, v) in enumerate(rows)]
    out = run_epl(schema + text, events)
    for size in (1, 2, 3):
        assert run_epl(schema + text, events, batch_size=size) == out
    assert [(r["seq"], r["id"], r["n"], r["ts"]) for r in out if r["key"] == "x"] == [
        ("end", 0, 1, "1970-01-01T00:00:00.000Z")]
    # y: empty matches at its rows (NEXT(value) is not NULL), its last row an A
    assert [(r["seq"], r["id"], r["n"]) for r in out if r["key"] == "y"] == [
        (2, None, 0), (3, None, 0), ("end", 3, 1)]


def test_a_rule_with_next_in_define_runs_on_the_interpreter():
    module = compile_text(SCHEMA + "SELECT c FROM T MATCH_RECOGNIZE ( MEASURES "
                          "CLASSIFIER() AS c PATTERN (A B) DEFINE A AS NEXT(A.value) > 1 );")
    operator = Engine(module).operators[0][1]
    assert operator.kernel is None and "NEXT in DEFINE" in operator.interpreted
    assert operator.lookahead == 1


@pytest.mark.parametrize(("define", "message", "at"), [
    ("NEXT(NEXT(A.value)) > 1", "navigates to a field", "NEXT(A"),
    ("PREV(NEXT(A.value)) > 1", "navigates to a field", "NEXT(A"),
    ("sum(NEXT(A.value)) > 1", "NEXT\\(\\) is not allowed in an aggregate", "NEXT"),
    ("NEXT(FINAL LAST(A.value)) > 1", "FINAL is not allowed in DEFINE", "FINAL"),
    ("NEXT(A.value, 0) > 1", "the row offset of next\\(\\) must be from 1", "0)"),
])
def test_misused_next_in_define_is_refused_where_written(define, message, at):
    head = "SELECT v FROM T MATCH_RECOGNIZE ( MEASURES A.value AS v PATTERN (A B) DEFINE A AS "
    text = SCHEMA + head + define + " );"
    with pytest.raises(RuleError, match=message) as error:
        compile_text(text, "r.epl")
    assert (error.value.pos.line, error.value.pos.column) == (2, len(head) + define.find(at) + 1)


# ---- against the matching over the whole bounded input

DIFF_SCHEMA = ("CREATE SCHEMA S (k long, id long, ts timestamp, v double, kind int, n1 double, "
               "n2 double) TIMESTAMP ts{late};\n")
VARS = ("A", "B", "C")
N_ROWS = 50

variable = st.sampled_from(VARS)


def _combine(children: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.lists(children, min_size=2, max_size=3)
    seq = pair.map(" ".join)
    alt = pair.map(lambda items: "(" + " | ".join(items) + ")")
    quantifiers = st.sampled_from(["*", "+", "?", "{1,2}", "{2,}"])
    rep = st.tuples(children, quantifiers, st.booleans()).map(
        lambda x: f"({x[0]}){x[1]}{'' if x[2] else '?'}")
    return st.one_of(seq, alt, rep)


patterns = st.recursive(variable, _combine, max_leaves=5)


def _conditions(var: str) -> st.SearchStrategy:
    """A DEFINE of ``var`` as (with NEXT, the oracle's reading of the same condition)."""
    one, two = [v for v in VARS if v != var]
    same = [f"{var}.v < prev({var}.v)", f"{var}.v > {one}.v", f"{var}.kind = 1", "false"]
    return st.sampled_from([
        None,
        *[(c, c) for c in same],
        (f"NEXT({var}.v) > {var}.v", f"{var}.n1 > {var}.v"),
        (f"NEXT({var}.v, 2) <= {var}.v", f"{var}.n2 <= {var}.v"),
        ("NEXT(v) IS NULL OR kind = 2", "n1 IS NULL OR kind = 2"),
        (f"NEXT({one}.v) > {var}.v", f"{one}.n1 > {var}.v"),
        (f"NEXT(FIRST({two}.v), 2) >= 2", f"FIRST({two}.n2) >= 2"),
        (f"{var}.kind != 0 AND NEXT({var}.v) < 3", f"{var}.kind != 0 AND {var}.n1 < 3"),
        (f"NEXT(CLASSIFIER()) IS NULL AND {var}.v > 1", f"{var}.v > 1"),
    ])


MEASURES = ["MATCH_NUMBER() AS mn", "CLASSIFIER() AS cl", "count(*) AS n", "sum(v) AS s",
            "FIRST({v}.v) AS f{v}", "LAST(v) AS lv", "NEXT(v) AS nx", "FINAL LAST(id) AS li"]
ROWS = ["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
        "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]
SKIPS = ["PAST LAST ROW", "TO NEXT ROW", "TO CURRENT ROW", "TO FIRST {v}", "TO LAST {v}"]


@st.composite
def rule_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A rule whose DEFINEs read NEXT, and the oracle's rule."""
    pattern = draw(patterns)
    used = [v for v in VARS if v in pattern]
    defines: list[tuple[str, str]] = []
    for var in used:
        cond = draw(_conditions(var))
        if cond is not None and all(v in used or f"{v}." not in cond[0] for v in VARS):
            defines.append((f"{var} AS {cond[0]}", f"{var} AS {cond[1]}"))
    if not any("NEXT" in d for d, _ in defines):
        var = used[0]
        defines = [(d, o) for d, o in defines if not d.startswith(var)]
        defines.append((f"{var} AS NEXT({var}.v) >= {var}.v", f"{var} AS {var}.n1 >= {var}.v"))
    picked = draw(st.lists(st.sampled_from(MEASURES), min_size=1, max_size=4, unique=True))
    measures = ", ".join(m.format(v=draw(st.sampled_from(used))) for m in picked)
    skip = draw(st.sampled_from(SKIPS)).format(v=draw(st.sampled_from(used)))
    within = draw(st.sampled_from(["", "WITHIN 4 sec", "WITHIN 9 sec"]))
    rows = draw(st.sampled_from(ROWS))
    text = ("SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES "
            f"{measures} {rows} AFTER MATCH SKIP {skip} PATTERN ({pattern}) {within} "
            "DEFINE {defines} );")
    return (text.replace("{defines}", ", ".join(d for d, _ in defines)),
            text.replace("{defines}", ", ".join(o for _, o in defines)))


def _events(seed: int, late: bool, quiet: tuple[int, int] | None = None) -> dict:
    """Rows of three keys, ties in time, NULLs; with ``late`` out of order by up to
    three seconds (some late under a LATENESS of two). ``quiet`` (key, row): that key
    has no rows from that row on (they go to the next key), so its last rows wait for
    their lookahead while the other keys' rows move the watermark on."""
    rng = np.random.default_rng(seed)
    n = N_ROWS
    ts = np.cumsum(rng.choice([0, 0, 1000, 2000], n))
    if late:
        ts = np.maximum(ts - rng.choice([0, 0, 0, 1000, 3000], n), 0)
    keys = rng.integers(0, 3, n).astype(np.int64)
    if quiet is not None:
        gone = (keys == quiet[0]) & (np.arange(n) >= quiet[1])
        keys[gone] = (quiet[0] + 1) % 3
    return {"S": {
        SEQ: np.arange(n, dtype=np.int64), SUB: np.zeros(n, dtype=np.int64),
        "k": keys, "id": np.arange(n, dtype=np.int64),
        "ts": ts.astype(np.int64) * 1000,
        "v": rng.integers(0, 6, n).astype(np.float64),
        "v" + NULL_SUFFIX: rng.random(n) < 0.05,
        "kind": rng.integers(0, 3, n).astype(np.int64),
    }}


def _with_next_columns(module, inputs: dict) -> dict:
    """The input with ``n1``/``n2``: the v of the key's next / second next row in the
    order its rows are processed (effective time, then arrival), NULL past its last."""
    table = dict(inputs["S"])
    n = len(table[SEQ])
    clock = input_watermark(module, inputs)
    eff = effective_times(table[SEQ], table["ts"], clock)
    order = np.lexsort((table[SEQ], eff, table["k"]))
    for ahead in (1, 2):
        values = np.zeros(n)
        nulls = np.ones(n, dtype=bool)
        for place, row in enumerate(order):
            later = place + ahead
            if later < n and table["k"][order[later]] == table["k"][row]:
                values[row] = table["v"][order[later]]
                nulls[row] = table["v" + NULL_SUFFIX][order[later]]
        table[f"n{ahead}"], table[f"n{ahead}" + NULL_SUFFIX] = values, nulls
    return {"S": table}


def _content(records: list[dict]) -> Counter:
    """The rows, without where they are reported (the NEXT rule reports later)."""
    return Counter(tuple(sorted((c, v) for c, v in r.items() if c not in ("seq", "ts")))
                   for r in records)


#: a key's last row (21 s) waits for a next row that never comes while other keys move the
#: watermark past its start's WITHIN (25 s at seq 39): reported at the input's end, the
#: same with a cut at seq 40 (was seq 39 in one batch, 42 with the cut)
WAITING_PAST_DEADLINE = (
    "SELECT * FROM S MATCH_RECOGNIZE ( PARTITION BY k MEASURES MATCH_NUMBER() AS mn "
    "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ((A)*) WITHIN 4 sec "
    "DEFINE {} );")


@settings(max_examples=200, deadline=None)
@example(pair=(WAITING_PAST_DEADLINE.format("A AS NEXT(v) IS NULL OR kind = 2"),
               WAITING_PAST_DEADLINE.format("A AS n1 IS NULL OR kind = 2")),
         seed=553, late=False, cuts=[40], movers=0, quiet=None)
@given(pair=rule_pairs(), seed=st.integers(0, 10_000), late=st.booleans(),
       cuts=st.lists(st.integers(1, N_ROWS - 1), max_size=6), movers=st.integers(0, 2**20),
       quiet=st.none() | st.tuples(st.integers(0, 2), st.integers(5, N_ROWS - 5)))
def test_next_in_define_matches_as_over_the_whole_input(pair, seed, late, cuts, movers,
                                                        quiet):
    with_next, oracle = (compile_text(DIFF_SCHEMA.format(late=" LATENESS 2 sec" if late
                                                         else "") + text, "mr")
                         for text in pair)
    inputs = _with_next_columns(with_next, _events(seed, late, quiet))
    whole = output_records(run_reference(with_next, inputs))
    assert run_moving(with_next, inputs, N_ROWS, cuts, movers, keys=3) == whole
    assert _content(whole) == _content(output_records(run_reference(oracle, inputs)))
