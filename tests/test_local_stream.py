"""The local runner streams (issue 50): read a chunk at a time, run batch by batch, write
each batch's rows as they come. Oracle: the whole-input reference run as the local runner
did it before it streamed (``load_inputs`` reads the whole input, ``reference_run`` runs
it with the watermark through the whole log, the output and the dead letters written at
the end). The two must agree byte for byte on the output file, the dead-letter file, the
metrics and the totals, over Hypothesis-drawn inputs with events out of order (late
events, under both policies), one or two input streams, timers that fire on the
watermark and at the end of the input, several rules and an INSERT INTO chain, bad
and blank lines, strings that are empty or not ASCII, with the chunks and the grid
made tiny so that a run of a few dozen events is cut into many chunks, and with and
without ``--batch-size``.

Two metrics are left out: ``seconds``, and the engines' ``state_bytes``, which may
differ by a NULL mask: a table read whole has one for a field that is NULL anywhere in
the input, a chunk only where it is NULL in the chunk (the events and the output are
the same; the state holds a mask of False or none)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.beats import RULES

import cep.io.input_chunks as input_chunks
import cep.local_runner as local_runner
from cep.engine.output import output_lines, output_records
from cep.io.deadletter import DeadLetter
from cep.io.inputs import load_inputs
from cep.io.late_letters import add_late_letters
from cep.reference import log_watermark, reference_run
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text

SEC = 1000
CHAIN = """
@Name('each')
SELECT device, v FROM Beat(v > 2);
INSERT INTO Loud SELECT device, ts, v FROM Beat(v > 6);
@Name('loud_pairs')
SELECT a.v AS first, b.v AS second FROM PATTERN [every a=Loud -> b=Loud WITHIN 30 sec]
PARTITION BY device;
"""
MARKS = """
CREATE SCHEMA Mark (device string, ts timestamp) TIMESTAMP ts;
@Name('marked')
SELECT a.v AS v, b.ts AS marked FROM PATTERN [every a=Beat -> b=Mark WITHIN 1 min]
PARTITION BY device;
"""
DEVICES = ["d1", "d2", "", "é☃", "x" * 40, "日本"]


@st.composite
def beat_lines(draw) -> list[str]:
    """JSON lines of heartbeats moving forward in time with jitter back (late events
    when the jitter is beyond the lateness), some null values, some bad and blank
    lines."""
    lines, now = [], 0
    for _ in range(draw(st.integers(0, 40))):
        now += draw(st.integers(0, 40)) * SEC
        kind = draw(st.sampled_from(["ok"] * 12 + ["back", "null", "bad", "blank"]))
        ts = now - draw(st.integers(1, 120)) * SEC if kind == "back" else now
        event = {"device": draw(st.sampled_from(DEVICES)), "ts": ts,
                 "v": None if kind == "null" else draw(st.integers(0, 9))}
        if kind == "bad":
            lines.append('{"device": "d1", "ts": "not a time", "v": 1}')
        elif kind == "blank":
            lines.append("")
        else:
            lines.append(json.dumps(event, ensure_ascii=draw(st.booleans())))
    return lines


def whole_input_run(module, specs: list[str], out: Path, dead: Path, batch_size: int | None,
                    late: str) -> tuple[list[dict], dict]:
    """The oracle: the whole input read, run and written at the end (the local runner
    before it streamed)."""
    loaded = load_inputs(module, specs, str(dead))
    clock = log_watermark(module, loaded.clock, loaded.end_seq)
    ref = reference_run(module, loaded.tables, batch_size, clock, late, figures=True)
    n_late = len(ref.late["seq"])
    if n_late and late == "drop":
        with DeadLetter(str(dead), append=True) as letters:
            add_late_letters(letters, module, loaded.segments, ref.late)
    out.write_text(output_lines(ref.output), encoding="utf-8")
    totals = {"events_in": loaded.accepted, "events_out": len(ref.output["seq"]),
              "dead_lettered": loaded.rejected, "udf_failures": 0,
              "blank_lines": loaded.skipped, "late_events": n_late,
              "late_dropped": n_late if late == "drop" else 0}
    return ref.batches, totals


def _no_seconds(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("seconds", "state_bytes")}
            for r in rows]


@functools.lru_cache(maxsize=4)
def _module(lateness: str, marks: bool):
    rules = RULES + CHAIN + (MARKS if marks else "")
    return compile_text(rules.replace("TIMESTAMP ts;", f"TIMESTAMP ts{lateness};"), "<test>")


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(lines=beat_lines(), marks=st.none() | beat_lines(),
       lateness=st.sampled_from(["", " LATENESS 20 sec"]),
       late=st.sampled_from(["process", "drop"]),
       batch_size=st.one_of(st.none(), st.integers(1, 15)),
       budget=st.integers(1, 12), grid=st.integers(16, 300))
def test_the_streamed_local_run_is_the_whole_input_run_byte_for_byte(
        tmp_path, lines, marks, lateness, late, batch_size, budget, grid):
    module = _module(lateness, marks is not None)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    specs = [str(path)]
    if marks is not None:  # a second input stream, its file after the first in the log
        (tmp_path / "marks.jsonl").write_text("".join(line + "\n" for line in marks),
                                              encoding="utf-8")
        specs = [f"Beat={path}", f"Mark={tmp_path / 'marks.jsonl'}"]
    want_out, want_dead = tmp_path / "want.jsonl", tmp_path / "want-dead.jsonl"
    got_out, got_dead = tmp_path / "got.jsonl", tmp_path / "got-dead.jsonl"
    for stale in (want_out, want_dead, got_out, got_dead):
        stale.unlink(missing_ok=True)
    metrics, totals = whole_input_run(module, specs, want_out, want_dead, batch_size, late)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_chunks, "CHUNK_RECORDS", budget)
        patch.setattr(input_chunks, "grid_step", lambda segment: grid)
        result = run(module, RunConfig(inputs=tuple(specs), runner="local", late=late,
                                       batch_size=batch_size, output=Output(str(got_out)),
                                       dead_letter=str(got_dead)))
    assert got_out.read_bytes() == want_out.read_bytes()
    assert _read(got_dead) == _read(want_dead)
    assert _no_seconds(result.metrics) == _no_seconds(metrics)
    assert result.totals == totals
    events = sum(1 for line in lines if line.startswith("{") and "not a time" not in line)
    if events:  # 'each' or the timers' rules make rows from every drawn input
        assert result.totals["events_out"] > 0


def test_collected_events_and_rows_per_rule_are_the_whole_input_runs(tmp_path):
    """Oracle: the whole-input reference run's records and rows per rule, for a run
    that hands its events back (kept whole: the one exception besides Parquet and a
    ground truth)."""
    module = compile_text(RULES + CHAIN, "<test>")
    events = [{"device": DEVICES[i % 4], "ts": i * 7 * SEC, "v": i % 10}
              for i in range(300)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    ref = reference_run(module, load_inputs(module, [str(path)], None).tables)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_chunks, "CHUNK_RECORDS", 16)
        patch.setattr(input_chunks, "grid_step", lambda segment: 100)
        result = run(module, RunConfig(inputs=(str(path),), runner="local",
                                       output=Output(collect=True)))
    want = output_records(ref.output)
    assert len(want) > 100
    assert result.records == want
    rules = list(dict.fromkeys(r["rule"] for r in want))
    assert list(result.outputs_per_rule) == rules
    assert result.outputs_per_rule == {r: sum(w["rule"] == r for w in want) for r in rules}


def _run_failing_at(tmp_path, monkeypatch, owner, name: str, call: int,
                    error: Exception) -> None:
    """A local run over 50 events in chunks of 5 whose ``owner.name`` raises ``error``
    at its ``call``-th call: the run raises it, and leaves neither the output nor its
    temporary file."""
    module = compile_text(RULES, "<test>")
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"device": "d", "ts": i * SEC, "v": 1}) + "\n"
                            for i in range(50)), encoding="utf-8")
    calls = iter(range(1000))
    real = getattr(owner, name)

    def failing(*args, **kwargs):
        if next(calls) == call:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)
    monkeypatch.setattr(input_chunks, "CHUNK_RECORDS", 5)
    monkeypatch.setattr(input_chunks, "grid_step", lambda segment: 64)
    out = tmp_path / "out.jsonl"
    with pytest.raises(type(error), match=str(error)):
        run(module, RunConfig(inputs=(str(path),), runner="local", output=Output(str(out))))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_failed_run_leaves_no_output_file(tmp_path, monkeypatch):
    """A run that fails half way leaves neither the output nor its temporary file (the
    whole-input runner wrote nothing before the end)."""
    _run_failing_at(tmp_path, monkeypatch, local_runner, "run_stages", 2,
                    RuntimeError("boom"))


def test_a_failing_read_surfaces_in_the_run_and_leaves_no_output_file(tmp_path, monkeypatch):
    """The chunks are read in a thread of their own (``input_chunks.read_ahead``): an
    exception of the reader is raised by the run, as it was when the run read in its own
    thread, and the output's temporary file goes."""
    _run_failing_at(tmp_path, monkeypatch, input_chunks, "read_group", 3,
                    OSError("disk gone"))


def test_read_ahead_keeps_the_order_and_reads_one_chunk_ahead_at_most():
    """Oracle: the source iterated in the caller's thread. The chunks come in the
    source's order; when the caller has taken k chunks the source has been asked for
    k + 1 at most (one being read ahead); a caller that stops early waits for the read
    under way, and the source is closed."""
    asked: list[int] = []
    closed: list[bool] = []

    def source():
        try:
            for i in range(10):
                asked.append(i)
                yield i
        finally:
            closed.append(True)

    taken = []
    with input_chunks.read_ahead(source()) as chunks:
        for chunk in chunks:
            taken.append(chunk)
            assert len(asked) <= len(taken) + 1
    assert taken == list(range(10)) and closed == [True]
    asked.clear()
    closed.clear()
    with input_chunks.read_ahead(source()) as chunks:
        assert next(iter(chunks)) == 0
    assert len(asked) <= 2 and closed == [True]


def test_read_ahead_raises_the_readers_exception_at_its_chunk():
    """An exception in the reading thread reaches the caller after the chunks read
    before it, as it would without the thread."""
    def source():
        yield "a"
        yield "b"
        raise ValueError("bad segment")

    taken = []
    with pytest.raises(ValueError, match="bad segment"), \
            input_chunks.read_ahead(source()) as chunks:
        for chunk in chunks:
            taken.append(chunk)
    assert taken == ["a", "b"]


UNREAD_SCHEMA = ("CREATE SCHEMA Rec (k string, ts timestamp, v double, s string, n int, "
                 "b boolean, t2 timestamp) TIMESTAMP ts;\n")
UNREAD_RULES = [  # each reads some of Rec's fields; the reader checks the others
    "@Name('w') SELECT k, avg(v) AS a FROM Rec#groupwin(k)#length(3);",
    "@Name('d') SELECT s, v FROM Rec(v > 2);",
    "@Name('p') SELECT a.n AS n, b.b AS bb FROM PATTERN [every a=Rec -> b=Rec] "
    "PARTITION BY k;",
    "@Name('star') SELECT * FROM Rec(k = 'a');",
    "@Name('mr') SELECT * FROM Rec MATCH_RECOGNIZE (PARTITION BY k MEASURES A.t2 AS t "
    "PATTERN (A B) DEFINE B AS B.v > A.v);",
]
#: values of the fields no rule may read, good and bad: a bad one rejects the record
UNREAD_VALUES = {
    "s": ["x", "", "é☃", None, 5, "日本" * 30],
    "n": [1, -7, None, "x", 1.5, 2**40],
    "b": [True, False, None, "yes"],
    "t2": [0, "2024-01-01T00:00:00Z", None, "garbage"],
}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(rules=st.lists(st.sampled_from(UNREAD_RULES), min_size=1, max_size=3, unique=True),
       rows=st.lists(st.fixed_dictionaries({
           "k": st.sampled_from(["a", "b", "", "é"]), "v": st.integers(0, 5) | st.none(),
           **{f: st.sampled_from(vs) | st.just("ABSENT") for f, vs in UNREAD_VALUES.items()}}),
           max_size=40),
       csv=st.booleans(), budget=st.integers(1, 12))
def test_fields_no_rule_reads_are_checked_not_kept(tmp_path, rules, rows, csv, budget):
    """The local runner reads only the fields some rule reads into its tables
    (``grammar.field_reads.reading_module``) and checks the others. Oracle: the
    whole-input run over every field (``load_inputs`` of the whole module): the same
    output and the same dead letters (a bad value in a field no rule reads still
    rejects its record), in JSON lines and CSV."""
    _same_as_every_field(tmp_path, rules, rows, csv, budget)


@pytest.mark.parametrize("csv", [False, True])
def test_fields_no_rule_reads_a_drawn_case_that_has_output_and_dead_letters(tmp_path, csv):
    """The property above on a case that is not empty on both sides: rows out of two
    rules that read three of Rec's seven fields, and records rejected for a bad value
    in a field neither reads."""
    rows = [{"k": "ab"[i % 2], "v": i % 6, "s": "é☃" if i % 3 else None,
             "n": "x" if i % 7 == 3 else i, "b": i % 2 == 0, "t2": "garbage" if i == 5 else i}
            for i in range(40)]
    totals = _same_as_every_field(tmp_path, UNREAD_RULES[:2], rows, csv, 3)
    assert totals["events_out"] > 20 and totals["dead_lettered"] >= 6


def _same_as_every_field(tmp_path, rules, rows, csv, budget) -> dict:
    """The streamed run against the whole-input run over every field; its totals."""
    module = compile_text(UNREAD_SCHEMA + "\n".join(rules), "<test>")
    events = [{"ts": i * SEC, **{f: v for f, v in row.items() if v != "ABSENT"}}
              for i, row in enumerate(rows)]
    if csv:
        path = tmp_path / "in.csv"
        names = ["k", "ts", "v", *UNREAD_VALUES]
        path.write_text(",".join(names) + "\n" + "".join(
            ",".join("" if e.get(f) is None else json.dumps(e[f]) if isinstance(e[f], str)
                     and ("," in e[f] or not e[f]) else str(e[f]).lower()
                     if isinstance(e[f], bool) else str(e[f]) for f in names) + "\n"
            for e in events), encoding="utf-8")
    else:
        path = tmp_path / "in.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    want_out, want_dead = tmp_path / "want.jsonl", tmp_path / "want-dead.jsonl"
    got_out, got_dead = tmp_path / "got.jsonl", tmp_path / "got-dead.jsonl"
    for stale in (want_out, want_dead, got_out, got_dead):
        stale.unlink(missing_ok=True)
    _, totals = whole_input_run(module, [str(path)], want_out, want_dead, None,
                                "process")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_chunks, "CHUNK_RECORDS", budget)
        patch.setattr(input_chunks, "grid_step", lambda segment: 64)
        result = run(module, RunConfig(inputs=(str(path),), runner="local",
                                       output=Output(str(got_out)),
                                       dead_letter=str(got_dead)))
    assert got_out.read_bytes() == want_out.read_bytes()
    assert _read(got_dead) == _read(want_dead)
    assert result.totals == totals
    return totals
