"""The watermark as a function of the input log (``cep.io.event_time``), its idle Kafka
partitions as the log records them, and what a batch reads off it
(``cep.engine.clock``)."""

from __future__ import annotations

import numpy as np
import pytest

from cep.engine.clock import END_OF_TIME, NO_TIME, Watermark, late_mask, release_seqs
from cep.io import inputlog, kafka_input
from cep.io.event_time import FILES, ClockPiece, EventClock, end_of_log
from cep.io.inputlog import SEQ_SHIFT, InputLog


def _piece(ordinal: int, ts: list[int], source: str = FILES, lo: int = 0,
           idle: bool = False, joins: bool = False) -> ClockPiece:
    seq = (ordinal << SEQ_SHIFT) + lo + np.arange(len(ts), dtype=np.int64)
    return ClockPiece(ordinal, lo, source, idle, seq, np.array(ts, dtype=np.int64), joins)


def _steps(wm: Watermark) -> list[tuple[int, int]]:
    return list(zip((wm.seq & ((1 << SEQ_SHIFT) - 1)).tolist(), wm.wm.tolist(), strict=True))


def test_files_rise_with_the_largest_timestamp_minus_the_lateness() -> None:
    clock = EventClock(lateness_us=2)
    piece = _piece(0, [10, 12, 11, 12, 20, 3, 21])
    wm = clock.advance([piece])
    assert wm.before == NO_TIME
    assert _steps(wm) == [(0, 8), (1, 10), (4, 18), (6, 19)]
    assert clock.state() == {"wm": 19, "maxima": {"": 21}, "idle": []}
    assert late_mask(piece.seq, piece.ts, wm).tolist() == [
        False, False, False, False, False, True, False]


def test_the_watermark_is_the_same_however_the_log_is_cut() -> None:
    ts = np.random.default_rng(3).integers(0, 1000, 300).tolist()
    whole = EventClock(5).advance([_piece(0, ts)])
    clock = EventClock(5)
    seqs, wms = [], []
    for lo, hi in ((0, 7), (7, 150), (150, 151), (151, 300)):
        # a batch of pieces, given out of order: the clock puts them in log order
        mid = (lo + hi) // 2
        part = clock.advance([_piece(0, ts[mid:hi], lo=mid), _piece(0, ts[lo:mid], lo=lo)])
        seqs.append(part.seq)
        wms.append(part.wm)
    assert np.concatenate(seqs).tolist() == whole.seq.tolist()
    assert np.concatenate(wms).tolist() == whole.wm.tolist()
    restored = EventClock(5, clock.state())
    assert restored.state() == clock.state()


def test_kafka_partitions_each_keep_a_clock_and_the_least_one_counts() -> None:
    clock = EventClock(lateness_us=0)
    wm = clock.advance([
        _piece(0, [100, 200], source="p0"),  # only p0 counts so far
        _piece(1, [50, 60], source="p1"),  # p1 joins below p0: no rise (never backwards)
        _piece(2, [300], source="p0"),  # p0 runs ahead: p1 holds the watermark at 200
        _piece(3, [250, 400], source="p1"),  # p1 catches up: min(300, 250), min(300, 400)
    ])
    assert [(s >> SEQ_SHIFT, w) for s, w in zip(wm.seq.tolist(), wm.wm.tolist(),
                                                 strict=True)] == [
        (0, 100), (0, 200), (3, 250), (3, 300)]
    # an event of p1 at 250 after p0 reached 300 was not late: p1's own clock was behind
    assert clock.state()["maxima"] == {"p0": 300, "p1": 400}


def test_an_idle_partition_stops_counting_until_its_next_record() -> None:
    clock = EventClock(lateness_us=0)
    clock.advance([_piece(0, [100], source="p0"), _piece(1, [90], source="p1")])
    assert clock.wm == 100  # p1 joined below p0: the watermark stays
    wm = clock.advance([_piece(2, [], source="p1", idle=True), _piece(3, [150], source="p0")])
    assert wm.wm.tolist() == [150]  # p1 idle: p0 alone moves time
    wm = clock.advance([_piece(4, [120], source="p1"), _piece(5, [160], source="p0")])
    assert wm.wm.tolist() == []  # p1 counts again (at 120): never backwards, held at 150
    assert clock.state() == {"wm": 150, "maxima": {"p0": 160, "p1": 120}, "idle": []}


def test_what_a_batch_reads_off_its_watermark() -> None:
    wm = Watermark(before=10, seq=np.array([5, 8, 9]), wm=np.array([20, 30, 35]))
    assert wm.after(np.array([4, 5, 6, 9, 12])).tolist() == [10, 20, 20, 35, 35]
    assert wm.just_before(np.array([4, 5, 6, 9])).tolist() == [10, 10, 20, 30]
    seqs, due = wm.reach(np.array([15, 20, 31, 36]))
    assert due.tolist() == [True, True, True, False] and seqs[:3].tolist() == [5, 5, 9]
    assert wm.reach_one(36) is None and wm.end == 35
    final = Watermark(10, wm.seq, wm.wm, final=True, end_seq=99)
    assert final.reach_one(36) == 99 and final.end == END_OF_TIME
    assert final.between(6, 9, final=False) == Watermark(20, np.array([8]), np.array([30]),
                                                         False, 99)
    # events wait, with a lateness, until the watermark reaches them
    release, now = release_seqs(np.array([4, 6, 8]), np.array([10, 33, 40]), wm)
    assert release[:2].tolist() == [4, 9] and now.tolist() == [True, True, False]


def test_the_end_of_the_log_is_the_next_segment() -> None:
    assert end_of_log(3) == 3 << SEQ_SHIFT


def test_discovery_marks_a_quiet_partition_idle_while_others_advance(tmp_path, monkeypatch):
    """What the log records decides idleness: a fed partition with nothing new while
    another advanced gets one idle mark (and its stream); no marks when nothing moved,
    none for a partition that never had a record; the pieces hand the mark on once."""
    ends = {"a": 0, "b": 0, "c": 0}

    def fake_segments(sources, known, starting):
        out = []
        for name in sorted(ends):
            path = f"kafka://h/t#{name}"
            start = known.get(path, (0, 1.0))[0]
            if ends[name] > start:
                out.append(("S", path, start, ends[name]))
        return out

    monkeypatch.setattr(kafka_input, "kafka_segments", fake_segments)
    log = InputLog(tmp_path, {"S": "kafka://h/t"}, follow=True, idle_timeout_s=0)
    ends.update(a=5, b=3)
    log.discover(first=True)
    ends.update(a=9)  # b quiet while a advances; c never had a record
    log.discover()
    marks = [s for s in log.segments.values() if s.idle]
    assert [(m.path, m.start, m.end, m.stream) for m in marks] == [("kafka://h/t#b", 3, 3, "S")]
    log.discover()  # nothing advanced: no marks
    ends.update(a=12)
    log.discover()  # b already marked: not again
    assert sum(s.idle for s in log.segments.values()) == 1
    reread = InputLog(tmp_path, {"S": "kafka://h/t"}, follow=True)
    assert reread.segments == log.segments and reread.idle == {"kafka://h/t#b"}
    pieces = list(reread.pieces((0, 0), reread.end_offset()))
    assert [(p.segment.path[-1], p.lo, p.hi) for p in pieces[:4]] == [
        ("a", 0, 0), ("b", 0, 0), ("a", 0, 5), ("b", 0, 3)]  # join marks, then chunks
    assert [(p.segment.idle, p.lo, p.hi) for p in pieces if p.segment.idle] == [(True, 3, 3)]
    later = list(reread.pieces((marks[0].ordinal + 1, 0), reread.end_offset()))
    assert not any(p.segment.idle for p in later)


@pytest.mark.parametrize("lateness", [0, 7])
def test_late_means_below_the_watermark_just_before(lateness: int) -> None:
    ts = [10, 20, 20 - lateness, 19 - lateness, 30]
    piece = _piece(0, ts)
    wm = EventClock(lateness).advance([piece])
    assert late_mask(piece.seq, piece.ts, wm).tolist() == [False, False, False, True, False]


def test_a_joined_partition_holds_time_back_before_its_first_record() -> None:
    """Partition-major chunks (all of p0, then all of p1) after both joined: p0 running
    ahead does not make p1's events late; time passes as p1 catches up."""
    clock = EventClock(lateness_us=0)
    wm = clock.advance([
        _piece(0, [], source="p0", joins=True), _piece(1, [], source="p1", joins=True),
        _piece(2, [100, 200, 300], source="p0"),  # p1 holds the watermark at no time
        _piece(3, [50, 150, 250, 350], source="p1")])
    assert _steps(wm) == [(0, 50), (1, 150), (2, 250), (3, 300)]
    p1 = _piece(3, [50, 150, 250, 350], source="p1")
    assert not late_mask(p1.seq, p1.ts, wm).any()
    # an idle partition's next records join again: held at its last time until they come
    clock.advance([_piece(4, [], source="p1", idle=True), _piece(5, [400], source="p0")])
    assert clock.wm == 400
    wm = clock.advance([_piece(6, [], source="p1", joins=True), _piece(7, [500], source="p0"),
                        _piece(8, [450], source="p1")])
    assert _steps(wm) == [(0, 450)] and wm.seq[0] >> SEQ_SHIFT == 8
    state = clock.state()
    assert EventClock(0, state).state() == state
    assert ClockPiece.from_plain(_piece(6, [], "p1", joins=True).plain()).joins


def test_a_partition_goes_idle_only_after_the_idle_timeout(tmp_path, monkeypatch):
    """``idle_timeout_s``: a partition quiet at a discovery is marked idle only once it
    has had nothing new for that long (wall-clock time of the discoveries)."""
    ends = {"a": 0, "b": 0}

    def fake_segments(sources, known, starting):
        return [("S", f"kafka://h/t#{n}", known.get(f"kafka://h/t#{n}", (0, 1.0))[0], ends[n])
                for n in sorted(ends) if ends[n] > known.get(f"kafka://h/t#{n}", (0, 1.0))[0]]

    monkeypatch.setattr(kafka_input, "kafka_segments", fake_segments)
    now = [100.0]
    monkeypatch.setattr(inputlog.time, "monotonic", lambda: now[0])
    log = InputLog(tmp_path, {"S": "kafka://h/t"}, follow=True, idle_timeout_s=2.0)
    ends.update(a=5, b=3)
    log.discover(first=True)
    for step, a_end in ((1.5, 7), (0.4, 8)):  # b quiet for 1.5 s, then 1.9 s: held
        now[0] += step
        ends.update(a=a_end)
        log.discover()
        assert not any(s.idle for s in log.segments.values())
    now[0] += 0.1  # 2.0 s: idle
    ends.update(a=9)
    log.discover()
    assert [s.path[-1] for s in log.segments.values() if s.idle] == ["b"]
    ends.update(b=4)  # b back: a join mark before its chunk
    log.discover()
    last = [log.segments[o] for o in sorted(log.segments)][-2:]
    assert [(s.path[-1], s.start, s.end, s.idle) for s in last] == [
        ("b", 3, 3, False), ("b", 3, 4, False)]
