"""The figures each batch's metrics carry for a live view: input read and behind, the
latest events per rule, dead letters by kind with the latest reasons; and the progress
line a batch prints. Built from the files a run writes (an input log, Spark's offset
files, dead-letter files) and from metrics, no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.io.deadletter import DeadLetter
from cep.io.deadletter_summary import LATEST_REASONS, DeadLetterSummary
from cep.io.inputlog import InputLog
from cep.spark.engines.batch import input_ended, rule_scores
from cep.spark.inputs.progress import InputProgress
from cep.spark.output.latest import LATEST_KEPT, LINE_CHARS, engine_latest, merge_latest
from cep.spark.output.sink import progress_line


def _offsets(run: Path, batch: int, seg: int, pos: int) -> None:
    """Spark's offset file of a batch: a version line, metadata, then cep's offset."""
    folder = run / "checkpoint" / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(batch)).write_text(
        'v1\n{"batchWatermarkMs":0}\n' + json.dumps({"n": batch + 1, "seg": seg, "pos": pos}))


def test_input_progress_counts_read_and_behind_from_the_log_and_offsets(tmp_path):
    run, folder = tmp_path / "run", tmp_path / "in"
    folder.mkdir()
    line = json.dumps({"sensor": "s1", "ts": 1, "temp": 20.0}) + "\n"
    (folder / "a.jsonl").write_text(line * 10)
    sources = {"Reading": str(folder)}
    log = InputLog(run / "input", sources, follow=True)
    log.discover(first=True)
    progress = InputProgress(run, sources)
    size = len(line) * 10
    _offsets(run, 0, 0, 4 * len(line))  # batch 0 read 4 lines of the file
    metrics: dict = {}
    progress(0, [], metrics)
    [row] = metrics["input"]["sources"]
    assert row == {"stream": "Reading", "source": str(folder), "kind": "json", "unit": "bytes",
                   "read": 4 * len(line), "behind": size - 4 * len(line),
                   "read_records": 4, "behind_records": 6, "arrived_records": 0,
                   "last_file": str(folder / "a.jsonl")}
    with open(folder / "a.jsonl", "a") as grow:  # after the listing: arrived, not logged
        grow.write(line * 7)
    progress(0, [], metrics)
    [row] = metrics["input"]["sources"]
    assert (row["behind_records"], row["arrived_records"]) == (6, 7)
    (folder / "b.jsonl").write_text(line * 5)  # lands; the planner logs it and a's growth
    log.discover()
    _offsets(run, 1, 2, len(line) * 2)  # batch 1: the rest of a, two lines of b
    progress(1, [], metrics)
    [row] = metrics["input"]["sources"]
    assert (row["read_records"], row["behind_records"]) == (19, 3)
    assert row["last_file"] == str(folder / "b.jsonl")
    assert row["arrived_records"] == 0, "the newest file is all logged"
    assert metrics["input"]["position"] == [2, len(line) * 2]
    assert list(progress._unread) == [2], "a wholly read segment is folded, not kept"


def test_input_progress_without_an_offset_file_reports_what_is_logged(tmp_path):
    run = tmp_path / "run"
    InputLog(run / "input", {"Tweet": "tweets:n=500"}, follow=False).discover(first=True)
    metrics: dict = {}
    InputProgress(run, {"Tweet": "tweets:n=500"})(0, [], metrics)
    [row] = metrics["input"]["sources"]
    assert metrics["input"]["position"] is None
    assert (row["unit"], row["read"], row["behind"]) == ("rows", 0, 500)
    assert "last_file" not in row, "a generator has no files"


def test_dead_letter_summary_counts_kinds_and_keeps_the_latest_reasons(tmp_path):
    path = tmp_path / "dead.jsonl"
    with DeadLetter(str(path)) as dead:
        for i in range(7):
            dead.add("in.jsonl", i * 10, "not_json", f"not JSON at {i}", '{"kind": "wrong_type"')
        dead.add("in.jsonl", 99, "bad_timestamp", 'field \'ts\': "<script>"', "x" * 500)
    summary = DeadLetterSummary()
    text = path.read_bytes()
    assert summary.observe(text) is text
    got = summary.metrics()
    # the record's own text names another kind: only the real field is counted
    assert got["dead_letter_kinds"] == {"not_json": 7, "bad_timestamp": 1}
    latest = got["dead_letter_latest"]
    assert len(latest) == LATEST_REASONS
    assert latest[-1]["reason"] == 'field \'ts\': "<script>"'
    assert latest[-1]["offset"] == 99 and len(latest[-1]["record"]) == 200
    assert DeadLetterSummary().metrics() == {}


def _events(rule: str, seqs: list[int], text: str = "x") -> pd.DataFrame:
    return pd.DataFrame({"rule": [rule] * len(seqs),
                         "key": [json.dumps(f"k{s}") for s in seqs],
                         "seq": seqs, "ts": [0] * len(seqs), "ts_null": [True] * len(seqs),
                         "payload": [json.dumps({"t": text}) for _ in seqs]})


def test_latest_events_per_rule_merged_over_engines_by_sequence_number():
    engine0 = engine_latest(pd.concat([_events("a", [5, 1, 9, 7]), _events("b", [2])]))
    engine1 = engine_latest(_events("a", [8, 3], "y" * 2000))
    assert [seq for seq, _ in engine0["a"]] == [5, 7, 9]
    merged = merge_latest([{"latest": engine0}, {"latest": engine1}, {}])
    assert len(merged["a"]) == LATEST_KEPT
    assert [json.loads(line)["seq"] for line in merged["a"][::2]] == [7, 9]
    assert len(merged["a"][1]) == LINE_CHARS and merged["a"][1].endswith("…")
    assert json.loads(merged["b"][0])["key"] == "k2"
    assert engine_latest(_events("a", [])) == {}


def _batch(batch: int, events_in: int, events_out: int, rows: list[int], rstd: float,
           ended: bool) -> dict:
    return {"batch": batch, "events_in": events_in, "events_out": events_out,
            "rows_per_engine": rows, "rstd": rstd, "input_ended": ended}


def test_a_batch_that_reads_events_shows_its_share_of_the_input_rate_and_loads():
    line = progress_line(_batch(0, 200_000, 41, [40_000, 39_000, 41_000, 40_500, 39_500],
                                1.8, False), 200_000, 201_000, 10_143.4)
    assert line == ("batch 0: 200,000 events (~99%), 10,143 ev/s, 41 out, RSTD 1.8%, "
                    "engines [40,000 39,000 41,000 40,500 39,500]")
    # the input's size is an estimate: never 100% before the input is read
    assert "(~99%)" in progress_line(_batch(0, 9, 0, [9], 0.0, False), 250, 200, 1.0)
    assert progress_line(_batch(0, 9, 0, [9], 0.0, False), 9, None, 1.0).startswith(
        "batch 0: 9 events, 1 ev/s")  # no size known: no share


def test_the_end_of_input_batch_says_time_passed_what_it_fired_and_100_percent():
    """It reads no event: before, its line read `200,000 events (~99%) ... 0 out, RSTD
    0.0%, engines [0 0 0 0 0]`, as if nothing had happened."""
    line = progress_line(_batch(1, 0, 12, [0, 0, 0, 0, 0], 0.0, True), 200_000, 201_000,
                         10_143.0)
    assert line == ("batch 1: end of the input, all event time passed: 12 out; "
                    "200,000 events (100%), 10,143 ev/s")
    # a generator's count is no estimate, but a file's is: 100% either way, or with none
    assert "(100%)" in progress_line(_batch(1, 0, 0, [0], 0.0, True), 90, 100, 1.0)
    assert "(100%)" in progress_line(_batch(1, 0, 0, [0], 0.0, True), 90, None, 1.0)
    # a batch that read the last events and ended the input (not one cep plans today)
    assert progress_line(_batch(1, 5, 3, [5], 0.0, True), 95, 100, 1.0) == (
        "batch 1: 95 events (100%), 1 ev/s, 3 out, RSTD 0.0%, engines [5]")


def test_input_ended_is_read_from_the_input_tasks_time_info():
    """An engine learns that the input ended from its input tasks (``input_tasks``): a
    later stage, which gets the stage before's watermark instead, never says so."""
    assert input_ended([("pieces", [], False, 0), ("pieces", [], True, 1 << 36)])
    assert not input_ended([("pieces", [], False, 0)])
    assert not input_ended([("watermark", None)])
    assert not input_ended([])


def _latest_by_groupby(frame: pd.DataFrame) -> dict[str, list]:
    """The pandas form engine_latest replaced (a groupby and nlargest per rule): the oracle."""
    from cep.spark.output.event_parts import event_lines
    from cep.spark.output.latest import _cut

    out: dict[str, list] = {}
    for rule, rows in frame.groupby("rule", sort=False):
        tail = rows.nlargest(LATEST_KEPT, "seq")
        lines = event_lines(tail).splitlines()
        out[str(rule)] = [[int(seq), _cut(line)] for seq, line
                          in zip(sorted(tail["seq"].tolist()), lines, strict=True)]
    return out


def _scores_by_groupby(frame: pd.DataFrame, truth) -> dict[str, list[int]]:
    hits = (np.isin(frame["seq"].to_numpy(), truth) if truth is not None
            else np.zeros(len(frame), dtype=bool))
    grouped = pd.DataFrame({"rule": frame["rule"].to_numpy(dtype=object), "hit": hits}
                           ).groupby("rule", sort=False)["hit"].agg(["size", "sum"])
    return {str(rule): [int(n), int(h)] for rule, n, h in grouped.itertuples()}


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 6),
                               st.text(max_size=3)), max_size=25),
       truth=st.none() | st.lists(st.integers(0, 6), max_size=4))
def test_latest_and_scores_equal_the_groupby_forms_they_replaced(rows, truth):
    """Ties in seq, rules interleaved, any payload: the same events in the same order."""
    frame = pd.DataFrame({"rule": [r for r, _, _ in rows],
                          "key": [json.dumps(f"k{i}") for i in range(len(rows))],
                          "seq": pd.array([s for _, s, _ in rows], dtype="int64"),
                          "ts": [1_000 * s for _, s, _ in rows],
                          "ts_null": [s % 2 == 0 for _, s, _ in rows],
                          "payload": [json.dumps({"t": t}) for _, _, t in rows]})
    assert engine_latest(frame) == _latest_by_groupby(frame)
    known = None if truth is None else np.array(truth, dtype=np.int64)
    assert rule_scores(frame, known) == (_scores_by_groupby(frame, known)
                                         if len(frame) else {})
